"""Tools the agent can call: the built-in memory tools plus any a program registers.

A tool is a name, a description, a JSON-schema for its arguments and an async handler
that returns text. A failing tool never ends the agent's step: its error becomes the
tool's result, so the model can see it and react.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from aether.checkpoints.manager import Checkpoints
from aether.errors import AetherError, InvalidOperationError
from aether.memory.daily import DailyLog
from aether.memory.layer import MemoryLayer
from aether.memory.longterm import LongTermMemory
from aether.memory.scratchpad import Scratchpads
from aether.memory.search import MemorySearch
from aether.runtime.llm import ToolCall, parse_arguments

log = structlog.get_logger(__name__)

Handler = Callable[[dict[str, Any]], Awaitable[str]]
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


@dataclass(frozen=True)
class Tool:
    """One callable tool."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler

    def schema(self) -> dict[str, Any]:
        """The tool as the chat API declares it."""
        function = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ToolRun:
    """One executed call."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    output: str
    success: bool
    duration_ms: float


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    """Required properties present, declared properties of the declared JSON type.

    Raises:
        InvalidOperationError: naming the first problem.
    """
    props = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in arguments:
            raise InvalidOperationError(f"missing required argument {name!r}")
    for name, value in arguments.items():
        expected = _JSON_TYPES.get(str(props.get(name, {}).get("type", "")))
        if expected is None:
            continue
        if isinstance(value, bool) and bool not in expected:
            raise InvalidOperationError(f"argument {name!r} must be {props[name]['type']}")
        if not isinstance(value, expected):
            raise InvalidOperationError(f"argument {name!r} must be {props[name]['type']}")


class Toolbox:
    """The tools of one agent, by name."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> None:
        """Add a tool.

        Raises:
            InvalidOperationError: a bad or taken name, or parameters that are not an object
                schema.
        """
        if not _NAME.match(tool.name):
            raise InvalidOperationError(f"tool name {tool.name[:70]!r}: 1-64 of A-Z a-z 0-9 _ -")
        if tool.name in self._tools:
            raise InvalidOperationError(f"a tool named {tool.name!r} is already registered")
        if tool.parameters.get("type") != "object":
            raise InvalidOperationError("tool parameters must be a JSON schema of type object")
        self._tools[tool.name] = tool

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's declaration."""
        return [t.schema() for t in self._tools.values()]

    async def run(self, call: ToolCall) -> ToolRun:
        """Execute one call; errors become the result's text (``success=False``)."""
        start = time.perf_counter()
        arguments: dict[str, Any] = {}
        tool = self._tools.get(call.name)
        try:
            if tool is None:
                raise InvalidOperationError(f"unknown tool {call.name[:70]!r}")
            arguments = parse_arguments(call.arguments)
            check_arguments(tool.parameters, arguments)
            output, success = await tool.handler(arguments), True
        except AetherError as e:
            output, success = f"error: {e}", False
        except Exception as e:
            log.exception("tool raised", tool=call.name)
            output, success = f"error: {type(e).__name__}: {e}", False
        ms = (time.perf_counter() - start) * 1000
        return ToolRun(call.id, call.name, arguments, output, success, ms)


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def builtin_tools(
    layer: MemoryLayer, checkpoints: Checkpoints, session: str, search: MemorySearch
) -> list[Tool]:
    """The memory tools every agent has: search, log, remember, scratchpad, checkpoint."""

    async def memory_search(args: dict[str, Any]) -> str:
        hits = await search.search(
            str(args["query"]), limit=int(args.get("limit", 5)), kind=args.get("kind")
        )
        if not hits:
            return "no memories found"
        return "\n".join(f"[{h.doc.get('kind')} {h.doc.get('id')}] {h.content}" for h in hits)

    async def memory_log(args: dict[str, Any]) -> str:
        doc = await DailyLog(layer).log(
            str(args["content"]), source="agent", tags=args.get("tags"), session=session
        )
        return f"logged {doc['id']}"

    async def memory_remember(args: dict[str, Any]) -> str:
        doc = await LongTermMemory(layer).add(str(args["content"]), tags=args.get("tags"))
        return f"remembered {doc['id']}"

    async def scratchpad(args: dict[str, Any]) -> str:
        pads = Scratchpads(layer)
        action, pad = args["action"], str(args["id"])
        if action == "set":
            if "value" not in args:
                raise InvalidOperationError("scratchpad set needs a value")
            await pads.set(pad, str(args["value"]), args.get("ttl_s"))
            return f"scratchpad {pad} set"
        if action == "get":
            value = await pads.get(pad)
            return value if value is not None else f"scratchpad {pad} is empty or expired"
        raise InvalidOperationError("scratchpad action must be get or set")

    async def checkpoint(args: dict[str, Any]) -> str:
        cp = await checkpoints.create(
            label=str(args.get("label", ""))[:200], reason="agent", actor="agent"
        )
        return f"checkpoint {cp.id} created"

    tags = {"type": "array", "items": {"type": "string"}, "description": "optional tags"}
    return [
        Tool(
            "memory_search",
            "Search your memory (daily logs, long-term memories, beliefs).",
            _object(
                {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "description": "1-50, default 5"},
                    "kind": {"type": "string", "enum": ["daily", "longterm", "belief"]},
                },
                ["query"],
            ),
            memory_search,
        ),
        Tool(
            "memory_log",
            "Write a note to today's log.",
            _object({"content": {"type": "string"}, "tags": tags}, ["content"]),
            memory_log,
        ),
        Tool(
            "memory_remember",
            "Store a lasting fact or lesson in long-term memory.",
            _object({"content": {"type": "string"}, "tags": tags}, ["content"]),
            memory_remember,
        ),
        Tool(
            "scratchpad",
            "Get or set a short-lived working note (expires, default 1 h).",
            _object(
                {
                    "action": {"type": "string", "enum": ["get", "set"]},
                    "id": {"type": "string"},
                    "value": {"type": "string"},
                    "ttl_s": {"type": "integer"},
                },
                ["action", "id"],
            ),
            scratchpad,
        ),
        Tool(
            "checkpoint",
            "Checkpoint your state now (it can be rolled back to later).",
            _object({"label": {"type": "string"}}, []),
            checkpoint,
        ),
    ]

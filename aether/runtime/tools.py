"""Tools the agent can call: the built-in memory tools plus any a program registers.

A tool is a name, a description, a JSON-schema for its arguments and an async handler
that returns text. A failing tool never ends the agent's step: its error becomes the
tool's result, so the model can see it and react.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import structlog

from aether.checkpoints.manager import Checkpoints
from aether.errors import AetherError, InvalidOperationError
from aether.llm import ToolFunction, ToolSchema
from aether.memory.beliefs import Beliefs
from aether.memory.daily import DailyLog
from aether.memory.layer import MemoryLayer
from aether.memory.longterm import LongTermMemory
from aether.memory.scratchpad import Scratchpads
from aether.memory.search import MemorySearch
from aether.runtime.llm import ToolCall, parse_arguments

log = structlog.get_logger(__name__)

ToolArguments = dict[str, object]
"""A call's arguments, parsed from JSON and checked against the tool's schema."""
Handler = Callable[[ToolArguments], Awaitable[str]]
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
    parameters: dict[str, object]
    handler: Handler

    def schema(self) -> ToolSchema:
        """The tool as the chat API declares it."""
        function = ToolFunction(
            name=self.name, description=self.description, parameters=self.parameters
        )
        return ToolSchema(type="function", function=function)


@dataclass(frozen=True)
class ToolRun:
    """One executed call."""

    call_id: str
    name: str
    arguments: ToolArguments
    output: str
    success: bool
    duration_ms: float


def check_arguments(schema: Mapping[str, object], arguments: ToolArguments) -> None:
    """Required properties present, declared properties of the declared JSON type.

    Raises:
        InvalidOperationError: naming the first problem.
    """
    props = schema.get("properties")
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if name not in arguments:
            raise InvalidOperationError(f"missing required argument {name!r}")
    for name, value in arguments.items():
        prop = props.get(name) if isinstance(props, dict) else None
        declared = str(prop.get("type", "")) if isinstance(prop, dict) else ""
        expected = _JSON_TYPES.get(declared)
        if expected is None:
            continue
        if (isinstance(value, bool) and bool not in expected) or not isinstance(value, expected):
            raise InvalidOperationError(f"argument {name!r} must be {declared}")


def _text(args: ToolArguments, name: str, default: str = "") -> str:
    value = args.get(name, default)
    return value if isinstance(value, str) else str(value)


def _integer(args: ToolArguments, name: str) -> int | None:
    value = args.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tags(args: ToolArguments) -> list[str] | None:
    value = args.get("tags")
    return [str(tag) for tag in value] if isinstance(value, list) else None


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

    def schemas(self) -> list[ToolSchema]:
        """Every tool's declaration."""
        return [t.schema() for t in self._tools.values()]

    async def run(self, call: ToolCall) -> ToolRun:
        """Execute one call; errors become the result's text (``success=False``)."""
        start = time.perf_counter()
        arguments: ToolArguments = {}
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


def _object(properties: dict[str, object], required: list[str]) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": required}


def builtin_tools(
    layer: MemoryLayer,
    checkpoints: Checkpoints,
    session: str,
    search: MemorySearch,
    beliefs: Beliefs,
) -> list[Tool]:
    """The memory tools every agent has: search, log, remember, note, scratchpad, checkpoint."""

    async def memory_search(args: ToolArguments) -> str:
        kind = _text(args, "kind") or None
        hits = await search.search(
            _text(args, "query"), limit=_integer(args, "limit") or 5, kind=kind
        )
        if not hits:
            return "no memories found"
        return "\n".join(f"[{h.doc.get('kind')} {h.doc.get('id')}] {h.content}" for h in hits)

    async def memory_log(args: ToolArguments) -> str:
        doc = await DailyLog(layer).log(
            _text(args, "content"), source="agent", tags=_tags(args), session=session
        )
        return f"logged {doc['id']}"

    async def memory_remember(args: ToolArguments) -> str:
        report = await beliefs.remember(
            _text(args, "content"), source="agent", tags=_tags(args), session=session
        )
        return "; ".join(
            f"{o['action']} belief {o['id']}"
            + (f" (replaces {o['previous']})" if o["previous"] else "")
            for o in report.summary()["beliefs"]
        )

    async def memory_note(args: ToolArguments) -> str:
        doc = await LongTermMemory(layer).add(_text(args, "content"), tags=_tags(args))
        return f"noted {doc['id']}"

    async def scratchpad(args: ToolArguments) -> str:
        pads = Scratchpads(layer)
        action, pad = args["action"], _text(args, "id")
        if action == "set":
            if "value" not in args:
                raise InvalidOperationError("scratchpad set needs a value")
            await pads.set(pad, _text(args, "value"), _integer(args, "ttl_s"))
            return f"scratchpad {pad} set"
        if action == "get":
            value = await pads.get(pad)
            return value if value is not None else f"scratchpad {pad} is empty or expired"
        raise InvalidOperationError("scratchpad action must be get or set")

    async def checkpoint(args: ToolArguments) -> str:
        cp = await checkpoints.create(
            label=_text(args, "label")[:200], reason="agent", actor="agent"
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
            "Learn a lasting fact or preference; it reinforces or replaces what you believed.",
            _object({"content": {"type": "string"}, "tags": tags}, ["content"]),
            memory_remember,
        ),
        Tool(
            "memory_note",
            "Keep a plain long-term note as written (a reference, a procedure, a summary).",
            _object({"content": {"type": "string"}, "tags": tags}, ["content"]),
            memory_note,
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

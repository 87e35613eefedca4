"""Tools the agent can call: aether's operations plus any a program registers.

A tool is a name, a description, a JSON-schema for its arguments and an async handler
that returns text. A failing tool never ends the agent's step: its error becomes the
tool's result, so the model can see it and react.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from aether.errors import AetherError, InvalidOperationError, ToolUnavailableError
from aether.messages import ToolFunction, ToolSchema
from aether.operations import Caller, Operation, Parts, agent_operations
from aether.runtime.llm import ToolCall, parse_arguments
from aether.runtime.tools.workspace import ToolOutput
from aether.tokens import count_tool_schemas

log = structlog.get_logger(__name__)

ALWAYS_OFFERED = (
    "memory_search",
    "memory_log",
    "memory_remember",
    "memory_note",
    "scratchpad_",
    "checkpoint_create",
)
"""Name prefixes of the built-in tools every request declares."""

ToolArguments = dict[str, object]
"""A call's arguments, parsed from JSON and checked against the tool's schema."""
Handler = Callable[[ToolArguments], Awaitable[str | ToolOutput]]
Outcome = str
"""``ok``, ``error``, ``unavailable``, ``denied`` (policy or operator) or ``stopped`` (budget)."""
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
    optional: bool = False
    """Offered only when it fits in the tools' share of the window, after every other."""
    server: str = "aether"
    """Where it runs: ``aether`` (memory), ``workspace`` or an MCP server's name."""

    def schema(self) -> ToolSchema:
        """The tool as the chat API declares it."""
        function = ToolFunction(
            name=self.name, description=self.description, parameters=self.parameters
        )
        return ToolSchema(type="function", function=function)


@dataclass
class ToolRun:
    """One executed call."""

    call_id: str
    name: str
    arguments: ToolArguments
    output: str
    success: bool
    duration_ms: float
    outcome: Outcome = "ok"
    changes: list[dict[str, object]] = field(default_factory=list)
    approval: dict[str, object] | None = None
    server: str = "aether"
    call: str = ""
    """aether's own id of the call (``ToolCall.call``); ``call_id`` is the model's."""


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


class Toolbox:
    """The tools of one agent, by name."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool, *, replace: bool = False) -> None:
        """Add a tool (``replace``: or update the one of that name).

        Raises:
            InvalidOperationError: a bad or taken name, or parameters that are not an object
                schema.
        """
        if not _NAME.match(tool.name):
            raise InvalidOperationError(f"tool name {tool.name[:70]!r}: 1-64 of A-Z a-z 0-9 _ -")
        if tool.name in self._tools and not replace:
            raise InvalidOperationError(f"a tool named {tool.name!r} is already registered")
        if tool.parameters.get("type") != "object":
            raise InvalidOperationError("tool parameters must be a JSON schema of type object")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, if any."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Every tool's name."""
        return list(self._tools)

    def optional(self) -> list[Tool]:
        """The tools offered only while they fit."""
        return [t for t in self._tools.values() if t.optional]

    def schemas(self) -> list[ToolSchema]:
        """Every tool's declaration."""
        return [t.schema() for t in self._tools.values()]

    def required_schemas(self) -> list[ToolSchema]:
        """The declarations of the tools always offered (not ``optional``)."""
        return [t.schema() for t in self._tools.values() if not t.optional]

    def offered(self, budget: int, ranking: list[str] | None = None) -> list[ToolSchema]:
        """What a request declares: every required tool, then optional ones while they fit.

        Args:
            budget: the tokens the tool schemas may take (their share of the window).
            ranking: the optional tools' names, most relevant first (default: the order
                they were registered in); those it leaves out come after.
        """
        chosen = self.required_schemas()
        optional = self.optional()
        if ranking is not None:
            place = {name: i for i, name in enumerate(ranking)}
            optional.sort(key=lambda t: place.get(t.name, len(place)))
        for tool in optional:
            if count_tool_schemas([*chosen, tool.schema()]) <= budget:
                chosen.append(tool.schema())
        return chosen

    def fits(self, budget: int) -> bool:
        """Whether every tool's schema fits in ``budget`` tokens."""
        return count_tool_schemas(self.schemas()) <= budget

    async def run(self, call: ToolCall) -> ToolRun:
        """Execute one call; errors become the result's text (``success=False``)."""
        start = time.perf_counter()
        arguments: ToolArguments = {}
        tool = self._tools.get(call.name)
        changes: list[dict[str, object]] = []
        outcome = "error"
        try:
            if tool is None:
                raise InvalidOperationError(f"unknown tool {call.name[:70]!r}")
            arguments = parse_arguments(call.arguments)
            check_arguments(tool.parameters, arguments)
            result = await tool.handler(arguments)
            if isinstance(result, ToolOutput):
                output, changes = result.text, list(result.changes)
            else:
                output = result
            outcome = "ok"
        except ToolUnavailableError as e:
            output, outcome = (
                str(e) if str(e).startswith("unavailable") else f"unavailable: {e}",
                "unavailable",
            )
        except AetherError as e:
            output = f"error: {e}"
        except Exception as e:
            log.exception("tool raised", tool=call.name)
            output = f"error: {type(e).__name__}: {e}"
        ms = (time.perf_counter() - start) * 1000
        server = tool.server if tool is not None else "?"
        return ToolRun(
            call.id,
            call.name,
            arguments,
            output,
            outcome == "ok",
            ms,
            outcome=outcome,
            changes=changes,
            server=server,
        )


def operation_tool(op: Operation[Any, Any], parts: Parts, caller: Caller) -> Tool:
    """An operation offered to the model: its summary, its arguments' schema, its brief."""
    allowed = op.agent_arguments()

    async def handler(arguments: ToolArguments) -> str:
        return op.text(await op.invoke(parts, caller, arguments, allowed))

    optional = not op.name.startswith(ALWAYS_OFFERED)
    return Tool(op.name, op.summary, op.schema(agent=True), handler, optional=optional)


def builtin_tools(parts: Parts, caller: Caller) -> list[Tool]:
    """The operations every agent has as tools (``aether.operations.agent_operations``).

    Its memory tools (search, log, remember, note, scratchpads, checkpoint) are always
    offered; the others (forget, tasks, goals, graph) when they fit in the window's share.
    """
    return [operation_tool(op, parts, caller) for op in agent_operations()]

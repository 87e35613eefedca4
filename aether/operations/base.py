"""What an operation is: one definition the agent's tools, MCP and the CLI are built from.

An operation is an async function ``(parts, caller, arguments) -> result`` whose
arguments are a pydantic model (descriptions, ranges and choices live on its fields)
and whose result is typed (a pydantic model or a TypedDict). Its docstring is its
description everywhere. :func:`operation` registers it::

    class SearchArgs(BaseModel):
        query: str = Field(description="What to look for.")

    @operation(read_only=True)
    async def memory_search(parts: Parts, caller: Caller, args: SearchArgs) -> Found:
        \"\"\"Find what the agent remembers about something.\"\"\"

The faces are thin: ``aether.runtime.tools.operation_tool`` offers it to the model,
``aether.interfaces.mcp.build_server`` serves it as an MCP tool, and a CLI command calls
it and prints its result. Adding an operation is one definition plus one line per face.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, get_type_hints

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from aether import telemetry
from aether.errors import InvalidOperationError
from aether.messages import TextModel
from aether.operations.parts import Parts

__all__ = [
    "REGISTRY",
    "Caller",
    "NoArgs",
    "Operation",
    "compact_schema",
    "for_the_cli",
    "not_for_agent",
    "operation",
    "problems",
]

A = TypeVar("A", bound=BaseModel)
M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


class NoArgs(BaseModel):
    """The arguments of an operation that takes none."""


@dataclass(frozen=True)
class Caller:
    """Who runs an operation, through which face.

    Attributes:
        actor: who the journal and checkpoints name (``agent``, ``mcp``, ``cli``).
        session: the chat session the call belongs to, if any.
        llm: the model for operations that can use one (belief extraction, suggestions).
        clock: the time it is (a simulation injects its own).
        progress: told ``(done, total, stage)`` as long work goes (``total`` ``None``: not
            known yet; ``stage``: what is being done, when the work has several); the CLI
            draws it as a progress bar.
    """

    actor: str
    session: str | None = None
    llm: TextModel | None = None
    clock: Callable[[], float] = time.time
    progress: Callable[[float, float | None, str | None], None] | None = None

    def report(self, done: float, total: float | None = None, stage: str | None = None) -> None:
        """Tell :attr:`progress` how far long work has come (nothing when none listens)."""
        if self.progress is not None:
            self.progress(done, total, stage)

    def counter(
        self, total: float | None = None, stage: str | None = None
    ) -> Callable[[int], None]:
        """A callback that counts units of work done, reporting the running total."""
        done = 0

        def advance(units: int = 1) -> None:
            nonlocal done
            done += units
            self.report(done, total, stage)

        return advance


@dataclass(frozen=True)
class Operation(Generic[A, R]):
    """One operation, defined once.

    Attributes:
        name: ``group_verb`` (``memory_search``): the tool name on every face.
        description: what it does, for the model and for people (the docstring).
        arguments: the pydantic model of its arguments.
        result: its result type.
        handler: the implementation.
        read_only: it never writes (MCP's ``readOnlyHint``; the read-never-writes test).
        agent: offered to the agent as a tool.
        brief: the result as the model reads it (default: compact JSON).
        mcp: served as an MCP tool. Off for the few that read or write files on the
            machine the command runs on (import, export, the archive's restore, a
            repository's index): a remote MCP client must not reach its filesystem.
        memory: the GenAI semantic conventions' memory operation it is
            (``search_memory``, ``create_memory``...): its OpenTelemetry span's name
            (:mod:`aether.telemetry`); ``None``: not a memory operation.
    """

    name: str
    description: str
    arguments: type[A]
    result: Any
    handler: Callable[[Parts, Caller, A], Awaitable[R]]
    read_only: bool
    agent: bool
    brief: Callable[[R], str] | None = None
    mcp: bool = True
    memory: str | None = None

    @property
    def summary(self) -> str:
        """The description's first paragraph: what the model is told (tokens count)."""
        return self.description.split("\n\n", 1)[0].replace("\n", " ")

    async def __call__(self, parts: Parts, caller: Caller, args: A) -> R:
        """Run it (in its memory span when tracing is on).

        With an ``as_of`` argument it runs over the state as it was then
        (:meth:`Parts.as_of`), its caller's clock at that time.
        """
        as_of = getattr(args, "as_of", None)
        if isinstance(as_of, int | float):
            when = float(as_of)
            async with parts.as_of(when) as past:
                then = dataclasses.replace(caller, clock=lambda: when)
                return await self(past, then, args.model_copy(update={"as_of": None}))
        if self.memory is None or not telemetry.enabled():
            return await self.handler(parts, caller, args)
        record_id = getattr(args, "id", None)
        query = getattr(args, "query", None)
        with telemetry.memory_span(
            self.memory,
            parts.keys.ns,
            record_id if isinstance(record_id, str) else None,
            query if isinstance(query, str) else None,
        ) as span:
            result = await self.handler(parts, caller, args)
            span.count, span.records = _records(self.memory, self.dump(result))
            return result

    def parse(self, raw: Mapping[str, object], allowed: Collection[str] | None = None) -> A:
        """Arguments from a call's JSON: the one way every face reads them.

        Args:
            raw: the call's arguments by name.
            allowed: the names this face offers (default: every argument; the agent's
                tools offer :meth:`agent_arguments`).

        Raises:
            InvalidOperationError: an unknown argument (a misspelt one is never silently
                dropped), or naming each wrong or missing one.
        """
        return validated(self.arguments, raw, what=self.name, allowed=allowed)

    async def invoke(
        self,
        parts: Parts,
        caller: Caller,
        raw: Mapping[str, object],
        allowed: Collection[str] | None = None,
    ) -> R:
        """Parse ``raw`` (:meth:`parse`) and run it: a face's call in one step."""
        return await self(parts, caller, self.parse(raw, allowed))

    def dump(self, result: R) -> Any:
        """The result as plain JSON data."""
        return _adapter(self.result).dump_python(result, mode="json")

    def text(self, result: R) -> str:
        """The result as the model reads it."""
        if self.brief is not None:
            return self.brief(result)
        return json.dumps(self.dump(result), ensure_ascii=False, separators=(",", ":"))

    def schema(self, *, agent: bool = False) -> dict[str, Any]:
        """The JSON schema of its arguments, compact (:func:`compact_schema`).

        The arguments model's own docstring is left out: the tool's description says it.
        With ``agent``, the arguments marked :func:`not_for_agent` are left out too.
        """
        schema: dict[str, Any] = compact_schema(self.arguments.model_json_schema())
        schema.pop("description", None)
        properties: dict[str, Any] = schema.get("properties", {})
        for prop in properties.values():
            prop.pop(FOR_THE_CLI, None)
        for name in [n for n, p in properties.items() if p.pop(NOT_FOR_AGENT, False) and agent]:
            del properties[name]
        return schema

    def agent_arguments(self) -> set[str]:
        """The arguments the agent may set."""
        return set(self.schema(agent=True).get("properties", {}))


NOT_FOR_AGENT = "x-not-for-agent"
"""A JSON-schema mark on an argument the agent's tool leaves out (its default applies)."""


def not_for_agent() -> dict[str, Any]:
    """``json_schema_extra`` of an argument only people and MCP clients set.

    The agent writes as itself (``source`` is ``agent``), in its own session, and asks for
    what a model needs; every argument it is shown costs tokens on every call.
    """
    return {NOT_FOR_AGENT: True}


FOR_THE_CLI = "x-cli"
"""A JSON-schema mark carrying how the CLI offers an argument (never shown to a model)."""


def for_the_cli(
    *,
    argument: str | None = None,
    flags: tuple[str, ...] = (),
    metavar: str | None = None,
    parser: str | None = None,
    hidden: bool = False,
    default: str | int | float | None = None,
) -> dict[str, Any]:
    """``json_schema_extra`` telling the CLI how to offer an argument (its other faces ignore it).

    Args:
        argument: offer it as a positional argument with this name (``task_id``).
        flags: its spellings, when not ``--field-name`` (``("--priority", "-p")``).
        metavar: the placeholder help shows for its value.
        parser: the name of the CLI parser that reads its text (``since``: ``7d`` or a time).
        hidden: the CLI does not offer it (the command sets it, or it is for programs).
        default: the CLI's default, where a person's differs from a program's.
    """
    hint: dict[str, Any] = {"argument": argument, "flags": list(flags), "metavar": metavar}
    return {FOR_THE_CLI: hint | {"parser": parser, "hidden": hidden, "default": default}}


AsOf = Annotated[
    float | None,
    Field(
        default=None,
        description="Answer from the state as recorded at this time (epoch seconds), read "
        "from the journal's history: the live state is untouched.",
        json_schema_extra={
            **not_for_agent(),
            **for_the_cli(parser="since", metavar="TIME", flags=("--as-of",)),
        },
    ),
]
"""The ``as_of`` argument of the reads that answer from the past (``Operation.__call__``)."""

ValidAt = Annotated[
    float | None,
    Field(
        default=None,
        description="Only what was true at this time (epoch seconds): a belief holds from "
        "the start its statement gives ('since March') or its recording, until the end it "
        "gives ('until Friday') or the start of the belief that superseded it. Superseded "
        "beliefs count: what was true then may have changed since.",
        json_schema_extra={
            **not_for_agent(),
            **for_the_cli(parser="since", metavar="TIME", flags=("--valid-at",)),
        },
    ),
]
"""The ``valid_at`` argument: valid time, what was true then (``knowledge.valid_time``)."""


@functools.cache
def _adapter(result_type: Any) -> TypeAdapter[Any]:
    """The (costly to build) pydantic adapter of one result type, built once."""
    return TypeAdapter(result_type)


def validated(
    model: type[M],
    raw: Mapping[str, object],
    *,
    what: str = "",
    allowed: Collection[str] | None = None,
) -> M:
    """``raw`` as ``model``'s arguments; unknown names and bad values refused in one line.

    Args:
        model: the arguments' model.
        raw: the values by name.
        what: the operation's name, to begin the message with (none: the bare problems).
        allowed: the names accepted (default: the model's fields).

    Raises:
        InvalidOperationError: ``what: unknown argument(s) 'x'; it takes a, b`` or the
            validation's problems (:func:`problems`).
    """
    prefix = f"{what}: " if what else ""
    accepted = set(model.model_fields) if allowed is None else set(allowed)
    unknown = sorted(str(name) for name in raw if name not in accepted)
    if unknown:
        shown = ", ".join(repr(name[:40]) for name in unknown[:5])
        takes = ", ".join(sorted(accepted)) or "none"
        raise InvalidOperationError(f"{prefix}unknown argument(s) {shown}; it takes {takes}")
    try:
        return model.model_validate(dict(raw))
    except ValidationError as e:
        raise InvalidOperationError(prefix + problems(e)) from None


def problems(error: ValidationError, limit: int = 5) -> str:
    """A validation error as one line: ``limit: Input should be ...; query: Field required``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: "
        + str(err["msg"]).removeprefix("Value error, ")
        for err in error.errors()[:limit]
    )


def compact_schema(schema: Any) -> Any:
    """``schema`` as a model needs it, in fewer tokens.

    Without pydantic's ``title`` keys and ``"default": null``, and an optional value's
    ``anyOf: [X, {"type": "null"}]`` as plain ``X``: a model leaves an optional argument
    out rather than sending null, and every token of a tool schema is paid on every call.
    """
    if isinstance(schema, dict):
        variants = schema.get("anyOf")
        if isinstance(variants, list) and {"type": "null"} in variants and len(variants) == 2:
            (kept,) = [v for v in variants if v != {"type": "null"}]
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            return compact_schema({**kept, **rest})
        return {
            k: compact_schema(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str)) and not (k == "default" and v is None)
        }
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]
    return schema


REGISTRY: dict[str, Operation[Any, Any]] = {}
"""Every operation by name, in definition order."""


def _records(kind: str, data: Any) -> tuple[int, list[dict[str, Any]]]:
    """How many records an operation's result holds, and those it names (for its span)."""
    if isinstance(data, dict):
        listed = next(
            (v for k, v in data.items() if isinstance(v, list) and k in _RECORD_LISTS), None
        )
        data = listed if listed is not None else data
    if isinstance(data, list):
        rows = [r for r in data if isinstance(r, dict)]
        return len(data), [
            {"id": r.get("id"), "content": r.get("content"), "score": r.get("relevance")}
            for r in rows
        ]
    return (0 if kind == "search_memory" else 1), []


_RECORD_LISTS = frozenset({"results", "beliefs", "entities", "relations", "memories", "items"})


def operation(
    *,
    read_only: bool,
    agent: bool = True,
    brief: Callable[[Any], str] | None = None,
    mcp: bool = True,
    memory: str | None = None,
) -> Callable[[Callable[[Parts, Caller, Any], Awaitable[Any]]], Operation[Any, Any]]:
    """Register a handler as an operation named after it (see the module docs).

    Args:
        read_only: it never writes.
        agent: offer it to the agent as a tool.
        brief: how the model reads its result (default compact JSON).
        mcp: serve it as an MCP tool (see :class:`Operation`).
        memory: the GenAI memory operation it is, for its span (see :class:`Operation`).
    """

    def register(fn: Callable[[Parts, Caller, Any], Awaitable[Any]]) -> Operation[Any, Any]:
        hints = get_type_hints(fn)
        op: Operation[Any, Any] = Operation(
            name=fn.__name__,
            description=inspect.cleandoc(fn.__doc__ or ""),
            arguments=hints["args"],
            result=hints["return"],
            handler=fn,
            read_only=read_only,
            agent=agent,
            brief=brief,
            mcp=mcp,
            memory=memory,
        )
        if op.name in REGISTRY:
            raise RuntimeError(f"operation {op.name} is defined twice")
        REGISTRY[op.name] = op
        return op

    return register

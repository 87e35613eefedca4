"""A CLI command built from its operation: options from the arguments model, one renderer.

A command that only runs its operation and prints the result is declared on its
renderer, not written::

    @command(goal_app, "done", ops.goal_done)
    def _goal_done(goal: Goal, out: Out[Goal]) -> None:
        '''Mark a goal done (by id or unique prefix).'''  # the command's help
        out.emit(goal, f"done {goal.id}: {goal.title}")

Its options are the model's fields (:mod:`aether.interfaces.parameters`, the reading
MCP's tools use): a field's description is its option's help, its range the option's
bounds, its choices the option's choices. A field marked with
:func:`aether.operations.base.for_the_cli` is offered as its hint says (a positional
argument, other spellings, a parser). ``--json`` is added to every command.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import UnionType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    Literal,
    TypedDict,
    TypeVar,
    Union,
    Unpack,
    get_args,
    get_origin,
)
from zoneinfo import ZoneInfo

import typer

from aether.interfaces.common import (
    EXIT_USAGE,
    JsonOpt,
    arguments,
    call,
    call_in_zone,
    emit,
    fail,
    state,
    wants_json,
)
from aether.interfaces.parameters import Parameter, parameters
from aether.interfaces.parsers import PARSERS
from aether.interfaces.tables import Column, emit_table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aether.operations import Operation

__all__ = ["DECLARED", "Declaration", "Out", "build", "command", "options"]

T = TypeVar("T")
Row = TypeVar("Row")


@dataclass(frozen=True)
class Out(Generic[T]):
    """Where a renderer prints: JSON or for people, in the operator's zone.

    Attributes:
        json: print JSON (the command's ``--json`` or the root's).
        zone: the operator's time zone (UTC unless the command reads it).
        args: the operation's arguments as the command ran it.
    """

    json: bool
    zone: ZoneInfo
    args: Any = None

    def emit(self, data: Any, line: str | Callable[[], object] | None = None) -> None:
        """``data`` as JSON, or for people ``line`` (a text, or a function that prints)."""
        if isinstance(line, str):
            text = line
            emit(data, self.json, lambda: print(text))
        else:
            emit(data, self.json, line)

    def table(
        self,
        rows: Sequence[Row],
        columns: Sequence[Column[Row]],
        *,
        data: Any = None,
        empty: str = "nothing found",
    ) -> None:
        """A list: JSON (``data``, else the rows) or a table; none is exit 2 saying ``empty``."""
        emit_table(rows, self.json, columns, data=data, empty=empty)


Renderer = Callable[[T, Out[T]], None]


@dataclass(frozen=True)
class Declaration:
    """What a built command was declared from (for the tests that check the CLI's faces).

    Attributes:
        operation: the operation it runs.
        fixed: the arguments it sets itself.
        positional: the fields it takes as positional arguments, by name.
    """

    operation: Operation[Any, Any]
    fixed: Mapping[str, object]
    positional: Mapping[str, str]


DECLARED: dict[Callable[..., None], Declaration] = {}
"""Every command :func:`build` made -> what it was declared from."""


def options(
    model: type[Any],
    *,
    skip: Mapping[str, object] | None = None,
    positional: Mapping[str, str] | None = None,
) -> list[inspect.Parameter]:
    """The typer parameters of an arguments model: one per field the CLI offers.

    Args:
        model: the arguments model.
        skip: fields the command sets itself.
        positional: fields offered as positional arguments, with their names, beside those
            the fields' hints make positional.
    """
    offered = [
        _as_positional(p, (positional or {}).get(p.name))
        for p in offered_parameters(model)
        if p.name not in (skip or {})
    ]
    arguments_first = sorted(offered, key=lambda p: p.cli.argument is None)  # a stable sort
    return [_typer_parameter(p) for p in arguments_first]


def offered_parameters(model: type[Any]) -> list[Parameter]:
    """The parameters of ``model`` the CLI offers (those its hints do not hide)."""
    return [p for p in parameters(model) if not p.cli.hidden]


def _as_positional(p: Parameter, name: str | None) -> Parameter:
    return p if name is None else replace(p, cli=replace(p.cli, argument=name))


def _for_typer(annotation: Any) -> Any:
    """A type typer reads: a union of choices (``Status | Literal["all"]``) is one choice."""
    if get_origin(annotation) not in (Union, UnionType):
        return annotation
    members = [a for a in get_args(annotation) if a is not type(None)]
    if len(members) < 2 or any(get_origin(m) is not Literal for m in members):
        return annotation
    choices = Literal[tuple(v for m in members for v in get_args(m))]  # type: ignore[valid-type]
    return choices | None if len(members) < len(get_args(annotation)) else choices


def _flags(p: Parameter) -> tuple[str, ...]:
    """An option's spellings: its CLI hint's, or ``--field-name``."""
    return tuple(p.cli.flags) or ("--" + p.name.replace("_", "-"),)


def _typer_parameter(p: Parameter) -> inspect.Parameter:
    kind = inspect.Parameter.KEYWORD_ONLY
    shown = _for_typer(p.annotation)
    if p.cli.parser is not None:  # the parser reads the text: the option takes a string
        shown = str | None
    if p.cli.argument is not None:
        info: Any = typer.Argument(
            help=p.description, metavar=p.cli.metavar, show_default=not p.required
        )
        return inspect.Parameter(
            p.cli.argument,
            kind,
            annotation=Annotated[shown, info],
            default=inspect.Parameter.empty if p.required else p.default,
        )
    flags = _flags(p)
    default = p.cli.default if p.cli.default is not None else p.default
    parser = PARSERS[p.cli.parser] if p.cli.parser is not None else None
    info = typer.Option(
        *flags,
        help=f"{p.description} {parser.help}"
        if parser and p.description
        else (parser.help if parser else p.description),
        metavar=p.cli.metavar or (parser.metavar if parser else None),
        min=None if parser else p.low,
        max=None if parser else p.high,
    )
    return inspect.Parameter(
        p.name,
        kind,
        annotation=Annotated[shown, info],
        default=inspect.Parameter.empty if p.required else default,
    )


class How(TypedDict, total=False):
    """How :func:`build` makes a command (each key is one of its arguments)."""

    help: str | None
    fixed: Mapping[str, object] | None
    positional: Mapping[str, str] | None
    llm: bool
    zone: bool
    progress: str | None


def command(
    app: typer.Typer, name: str, op: Operation[Any, T], *, hidden: bool = False, **how: Unpack[How]
) -> Callable[[Renderer[T]], Renderer[T]]:
    """Declare the command ``name`` of ``app`` on its renderer (built by :func:`build`).

    ::

        @command(task_app, "done", ops.task_done)
        def _done(task: Task, out: Out[Task]) -> None:
            # this docstring is the command's help (unless ``help`` is given)
            out.emit(task, f"done {task.id}")

    ``hidden`` leaves it out of help (a compatibility spelling); the other arguments are
    :func:`build`'s.
    """

    def declare(render: Renderer[T]) -> Renderer[T]:
        app.command(name, hidden=hidden)(build(op, render, **how))
        return render

    return declare


def build(
    op: Operation[Any, T],
    render: Renderer[T],
    *,
    help: str | None = None,
    fixed: Mapping[str, object] | None = None,
    positional: Mapping[str, str] | None = None,
    llm: bool = False,
    zone: bool = False,
    progress: str | None = None,
) -> Callable[..., None]:
    """A command's function: its operation's arguments as options, then ``render``.

    Args:
        op: the operation it runs.
        render: prints the result (:class:`Out` says how: JSON or for people).
        help: the command's help (its first line is its summary); by default the
            renderer's docstring.
        fixed: arguments the command sets itself (not offered as options).
        positional: fields this command takes as positional arguments, with their names.
        llm: run the operation with the configured model.
        zone: read the operator's time zone for the renderer (times for people).
        progress: draw the operation's progress as a bar with this label.
    """
    model = op.arguments
    declared = options(model, skip=fixed, positional=positional)
    renamed = {name: field for field, name in (positional or {}).items()}
    names = {p.name: renamed.get(p.name) or _field_of(model, p.name) for p in declared}
    parsers = {
        p.name: (p.cli.parser, _flags(p)[0]) for p in offered_parameters(model) if p.cli.parser
    }

    def body(ctx: typer.Context, json_: bool = False, **given: Any) -> None:
        as_json = wants_json(ctx, json_)
        raw = {names[k]: v for k, v in given.items()}
        for field, (parser, flag) in parsers.items():
            if raw.get(field) is not None:
                raw[field] = _parsed(ctx, parser, raw[field], flag)
        args = arguments(ctx, model, **raw, **(fixed or {}))
        if zone:
            result, where = call_in_zone(ctx, op, args, llm=llm)
        else:
            result, where = call(ctx, op, args, llm=llm, progress=progress), ZoneInfo("UTC")
        render(result, Out(as_json, where, args))

    context = inspect.Parameter(
        "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context
    )
    as_json = inspect.Parameter(
        "json_", inspect.Parameter.KEYWORD_ONLY, annotation=JsonOpt, default=False
    )
    signature = inspect.Signature([context, *declared, as_json])
    body.__signature__ = signature  # type: ignore[attr-defined]
    body.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    body.__name__ = body.__qualname__ = f"{op.name}_command"
    body.__doc__ = help or inspect.cleandoc(render.__doc__ or "")
    DECLARED[body] = Declaration(op, dict(fixed or {}), dict(positional or {}))
    return body


def _field_of(model: type[Any], name: str) -> str:
    """The field a typer parameter sets (a positional argument may be named otherwise)."""
    for p in parameters(model):
        if p.name == name or p.cli.argument == name:
            return p.name
    raise KeyError(name)


def _parsed(ctx: typer.Context, parser: str, text: Any, flag: str) -> Any:
    from aether.errors import InvalidOperationError

    try:
        return PARSERS[parser].read(str(text), flag)
    except InvalidOperationError as e:
        fail(str(e), state(ctx).json, EXIT_USAGE, "invalid")

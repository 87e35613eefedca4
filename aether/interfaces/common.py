"""What every CLI command shares: settings, --json, exit codes, async entry, output."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar
from zoneinfo import ZoneInfo

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from aether.keys import Keyspace

if TYPE_CHECKING:  # the rest of the house is imported by the command that uses it
    from pydantic import BaseModel
    from redis.asyncio import Redis
    from rich.progress import Progress, TaskID

    from aether.app import Aether
    from aether.config import Settings
    from aether.operations import Operation

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_NO_RESULTS = 2
EXIT_USAGE = 64  # EX_USAGE (sysexits.h): 2 stays "the query ran and found nothing"
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C

T = TypeVar("T")
M = TypeVar("M", bound="BaseModel")
_UTC = ZoneInfo("UTC")

console = Console()
err_console = Console(stderr=True)


def group(help: str, order: Sequence[str] = (), **options: Any) -> typer.Typer:
    """A command group that reads well: plain help (no markup), help when run bare.

    Every group of the CLI is made here, so they all behave alike. ``order`` is the order
    help lists its commands in (others follow, as declared), whatever the order of the
    code that declares them.
    """
    if order:
        options["cls"] = type("OrderedGroup", (OrderedGroup,), {"order": tuple(order)})
    return typer.Typer(help=help, no_args_is_help=True, rich_markup_mode=None, **options)


class OrderedGroup(TyperGroup):
    """A group whose help lists its commands in ``order`` (the rest after, as declared)."""

    order: tuple[str, ...] = ()

    def list_commands(self, ctx: Any) -> list[str]:
        """The command names, in the group's order."""
        names = list(self.commands)
        return sorted(names, key=lambda n: self.order.index(n) if n in self.order else len(names))


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
"""A command's own ``--json`` (the root's ``aether --json`` asks the same of every command);
:func:`wants_json` reads both."""

# set from the whole command line, so a command's own --json also shapes its errors
json_requested: ContextVar[bool] = ContextVar("json_requested", default=False)


@dataclass
class AppState:
    """Per-invocation state set by the root callback."""

    settings: Settings
    json: bool = False

    @property
    def keys(self) -> Keyspace:
        """The namespace's keyspace."""
        return Keyspace(self.settings.namespace)


def state(ctx: typer.Context) -> AppState:
    """The AppState of this invocation."""
    obj = ctx.find_root().obj
    if not isinstance(obj, AppState):
        raise RuntimeError("the CLI root callback did not run")
    return obj


def wants_json(ctx: typer.Context, local: bool) -> bool:
    """Whether to print JSON (global ``--json`` or the command's own)."""
    return local or state(ctx).json


def fail(
    message: str, as_json: bool = False, code: int = EXIT_ERROR, kind: str = "error"
) -> NoReturn:
    """Print one error line on stderr (or ``{"error": {"code", "message"}}`` on stdout), exit.

    Args:
        message: what went wrong, one line.
        as_json: print the JSON object instead.
        code: the exit code.
        kind: the error's stable code (see :func:`aether.errors.error_code`).
    """
    if as_json:
        print(json.dumps({"error": {"code": kind, "message": message}}))
    else:
        # the message may quote user text: "[/]" must print, not be read as markup
        err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def run(
    ctx: typer.Context,
    work: Callable[[], Awaitable[T]],
    interrupted: Callable[[], str] | None = None,
) -> T:
    """Run an async command body; an AetherError becomes one line and exit 1.

    Ctrl-C becomes one line and exit 130: ``interrupted`` says what was done and how to
    finish (by default: the work stopped where it was; each change is whole or absent).
    """
    import asyncio

    from aether.errors import AetherError, error_code

    try:
        return asyncio.run(_call(work))
    except AetherError as e:
        fail(str(e), state(ctx).json, kind=error_code(e)[0])
    except KeyboardInterrupt:
        said = interrupted() if interrupted is not None else INTERRUPTED
        fail(f"interrupted (Ctrl-C): {said}", state(ctx).json, EXIT_INTERRUPTED, "interrupted")


INTERRUPTED = "stopped where it was; every change already made is whole, none is half-made"


async def _call(work: Callable[[], Awaitable[T]]) -> T:
    return await work()


@asynccontextmanager
async def redis_client(settings: Settings) -> AsyncIterator[Redis]:
    """A verified client for the duration of a command (embedded started on demand)."""
    from aether.store.client import connect

    client = await connect(settings)
    try:
        yield client
    finally:
        await client.aclose()


@asynccontextmanager
async def open_aether(st: AppState, actor: str = "cli") -> AsyncIterator[Aether]:
    """The invocation's ``Aether`` (a running daemon embeds for it), closed at the end.

    A command never migrates the namespace's vectors (the daemon does at its start), so
    a read-only command leaves every key as it found it.
    """
    from aether.app import Aether

    async with Aether.open(st.settings, actor=actor, embed_via_daemon=True, migrate=False) as parts:
        yield parts


def arguments(ctx: typer.Context, model: type[M], **values: Any) -> M:
    """An operation's arguments from a command's options; a bad value is a usage error (64).

    Options left ``None`` are left out, so the model's defaults apply.
    """
    from aether.errors import InvalidOperationError
    from aether.operations.base import validated

    try:
        return validated(model, {k: v for k, v in values.items() if v is not None})
    except InvalidOperationError as e:
        fail(str(e), state(ctx).json, code=EXIT_USAGE, kind="invalid")


def about(model: type[BaseModel], field: str) -> str:
    """A field's description: the help of the option that sets it (one place)."""
    return model.model_fields[field].description or ""


def call(
    ctx: typer.Context,
    op: Operation[M, T],
    args: M,
    *,
    llm: bool = False,
    progress: str | None = None,
    resume: str | None = None,
) -> T:
    """Run one operation for a command, as the CLI: every command's one way to the parts.

    Args:
        ctx: the command's context.
        op: the operation.
        args: its arguments.
        llm: run it with the configured model.
        progress: a label: the operation's progress is drawn as a bar on stderr (never
            with ``--json``).
        resume: how to finish after a Ctrl-C (with how far it got, from the progress).

    An ``AetherError`` becomes one line (or JSON) and exit 1; Ctrl-C one line and 130.
    """
    return _call_operation(ctx, op, args, llm=llm, zone=False, progress=progress, resume=resume)[0]


def call_in_zone(
    ctx: typer.Context, op: Operation[M, T], args: M, *, llm: bool = False
) -> tuple[T, ZoneInfo]:
    """:func:`call`, and the operator's time zone (for the times a command prints)."""
    result, zone = _call_operation(ctx, op, args, llm=llm, zone=True, progress=None, resume=None)
    return result, zone or _UTC


def _call_operation(
    ctx: typer.Context,
    op: Operation[M, T],
    args: M,
    *,
    llm: bool,
    zone: bool,
    progress: str | None,
    resume: str | None,
) -> tuple[T, ZoneInfo | None]:
    """Run ``op`` as the CLI; with ``zone``, also read the operator's time zone."""
    st = state(ctx)
    reached: list[float | None] = [None, None]  # done, total: for an interruption's line

    def interrupted() -> str:
        done, total = reached
        where = ""
        if done is not None and progress:
            where = f"{progress} reached {done:,.0f}" + (f" of {total:,.0f}" if total else "")
            where += "; "
        return where + (resume or INTERRUPTED)

    async def body() -> tuple[T, ZoneInfo | None]:
        from aether.operations import Caller
        from aether.runtime.llm import LLMClient

        model = LLMClient.from_settings(st.settings) if llm else None
        try:
            async with open_aether(st) as parts:
                hidden = progress is None or st.json or json_requested.get()
                with progress_bar(progress or "", hidden=hidden) as bar:

                    def advance(done: float, total: float | None, stage: str | None) -> None:
                        reached[:] = [done, total if total is not None else reached[1]]
                        if stage is not None:
                            bar.describe(stage)
                        if total is not None:
                            bar.expect(int(total))
                        bar.reached(done)

                    caller = Caller("cli", llm=model, progress=advance)
                    result = await op(parts, caller, args)
                if not zone:
                    return result, None
                return result, await read_operator_zone(parts.client, parts.keys)
        finally:
            if model is not None:
                await model.aclose()

    return run(ctx, body, interrupted)


def emit(data: Any, as_json: bool, render: Callable[[], object] | None = None) -> None:
    """Print ``data`` as JSON (keys sorted: a stable shape), or call ``render`` for people.

    An operation's result model is printed as the JSON it dumps to.
    """
    from pydantic import BaseModel

    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    if as_json or render is None:
        print(json.dumps(data, indent=None if as_json else 2, default=str, sort_keys=True))
    else:
        render()


def nothing_found(message: str, as_json: bool) -> NoReturn:
    """Exit 2 ("the query ran and found nothing"), saying so on stderr for people."""
    if not as_json:
        err_console.print(message, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_NO_RESULTS)


def human(name: str, value: Any, zone: ZoneInfo = _UTC) -> str:
    """One value as a person reads it: lists joined, times in ``zone``, nothing as '-'."""
    if value is None or value == "" or value == [] or value == {}:
        return "-"
    if isinstance(value, list | tuple):
        return ", ".join(human(name, v, zone) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {human(str(k), v, zone)}" for k, v in value.items())
    is_time = name.endswith("_at") or name in (
        "timestamp",
        "at",
        "created",
        "due_at",
        "valid_from",
        "valid_until",
    )
    if is_time and isinstance(value, int | float) and 0 < value < 253_402_300_800:
        return local_time(float(value), zone)
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def plural(count: Any, word: str, many: str | None = None) -> str:
    """``1 entry``, ``2 entries``, ``0 beliefs``: a count with its noun agreed."""
    number = int(count)
    if number == 1:
        return f"1 {word}"
    if many is None:
        consonant_y = word.endswith("y") and word[-2:-1] not in "aeiou"
        many = word[:-1] + "ies" if consonant_y else word + "s"
    return f"{number:,} {many}"


async def read_operator_zone(client: Redis, keys: Keyspace) -> ZoneInfo:
    """The operator's time zone from the user profile (UTC when unset): times for people."""
    from aether.codec import text
    from aether.identity.prompt import zone_named

    raw = await client.hget(keys.user_profile(), "timezone")
    return zone_named(text(raw) if raw else None)


def local_time(timestamp: float, zone: ZoneInfo) -> str:
    """``2026-11-23 19:05 CET``: a time as the operator reads it, with its zone."""
    return datetime.fromtimestamp(timestamp, tz=zone).strftime("%Y-%m-%d %H:%M %Z")


def print_fields(data: Mapping[str, object], zone: ZoneInfo = _UTC) -> None:
    """``name: value`` lines for people, times in ``zone`` (see :func:`human`)."""
    width = max((len(k) for k in data), default=0)
    for key, value in data.items():
        print(f"{key + ':':<{width + 1}} {human(key, value, zone)}")


def confirm(question: str, yes: bool, as_json: bool) -> None:
    """Ask before a destructive action; without a TTY, ``--yes`` is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        fail("refusing without --yes (no terminal to confirm on)", as_json, kind="invalid")
    if not typer.confirm(question, default=False):
        fail("cancelled; nothing changed", as_json, kind="cancelled")


class Bar:
    """A progress bar a command advances as its work goes (see :func:`progress_bar`)."""

    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._progress = progress
        self._task = task

    def advance(self, done: int = 1) -> None:
        """``done`` more units of work are finished."""
        self._progress.advance(self._task, done)

    def reached(self, done: float) -> None:
        """So much of the work is finished, in the bar's units (a percentage, say)."""
        self._progress.update(self._task, completed=done)

    def describe(self, label: str) -> None:
        """Name what is being done now (work of several stages)."""
        self._progress.update(self._task, description=label)

    def expect(self, total: int) -> None:
        """The work turned out to be ``total`` units (a bar without a total spins)."""
        self._progress.update(self._task, total=total)


@contextmanager
def progress_bar(label: str, total: int | None = None, *, hidden: bool = False) -> Iterator[Bar]:
    """A rich progress bar on stderr for long work; gone when the work ends.

    It is drawn only on a terminal, never with ``--json`` (``hidden``), so that output
    meant for programs stays clean.
    """
    from rich.progress import Progress

    shown = not hidden and err_console.is_terminal
    with Progress(console=err_console, transient=True, disable=not shown) as progress:
        yield Bar(progress, progress.add_task(label, total=total))

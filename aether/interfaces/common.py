"""What every CLI command shares: settings, --json, exit codes, async entry, output."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import typer
from redis.asyncio import Redis
from rich.console import Console

from aether.config import Settings
from aether.errors import AetherError
from aether.keys import Keyspace

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_NO_RESULTS = 2
EXIT_USAGE = 64  # EX_USAGE (sysexits.h): 2 stays "the query ran and found nothing"

T = TypeVar("T")

console = Console()
err_console = Console(stderr=True)


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


def fail(message: str, as_json: bool = False, code: int = EXIT_ERROR) -> NoReturn:
    """Print one error line (or a JSON object) and exit."""
    if as_json:
        print(json.dumps({"error": message}))
    else:
        err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def run(ctx: typer.Context, work: Callable[[], Awaitable[T]]) -> T:
    """Run an async command body; an AetherError becomes one line and exit 1."""
    try:
        return asyncio.run(_call(work))
    except AetherError as e:
        fail(str(e), state(ctx).json)


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


def emit(data: Any, as_json: bool, render: Callable[[], object] | None = None) -> None:
    """Print ``data`` as JSON, or call ``render`` for people."""
    if as_json or render is None:
        print(json.dumps(data, indent=None if as_json else 2, default=str))
    else:
        render()


def emit_rows(rows: list[Any], as_json: bool, line: Callable[[Any], str]) -> None:
    """Print rows (JSON, or one ``line(row)`` each); exit 2 when there are none."""
    emit(rows, as_json, lambda: [print(line(row)) for row in rows])
    if not rows:
        raise typer.Exit(EXIT_NO_RESULTS)


def confirm(question: str, yes: bool, as_json: bool) -> None:
    """Ask before a destructive action; without a TTY, ``--yes`` is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        fail("refusing without --yes (no terminal to confirm on)", as_json)
    if not typer.confirm(question, default=False):
        fail("cancelled; nothing changed", as_json)

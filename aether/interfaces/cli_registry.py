"""``aether tools ...`` (the tool registry) and ``aether ledger ...`` (the agent ledger)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from aether.errors import InvalidOperationError
from aether.interfaces import ranges
from aether.interfaces.cli_memory import parse_since
from aether.interfaces.common import (
    AppState,
    emit,
    emit_rows,
    group,
    print_fields,
    redis_client,
    run,
    state,
    wants_json,
)
from aether.registry.factory import RegistryAndLedger, open_registry
from aether.registry.model import KINDS, LedgerKind

tools_app = group("The tool registry: registered tools and their versions.")
ledger_app = group("The agent ledger: actions, tool calls, LLM calls and cost.")
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
SinceOpt = Annotated[str | None, typer.Option("--since", help="7d, 12h, 30m or ISO-8601.")]


def register(app: typer.Typer) -> None:
    """Add the registry and ledger commands to the root app."""
    app.add_typer(tools_app, name="tools")
    app.add_typer(ledger_app, name="ledger")


@asynccontextmanager
async def opened(st: AppState) -> AsyncIterator[RegistryAndLedger]:
    """The configured registry and ledger for the duration of a command."""
    async with redis_client(st.settings) as client:
        services = open_registry(st.settings, client, actor="cli")
        try:
            yield services
        finally:
            await services.close()


@tools_app.command("list")
def tools_list(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Registered tools, latest versions."""
    st = state(ctx)

    async def body() -> list[dict[str, Any]]:
        async with opened(st) as services:
            return [t.to_dict() for t in await services.registry.tools()]

    emit_rows(run(ctx, body), wants_json(ctx, json_),
              lambda t: f"{t['name']}  v{t['version']}  {t['description']}")  # fmt: skip


@tools_app.command("show")
def tools_show(
    ctx: typer.Context,
    name: str,
    version: Annotated[
        int | None, ranges.VERSION.option("--version", help="A given version.")
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """One tool's schema (latest version unless given)."""
    st = state(ctx)

    async def body() -> dict[str, Any]:
        async with opened(st) as services:
            return (await services.registry.get(name, version)).to_dict()

    tool = run(ctx, body)
    emit(tool, wants_json(ctx, json_), None)


def _since(value: str | None) -> float | None:
    when = parse_since(value)
    return when.timestamp() if when else None


@ledger_app.command("list")
def ledger_list(
    ctx: typer.Context,
    kind: Annotated[
        LedgerKind | None, typer.Option("--kind", help="Only this kind of entry.")
    ] = None,
    since: SinceOpt = None,
    limit: Annotated[int, ranges.LEDGER_LIMIT.option("--limit", help="At most this many.")] = 50,
    json_: JsonOpt = False,
) -> None:
    """Ledger entries, newest first."""
    st = state(ctx)

    async def body() -> list[dict[str, Any]]:
        if kind is not None and kind not in KINDS:
            raise InvalidOperationError(f"--kind is one of {', '.join(KINDS)}")
        async with opened(st) as services:
            entries = await services.ledger.entries(kind=kind, since=_since(since), limit=limit)
            return [e.to_dict() for e in entries]

    def line(e: dict[str, Any]) -> str:
        when = datetime.fromtimestamp(e["at"], tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        tokens = (f" {e['prompt_tokens']}+{e['completion_tokens']} tok ${e['cost_usd']:.6f}"
                  if e["kind"] == "llm_call" else "")  # fmt: skip
        return f"{when}  {e['kind']:<9} {e['model'] or e['summary']}{tokens}"

    emit_rows(run(ctx, body), wants_json(ctx, json_), line)


@ledger_app.command("totals")
def ledger_totals(ctx: typer.Context, since: SinceOpt = None, json_: JsonOpt = False) -> None:
    """LLM calls, tokens and cost (since a time)."""
    st = state(ctx)

    async def body() -> dict[str, float]:
        async with opened(st) as services:
            return await services.ledger.totals(since=_since(since))

    data = run(ctx, body)
    emit(data, wants_json(ctx, json_), lambda: print_fields(data))

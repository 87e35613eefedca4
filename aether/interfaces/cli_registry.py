"""``aether tools ...`` (the tool registry) and ``aether ledger ...`` (the agent ledger)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer
from redis.asyncio import Redis

from aether.errors import InvalidOperationError
from aether.interfaces.cli_memory import since_option
from aether.interfaces.common import (
    AppState,
    JsonOpt,
    emit,
    group,
    local_time,
    print_fields,
    read_operator_zone,
    redis_client,
    run,
    state,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.operations import ranges
from aether.registry.factory import RegistryAndLedger, open_registry
from aether.registry.model import KINDS, LedgerKind

tools_app = group("The tool registry: registered tools and their versions.")
ledger_app = group("The agent ledger: actions, tool calls, LLM calls and cost.")
SinceOpt = Annotated[str | None, typer.Option("--since", help="7d, 12h, 30m or ISO-8601.")]


@asynccontextmanager
async def opened(st: AppState) -> AsyncIterator[tuple[RegistryAndLedger, Redis]]:
    """The configured registry and ledger (and the Redis client) for a command."""
    async with redis_client(st.settings) as client:
        services = open_registry(st.settings, client, actor="cli")
        try:
            yield services, client
        finally:
            await services.close()


@tools_app.command("list")
def tools_list(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Registered tools, latest versions."""
    st = state(ctx)

    async def body() -> list[dict[str, Any]]:
        async with opened(st) as (services, _client):
            return [t.to_dict() for t in await services.registry.tools()]

    columns: list[Column[dict[str, Any]]] = [
        Column("name", lambda t: t["name"], whole=True),
        Column("version", lambda t: f"v{t['version']}"),
        Column("description", lambda t: t["description"]),
    ]
    emit_table(run(ctx, body), wants_json(ctx, json_), columns, empty="no registered tools")


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
        async with opened(st) as (services, _client):
            return (await services.registry.get(name, version)).to_dict()

    tool = run(ctx, body)
    emit(tool, wants_json(ctx, json_), None)


def _since(ctx: typer.Context, value: str | None) -> float | None:
    when = since_option(ctx, value)
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
    since_at = _since(ctx, since)

    async def body() -> tuple[list[dict[str, Any]], ZoneInfo]:
        if kind is not None and kind not in KINDS:
            raise InvalidOperationError(f"--kind is one of {', '.join(KINDS)}")
        async with opened(st) as (services, client):
            entries = await services.ledger.entries(kind=kind, since=since_at, limit=limit)
            zone = await read_operator_zone(client, st.keys)
            return [e.to_dict() for e in entries], zone

    entries, zone = run(ctx, body)
    columns: list[Column[dict[str, Any]]] = [
        Column("when", lambda e: local_time(e["at"], zone), whole=True),
        Column("kind", lambda e: e["kind"]),
        Column("what", lambda e: e["model"] or e["summary"]),
        Column("tokens", _tokens, justify="right"),
        Column("cost", lambda e: f"${e['cost_usd']:.6f}" if _is_llm(e) else "", justify="right"),
    ]
    emit_table(entries, wants_json(ctx, json_), columns, empty="no ledger entries")


def _is_llm(entry: dict[str, Any]) -> bool:
    return bool(entry["kind"] == "llm_call")


def _tokens(entry: dict[str, Any]) -> str:
    return f"{entry['prompt_tokens']}+{entry['completion_tokens']}" if _is_llm(entry) else ""


@ledger_app.command("totals")
def ledger_totals(ctx: typer.Context, since: SinceOpt = None, json_: JsonOpt = False) -> None:
    """LLM calls, tokens and cost (since a time)."""
    st = state(ctx)
    since_at = _since(ctx, since)

    async def body() -> dict[str, float]:
        async with opened(st) as (services, _client):
            return await services.ledger.totals(since=since_at)

    data = run(ctx, body)
    emit(data, wants_json(ctx, json_), lambda: print_fields(data))

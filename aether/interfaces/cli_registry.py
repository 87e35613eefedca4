"""``aether tools ...`` (the tool registry) and ``aether ledger ...`` (the agent ledger)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aether.interfaces.cli_memory import since_option
from aether.interfaces.common import (
    JsonOpt,
    arguments,
    call,
    call_in_zone,
    emit,
    fail,
    group,
    local_time,
    print_fields,
    state,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.operations import NoArgs, ranges
from aether.operations import ledger as ledger_ops
from aether.registry.model import KINDS, LedgerKind

tools_app = group("The tool registry: registered tools and their versions.")
ledger_app = group("The agent ledger: actions, tool calls, LLM calls and cost.")
SinceOpt = Annotated[str | None, typer.Option("--since", help="7d, 12h, 30m or ISO-8601.")]


@tools_app.command("list")
def tools_list(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Registered tools, latest versions."""
    found = call(ctx, ledger_ops.tools_list, NoArgs())
    columns: list[Column[dict[str, Any]]] = [
        Column("name", lambda t: t["name"], whole=True),
        Column("version", lambda t: f"v{t['version']}"),
        Column("description", lambda t: t["description"]),
    ]
    emit_table(found.tools, wants_json(ctx, json_), columns, empty="no registered tools")


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
    args = arguments(ctx, ledger_ops.ToolArgs, name=name, version=version)
    emit(call(ctx, ledger_ops.tools_show, args), wants_json(ctx, json_), None)


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
    if kind is not None and kind not in KINDS:
        fail(f"--kind is one of {', '.join(KINDS)}", state(ctx).json, kind="invalid")
    args = arguments(
        ctx, ledger_ops.LedgerListArgs, kind=kind, since=_since(ctx, since), limit=limit
    )
    found, zone = call_in_zone(ctx, ledger_ops.ledger_list, args)
    columns: list[Column[dict[str, Any]]] = [
        Column("when", lambda e: local_time(e["at"], zone), whole=True),
        Column("kind", lambda e: e["kind"]),
        Column("what", lambda e: e["model"] or e["summary"]),
        Column("tokens", _tokens, justify="right"),
        Column("cost", lambda e: f"${e['cost_usd']:.6f}" if _is_llm(e) else "", justify="right"),
    ]
    emit_table(found.entries, wants_json(ctx, json_), columns, empty="no ledger entries")


def _is_llm(entry: dict[str, Any]) -> bool:
    return bool(entry["kind"] == "llm_call")


def _tokens(entry: dict[str, Any]) -> str:
    return f"{entry['prompt_tokens']}+{entry['completion_tokens']}" if _is_llm(entry) else ""


@ledger_app.command("totals")
def ledger_totals(ctx: typer.Context, since: SinceOpt = None, json_: JsonOpt = False) -> None:
    """LLM calls, tokens and cost (since a time)."""
    args = arguments(ctx, ledger_ops.TotalsArgs, since=_since(ctx, since))
    data = call(ctx, ledger_ops.ledger_totals, args)
    emit(data, wants_json(ctx, json_), lambda: print_fields(data))

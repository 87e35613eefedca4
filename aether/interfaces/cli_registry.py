"""``aether tools ...`` (the tool registry) and ``aether ledger ...`` (the agent ledger)."""

from __future__ import annotations

from typing import Any

from aether.interfaces.commands import Out, command
from aether.interfaces.common import (
    group,
    local_time,
    print_fields,
)
from aether.interfaces.tables import Column
from aether.operations import ledger as ledger_ops

tools_app = group("The tool registry: registered tools and their versions.")
ledger_app = group("The agent ledger: actions, tool calls, LLM calls and cost.")


@command(tools_app, "list", ledger_ops.tools_list)
def _tools(found: ledger_ops.Tools, out: Out[ledger_ops.Tools]) -> None:
    """Registered tools, latest versions."""
    columns: list[Column[dict[str, Any]]] = [
        Column("name", lambda t: t["name"], whole=True),
        Column("version", lambda t: f"v{t['version']}"),
        Column("description", lambda t: t["description"]),
    ]
    out.table(found.tools, columns, empty="no registered tools")


def _is_llm(entry: dict[str, Any]) -> bool:
    return bool(entry["kind"] == "llm_call")


def _tokens(entry: dict[str, Any]) -> str:
    return f"{entry['prompt_tokens']}+{entry['completion_tokens']}" if _is_llm(entry) else ""


@command(ledger_app, "list", ledger_ops.ledger_list, zone=True)
def _entries(found: ledger_ops.LedgerEntries, out: Out[ledger_ops.LedgerEntries]) -> None:
    """Ledger entries, newest first."""
    columns: list[Column[dict[str, Any]]] = [
        Column("when", lambda e: local_time(e["at"], out.zone), whole=True),
        Column("kind", lambda e: e["kind"]),
        Column("what", lambda e: e["model"] or e["summary"]),
        Column("tokens", _tokens, justify="right"),
        Column("cost", lambda e: f"${e['cost_usd']:.6f}" if _is_llm(e) else "", justify="right"),
    ]
    out.table(found.entries, columns, empty="no ledger entries")


@command(tools_app, "show", ledger_ops.tools_show)
def _tool_schema(schema: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """One tool's schema (latest version unless given)."""
    out.emit(schema)


@command(ledger_app, "totals", ledger_ops.ledger_totals)
def _totals(data: dict[str, float], out: Out[dict[str, float]]) -> None:
    """LLM calls, tokens and cost (since a time)."""
    out.emit(data, lambda: print_fields(data))

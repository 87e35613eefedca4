"""Ledger operations: what the agent did and spent, entry by entry and day by day."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from aether.operations.base import Caller, NoArgs, for_the_cli, operation
from aether.operations.parts import Parts
from aether.operations.ranges import LEDGER_LIMIT, VERSION
from aether.registry.model import LedgerQuery

__all__ = ["ledger_days", "ledger_list", "ledger_totals", "tools_list", "tools_show"]


SINCE = for_the_cli(parser="since")


class LedgerListArgs(BaseModel):
    """Arguments of ``ledger_list``."""

    kind: Literal["action", "llm_call", "tool_call"] | None = Field(
        default=None, description="Only entries of this kind."
    )
    since: float | None = Field(
        default=None,
        ge=0,
        description="Only entries from this time on (epoch seconds).",
        json_schema_extra=SINCE,
    )
    limit: int = Field(
        default=100,
        ge=LEDGER_LIMIT.low,
        le=LEDGER_LIMIT.high,
        description="The newest this many.",
        json_schema_extra=for_the_cli(default=50),
    )
    before: float | None = Field(
        default=None, ge=0, description="Only entries older than this (epoch seconds): a page."
    )


class LedgerEntries(BaseModel):
    """Ledger entries, newest first."""

    entries: list[dict[str, Any]]


@operation(read_only=True, agent=False)
async def ledger_list(parts: Parts, caller: Caller, args: LedgerListArgs) -> LedgerEntries:
    """The agent ledger's entries, newest first.

    Model calls (tokens, cost), tool calls (outcome, approval, files changed), actions.
    """
    query = LedgerQuery(kind=args.kind, since=args.since, limit=args.limit, before=args.before)
    entries = await parts.ledger().entries(query)
    return LedgerEntries(entries=[e.to_dict() for e in entries])


class LedgerDaysArgs(BaseModel):
    """Arguments of ``ledger_days``."""

    days: int = Field(default=14, ge=1, le=366, description="How many days back (UTC).")


class LedgerDay(BaseModel):
    """One UTC day's totals."""

    day: str
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    tool_calls: int


class LedgerDays(BaseModel):
    """Totals per UTC day, oldest first (every day of the range, idle ones as zeros)."""

    days: list[LedgerDay]


@operation(read_only=True, agent=False)
async def ledger_days(parts: Parts, caller: Caller, args: LedgerDaysArgs) -> LedgerDays:
    """Tokens, cost and tool calls per UTC day over the last ``days`` days."""
    today = datetime.fromtimestamp(time.time(), UTC).date()
    first = today - timedelta(days=args.days - 1)
    since = datetime(first.year, first.month, first.day, tzinfo=UTC).timestamp()
    rows = {
        (first + timedelta(days=i)).isoformat(): LedgerDay(
            day=(first + timedelta(days=i)).isoformat(),
            llm_calls=0,
            prompt_tokens=0,
            completion_tokens=0,
            cost_usd=0.0,
            tool_calls=0,
        )
        for i in range(args.days)
    }
    for entry in await parts.ledger().entries(LedgerQuery(since=since, limit=0)):
        row = rows.get(datetime.fromtimestamp(entry.at, UTC).date().isoformat())
        if row is None:
            continue
        row.cost_usd = round(row.cost_usd + entry.cost_usd, 8)
        if entry.kind == "llm_call":
            row.llm_calls += 1
            row.prompt_tokens += entry.prompt_tokens
            row.completion_tokens += entry.completion_tokens
        elif entry.kind == "tool_call":
            row.tool_calls += 1
    return LedgerDays(days=list(rows.values()))


class TotalsArgs(BaseModel):
    """Arguments of ``ledger_totals``."""

    since: float | None = Field(
        default=None,
        ge=0,
        description="Only from this time on (epoch seconds).",
        json_schema_extra=SINCE,
    )


@operation(read_only=True, agent=False)
async def ledger_totals(parts: Parts, caller: Caller, args: TotalsArgs) -> dict[str, float]:
    """The model calls, their tokens and their cost (since a time, if given)."""
    return await parts.ledger().totals(since=args.since)


class Tools(BaseModel):
    """Registered tools, each at its latest version."""

    tools: list[dict[str, Any]]


@operation(read_only=True, agent=False)
async def tools_list(parts: Parts, caller: Caller, args: NoArgs) -> Tools:
    """The tool registry: every tool the agent was offered, at its latest version."""
    return Tools(tools=[t.to_dict() for t in await parts.services().registry.tools()])


class ToolArgs(BaseModel):
    """Arguments of ``tools_show``."""

    name: str = Field(
        min_length=1,
        max_length=200,
        description="The tool's name.",
        json_schema_extra=for_the_cli(argument="name"),
    )
    version: int | None = Field(
        default=None, ge=VERSION.low, le=VERSION.high, description="A given version."
    )


@operation(read_only=True, agent=False)
async def tools_show(parts: Parts, caller: Caller, args: ToolArgs) -> dict[str, Any]:
    """One registered tool's schema (its latest version unless one is given)."""
    return (await parts.services().registry.get(args.name, args.version)).to_dict()

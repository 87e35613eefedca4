"""The daily spending cap: the ledger's LLM cost since midnight (UTC).

The cap is ``AETHER_LLM__DAILY_BUDGET_USD``.
Past the cap the daemon pauses its heartbeat, answers messages with the notice, and says
``degraded`` with the reason; it resumes by itself on the next UTC day (or when the
operator raises the cap and restarts it).
"""

from __future__ import annotations

from datetime import UTC, datetime

from aether.registry.model import AgentLedger

__all__ = ["over_budget"]


async def over_budget(ledger: AgentLedger, limit_usd: float | None, now: float) -> str | None:
    """Why the agent must pause (``None``: within the cap, or no cap)."""
    if limit_usd is None:
        return None
    day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    spent = float((await ledger.totals(since=day.timestamp()))["cost_usd"])
    if spent < limit_usd:
        return None
    return (
        f"daily LLM budget spent: ${spent:.4f} of ${limit_usd:.2f} since "
        f"{day.date().isoformat()} 00:00 UTC; the heartbeat is paused and messages are "
        "answered with this notice until the next UTC day"
    )

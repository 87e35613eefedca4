"""What the daemon knows of its own health, published for ``aether status``.

The daemon keeps one :class:`Health`, updated by its supervisor (Redis outages, tasks
restarting) and its LLM client (failures, the circuit breaker), and writes it to
``ns:daemon:health`` with each beat (a TTL of one lease period), so a status read never
has to trust a pid alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from aether.runtime.llm import CircuitBreaker

State = Literal["starting", "up", "degraded"]


@dataclass
class Health:
    """The daemon's state and, when degraded, why."""

    ready: bool = False
    redis_down_since: float | None = None
    redis_error: str | None = None
    restarting: dict[str, str] = field(default_factory=dict)
    llm: CircuitBreaker | None = None  # the LLM client's, read at each beat
    budget: str | None = None  # the daily spending cap, when it is reached
    mcp: Callable[[], list[dict[str, Any]]] | None = None  # the MCP servers' states
    erasure: str | None = None  # an interrupted erasure the daemon could not finish
    runs: dict[str, Any] = field(default_factory=dict)  # what it runs (``status.running``)

    @property
    def state(self) -> State:
        """``starting`` until the daemon can answer, then ``up`` or ``degraded``."""
        if not self.ready:
            return "starting"
        return "degraded" if self.reasons() else "up"

    def reasons(self) -> list[str]:
        """Why the daemon is degraded, one line each (empty when it is not)."""
        out = []
        if self.redis_down_since is not None:
            out.append(f"redis unavailable since {_iso(self.redis_down_since)}: {self.redis_error}")
        llm = self.llm
        if llm is not None and llm.failing_since is not None:
            line = f"llm failing since {_iso(llm.failing_since)} at {llm.url}: {llm.last_error}"
            if llm.open_until is not None and llm.open_until > llm.clock():
                line += f" (calls fail at once until {_iso(llm.open_until)})"
            out.append(line)
        if self.budget:
            out.append(self.budget)
        if self.erasure:
            out.append(self.erasure)
        out += [f"task {name} restarting after: {error}" for name, error in self.restarting.items()]
        return out

    def redis_lost(self, error: BaseException, now: float | None = None) -> bool:
        """Note that Redis is unreachable; True the first time (log it once)."""
        first = self.redis_down_since is None
        if first:
            self.redis_down_since = time.time() if now is None else now
        self.redis_error = str(error) or type(error).__name__
        return first

    def redis_back(self) -> float:
        """Note that Redis answers again; returns how long it was away (seconds)."""
        away = time.time() - self.redis_down_since if self.redis_down_since else 0.0
        self.redis_down_since = None
        self.redis_error = None
        return away

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``ns:daemon:health`` and ``status --json``."""
        servers = self.mcp() if self.mcp is not None else []
        return {
            "state": self.state,
            "reasons": self.reasons(),
            "at": time.time(),
            "mcp": servers,
            "runs": self.runs,
        }


def _iso(timestamp: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat(timespec="seconds")

"""The registry's and the ledger's records, their validation and the backend Protocols."""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, get_args

from aether.errors import InvalidOperationError
from aether.ids import new_id

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_SCHEMA_BYTES = 64 * 1024
MAX_DETAIL_BYTES = 64 * 1024
LedgerKind = Literal["action", "llm_call", "tool_call"]
KINDS: tuple[str, ...] = get_args(LedgerKind)


@dataclass(frozen=True)
class ToolRecord:
    """One version of a registered tool."""

    name: str
    version: int
    description: str
    schema: dict[str, Any]
    registered_at: float

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return asdict(self)


@dataclass(frozen=True)
class LedgerEntry:
    """One append-only ledger record."""

    id: str
    kind: str
    at: float
    actor: str = "agent"
    session: str = ""
    summary: str = ""
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    duration_ms: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return asdict(self)


def check_tool(name: str, description: str, schema: dict[str, Any]) -> str:
    """Validate a tool; returns its canonical schema JSON (sorted keys).

    Raises:
        InvalidOperationError: a bad name, an empty description, a schema that is not a
            JSON object schema, or one over 64 KB.
    """
    if not _TOOL_NAME.match(name):
        raise InvalidOperationError(f"tool name {name[:70]!r}: 1-64 of A-Z a-z 0-9 _ -")
    if not description.strip() or len(description) > 2000:
        raise InvalidOperationError("a tool needs a description of 1-2000 characters")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise InvalidOperationError("a tool's schema must be a JSON schema of type object")
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    if len(canonical) > MAX_SCHEMA_BYTES:
        raise InvalidOperationError("a tool's schema is over 64 KB")
    return canonical


def new_entry(kind: str, **fields: Any) -> LedgerEntry:
    """A validated ledger entry.

    Raises:
        InvalidOperationError: unknown kind, negative counts or cost, a detail over 64 KB.
    """
    if kind not in KINDS:
        raise InvalidOperationError(f"ledger kind is one of {', '.join(KINDS)}")
    for name in ("prompt_tokens", "completion_tokens", "cost_usd", "duration_ms"):
        if float(fields.get(name, 0) or 0) < 0:
            raise InvalidOperationError(f"{name} cannot be negative")
    detail = fields.pop("detail", None) or {}
    if len(json.dumps(detail, default=str)) > MAX_DETAIL_BYTES:
        raise InvalidOperationError("a ledger entry's detail is over 64 KB")
    known = {k: v for k, v in fields.items() if v is not None}
    return LedgerEntry(id=new_id(), kind=kind, at=time.time(), detail=detail, **known)


@dataclass(frozen=True)
class LedgerQuery:
    """Which ledger entries to read.

    Attributes:
        kind: only entries of this kind.
        since: only entries from this time on (epoch seconds).
        limit: at most this many, the newest (0: no limit).
        before: only entries older than this time: a page.
    """

    kind: str | None = None
    since: float | None = None
    limit: int = 100
    before: float | None = None


EVERY = LedgerQuery()
"""The newest 100 entries of every kind."""


class ToolRegistry(Protocol):
    """Tools with JSON schemas, versioned: a changed schema or description is a new version."""

    async def register(self, name: str, description: str, schema: dict[str, Any]) -> ToolRecord:
        """Register a tool (the same definition again returns the current version)."""
        ...

    async def get(self, name: str, version: int | None = None) -> ToolRecord:
        """A tool's latest (or given) version; raises ``NotFoundError``."""
        ...

    async def tools(self) -> list[ToolRecord]:
        """The latest version of every tool, by name."""
        ...

    async def versions(self, name: str) -> list[ToolRecord]:
        """Every version of a tool, oldest first; raises ``NotFoundError``."""
        ...


class AgentLedger(Protocol):
    """An append-only record of what the agent did and what its model calls cost."""

    async def append(self, entry: LedgerEntry) -> LedgerEntry:
        """Add an entry; entries are never changed or removed."""
        ...

    async def entries(self, query: LedgerQuery = EVERY) -> list[LedgerEntry]:
        """The entries ``query`` asks for, newest first."""
        ...

    async def totals(self, since: float | None = None) -> dict[str, float]:
        """LLM calls, tokens and cost since a time."""
        ...


def pick_version(every: list[ToolRecord], name: str, version: int | None) -> ToolRecord:
    """The latest record, or the one of ``version``.

    Raises:
        NotFoundError: the tool has no such version.
    """
    from aether.errors import NotFoundError

    if version is None:
        return every[-1]
    found = [r for r in every if r.version == version]
    if not found:
        raise NotFoundError(f"tool {name!r} has no version {version}")
    return found[0]


def totals_of(entries: list[LedgerEntry]) -> dict[str, float]:
    """Sums over ledger entries."""
    calls = [e for e in entries if e.kind == "llm_call"]
    return {
        "llm_calls": len(calls),
        "prompt_tokens": sum(e.prompt_tokens for e in calls),
        "completion_tokens": sum(e.completion_tokens for e in calls),
        "cost_usd": round(sum(e.cost_usd for e in entries), 6),
        "actions": sum(1 for e in entries if e.kind != "llm_call"),
    }

"""Decision and failure memory (docs/design.md, "Decisions, failures and scopes").

A decision (``ns:decision:<id>``) records what was chosen and why, and later how it
turned out. A failure (``ns:failure:<id>``) records an error with its pattern key; the
pattern's counter (``ns:patterns``) and record (``ns:pattern:<key>``) change in the same
journaled step, and at the third occurrence the pattern is *detected*: from then on
context assembly lists it under known failure patterns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from aether.codec import byte_map, text, texts
from aether.errors import InvalidOperationError, NotFoundError
from aether.ids import check_id
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import Decision, Failure, MemoryDoc, base_record
from aether.memory.storage.scopes import check_scope
from aether.memory.tiers.memory_index import count_ops
from aether.memory.tiers.patterns import pattern_key
from aether.store.state import Mutation

DecisionOutcome = Literal["pending", "accepted", "rejected", "success", "failure", "partial"]
DECISION_OUTCOMES: tuple[str, ...] = get_args(DecisionOutcome)
DETECT_AT = 3
_PATTERN_ID = r"^[a-z0-9_]{1,64}$"


class DecisionMemory:
    """Decisions and their outcomes."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys

    async def record(
        self,
        title: str,
        choice: str,
        rationale: str = "",
        *,
        outcome: str = "pending",
        scope: str | None = None,
        tags: list[str] | None = None,
    ) -> Decision:
        """Store a decision.

        Raises:
            InvalidOperationError: empty title or choice, unknown outcome or bad scope.
        """
        if not title.strip() or not choice.strip():
            raise InvalidOperationError("a decision needs a title and a choice")
        if outcome not in DECISION_OUTCOMES:
            raise InvalidOperationError(f"outcome is one of {', '.join(DECISION_OUTCOMES)}")
        why = f". {rationale.strip()}" if rationale.strip() else ""
        text_ = f"{title.strip()}: {choice.strip()}{why}"
        doc = base_record(
            "decision",
            text_,
            max_bytes=self.memory.settings.max_content_bytes,
            source="agent",
            tags=["decision", *(tags or [])],
            score=0.6,
            timestamp=None,
            record_id=None,
        )
        doc.update(
            {
                "title": title.strip(),
                "choice": choice.strip(),
                "rationale": rationale,
                "outcome": outcome,
                "scope": check_scope(scope),
                "outcome_note": "",
            }
        )
        await self.memory.attach_embeddings([doc])
        m = self.memory.put(Mutation(), self.keys.decision(doc["id"]), doc)
        count_ops(m, self.keys, [doc])
        await self.memory.store.apply(m, "decision.record")
        doc.pop("embedding", None)
        return doc

    async def set_outcome(self, decision_id: str, outcome: str, note: str = "") -> None:
        """Record how a decision turned out.

        Raises:
            NotFoundError: no such decision. InvalidOperationError: unknown outcome.
        """
        if outcome not in DECISION_OUTCOMES:
            raise InvalidOperationError(f"outcome is one of {', '.join(DECISION_OUTCOMES)}")
        key = self.keys.decision(check_id(decision_id))
        if not await self.memory.client.exists(key):
            raise NotFoundError(f"no decision {decision_id!r}")
        m = (
            Mutation()
            .json_set(key, outcome, "$.outcome")
            .json_set(key, note[:2000], "$.outcome_note")
        )
        await self.memory.store.apply(m, "decision.outcome")

    async def list(self, scope: str | None = None, limit: int = 50) -> list[MemoryDoc]:
        """Decisions (of a scope), newest first."""
        wanted = check_scope(scope) if scope else None
        prefix = self.keys.decision("")
        keys = [text(k) async for k in self.memory.client.scan_iter(match=prefix + "*", count=1000)]
        fields = (
            "id",
            "title",
            "choice",
            "rationale",
            "outcome",
            "outcome_note",
            "scope",
            "timestamp",
        )
        docs = [
            d
            for d in await self.memory.get_docs(keys, fields)
            if d and (wanted is None or d.get("scope") == wanted)
        ]
        docs.sort(key=lambda d: d["timestamp"], reverse=True)
        return docs[:limit]


@dataclass(frozen=True)
class FailureRecorded:
    """What recording a failure did."""

    failure: Failure
    pattern: str
    occurrences: int
    detected: bool  # this occurrence is the one that makes it a known pattern


class FailureMemory:
    """Failures and the patterns they repeat."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys

    async def record(
        self,
        error: str,
        *,
        context: str = "",
        pattern: str | None = None,
        scope: str | None = None,
        event: str | None = None,
        now: float | None = None,
    ) -> FailureRecorded:
        """Store a failure; its pattern is counted and detected at the third occurrence.

        Raises:
            InvalidOperationError: an empty error, a malformed pattern key or scope.
        """
        import re

        if not error.strip():
            raise InvalidOperationError("a failure needs its error message")
        key = pattern or pattern_key(error)
        if not re.match(_PATTERN_ID, key):
            raise InvalidOperationError("a pattern key is 1-64 of a-z, 0-9 and _")
        when = now or time.time()
        doc = base_record(
            "failure",
            f"{error.strip()}\n{context.strip()}".strip(),
            max_bytes=self.memory.settings.max_content_bytes,
            source="system",
            tags=["failure"],
            score=0.6,
            timestamp=when,
            record_id=None,
        )
        doc.update(
            {
                "error": error.strip()[:2000],
                "context": context[:4000],
                "pattern": key,
                "scope": check_scope(scope),
                "event": event or "",
            }
        )
        current = await self.memory.client.zscore(self.keys.failure_patterns(), key)
        count = int(current or 0) + 1
        detected = count == DETECT_AT
        fields: dict[str, str | float] = {
            "key": key,
            "count": count,
            "last_seen": when,
            "example": error.strip()[:500],
            "scope": doc["scope"],
        }
        if count == 1:
            fields["first_seen"] = when
        if detected:
            fields["detected_at"] = when
        await self.memory.attach_embeddings([doc])
        m = self.memory.put(Mutation(), self.keys.failure(doc["id"]), doc)
        count_ops(m, self.keys, [doc])
        m.zincrby(self.keys.failure_patterns(), 1, key)
        m.hset(self.keys.failure_pattern(key), fields)
        await self.memory.store.apply(m, "failure.record")
        doc.pop("embedding", None)
        return FailureRecorded(doc, key, count, detected)

    async def patterns(
        self, min_count: int = DETECT_AT, scope: str | None = None
    ) -> list[dict[str, str | int]]:
        """Known patterns (seen at least ``min_count`` times), most frequent first."""
        keys = texts(
            await self.memory.client.zrevrangebyscore(
                self.keys.failure_patterns(), "+inf", min_count
            )
        )
        pipe = self.memory.client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(self.keys.failure_pattern(key))
        out = []
        for raw in await pipe.execute():
            doc: dict[str, str | int] = {text(k): text(v) for k, v in byte_map(raw).items()}
            if not doc:
                continue
            doc["count"] = int(doc["count"])
            if scope and doc.get("scope") not in (check_scope(scope), "global"):
                continue
            out.append(doc)
        return out


def pattern_line(pattern: Mapping[str, object]) -> str:
    """One known pattern as a context line."""
    return (
        f"- {pattern['key']} ({pattern['count']} occurrences): "
        f"{json.dumps(pattern.get('example', ''))[1:-1][:160]}"
    )

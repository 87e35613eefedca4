"""The memory index: a compact table of the topics memory holds.

Why: docs/design.md, "The memory index".

"The agent doesn't know what it doesn't know": without a list of what memory holds it
either searches blindly or misses what is there. The table (tag, how many memories,
when last seen, plus the totals per kind) costs 100-300 tokens whatever the memory's
size. It is kept current on write: every memory write adds counter ops for its kind and
tags to the same journaled change, so reading the index is one pipelined round trip and
a rollback takes the counters back with the memories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aether.codec import text
from aether.keys import Keyspace
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import MEMORY_KINDS, MemoryDoc, MemoryRecord, memory_prefixes
from aether.memory.storage.status import is_active
from aether.store.state import Mutation
from aether.tokens import count_tokens

MAX_ROWS = 60


def _label(kind: str) -> str:
    spec = MEMORY_KINDS.get(kind)
    return spec.label if spec else kind


def count_ops(m: Mutation, keys: Keyspace, docs: Iterable[MemoryRecord], sign: int = 1) -> None:
    """Add to ``m`` the counter changes for writing (``sign=1``) or deleting (-1) ``docs``."""
    kinds: dict[str, int] = {}
    tags: dict[str, int] = {}
    seen: dict[str, float] = {}
    for doc in docs:
        kinds[doc.get("kind", "")] = kinds.get(doc.get("kind", ""), 0) + 1
        for tag in doc.get("tags") or []:
            tags[tag] = tags.get(tag, 0) + 1
            seen[tag] = max(seen.get(tag, 0.0), float(doc.get("timestamp", 0.0)))
    for kind, n in kinds.items():
        m.zincrby(keys.memory_counts(), sign * n, kind)
    for tag, n in tags.items():
        m.zincrby(keys.memory_topics(), sign * n, tag)
    if sign > 0 and seen:
        m.zadd(keys.memory_topics_seen(), seen, gt=True)


@dataclass(frozen=True)
class MemoryIndexTable:
    """The rendered index."""

    text: str
    tokens: int
    rows: int
    topics: int
    counts: dict[str, int] = field(default_factory=dict)


def _day(ts: float | None) -> str:
    return "-" if not ts else datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d")


class MemoryIndex:
    """Reads (and, for old namespaces, rebuilds) the topic counters."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys

    async def read(self, max_tokens: int = 300) -> MemoryIndexTable:
        """The table within ``max_tokens``: most common topics first."""
        pipe = self.memory.client.pipeline(transaction=False)
        pipe.zrange(self.keys.memory_counts(), 0, -1, withscores=True)
        pipe.zrevrangebyscore(
            self.keys.memory_topics(), "+inf", "(0", start=0, num=MAX_ROWS, withscores=True
        )
        pipe.zcount(self.keys.memory_topics(), "(0", "+inf")
        counts_raw, topics_raw, total_topics = await pipe.execute()
        counts = {text(k): int(v) for k, v in counts_raw if v > 0}
        topics = [(text(k), int(v)) for k, v in topics_raw]
        seen: list[float | None] = []
        if topics:
            seen = await self.memory.client.zmscore(
                self.keys.memory_topics_seen(), [t for t, _ in topics]
            )
        total = sum(counts.values())
        if not total:
            head = "Memory is empty."
        else:
            parts = ", ".join(f"{n:,} {_label(k)}" for k, n in sorted(counts.items()))
            head = f"Memory holds {total:,} items ({parts}). Search it for details."
        lines = [head]
        used = count_tokens(head)
        rows = 0
        if topics:
            table_head = "| Topic | Items | Last |\n|---|---|---|"
            used += count_tokens(table_head) + 1
            body: list[str] = []
            for (tag, n), ts in zip(topics, seen, strict=True):
                row = f"| {tag.replace('|', '/')} | {n} | {_day(ts)} |"
                cost = count_tokens(row) + 1
                if used + cost > max_tokens - 12:  # room for the "more topics" line
                    break
                body.append(row)
                used += cost
            if body:
                lines += [table_head, *body]
                rows = len(body)
            if total_topics > rows:
                lines.append(f"(+{total_topics - rows} more topics)")
        rendered = "\n".join(lines)
        tokens = count_tokens(rendered)
        return MemoryIndexTable(rendered, tokens, rows, int(total_topics), counts)

    async def _documents(self, progress: Callable[[int], None] | None = None) -> list[MemoryDoc]:
        """The counted fields of every memory document (beliefs while active)."""
        keys: list[str] = []
        for prefix in memory_prefixes(self.keys):
            keys += [
                text(k) async for k in self.memory.client.scan_iter(match=prefix + "*", count=1000)
            ]
        docs: list[MemoryDoc] = []
        for start in range(0, len(keys), 500):
            batch = await self.memory.get_docs(
                keys[start : start + 500], ("kind", "tags", "timestamp", "status")
            )
            # beliefs count while active, as the incremental counters do
            docs += [d for d in batch if d and d.get("kind") and is_active(d.get("status"))]
            if progress is not None:
                progress(len(batch))
        return docs

    async def recount(self) -> dict[str, dict[str, int]]:
        """What the counters must say, counted from the documents (nothing is written)."""
        kinds: dict[str, int] = {}
        topics: dict[str, int] = {}
        for doc in await self._documents():
            kinds[doc["kind"]] = kinds.get(doc["kind"], 0) + 1
            for tag in doc.get("tags") or []:
                topics[tag] = topics.get(tag, 0) + 1
        return {"kinds": kinds, "topics": topics}

    async def counters(self) -> dict[str, dict[str, int]]:
        """What the counters say now (zero counts left out), to compare with a recount."""
        pipe = self.memory.client.pipeline(transaction=False)
        pipe.zrange(self.keys.memory_counts(), 0, -1, withscores=True)
        pipe.zrange(self.keys.memory_topics(), 0, -1, withscores=True)
        kinds, topics = await pipe.execute()
        return {
            "kinds": {text(k): int(v) for k, v in kinds if v},
            "topics": {text(k): int(v) for k, v in topics if v},
        }

    async def rebuild(self, progress: Callable[[int], None] | None = None) -> dict[str, int]:
        """Recount from the documents (for namespaces written before the index existed).

        Args:
            progress: told how many more documents were read, batch by batch.
        """
        docs = await self._documents(progress)
        m = Mutation()
        for key in (
            self.keys.memory_counts(),
            self.keys.memory_topics(),
            self.keys.memory_topics_seen(),
        ):
            m.delete(key)
        count_ops(m, self.keys, docs)
        await self.memory.store.apply(m, "memory.index.rebuild")
        kinds: dict[str, int] = {}
        for doc in docs:
            kinds[doc["kind"]] = kinds.get(doc["kind"], 0) + 1
        return kinds

"""Tier 2, long-term memory: distilled JSON documents, permanent until flushed."""

from __future__ import annotations

from datetime import datetime

from aether.codec import text
from aether.errors import InvalidOperationError, NotFoundError
from aether.ids import check_id
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import LongTermRecord, MemoryDoc, base_record
from aether.memory.tiers.memory_index import count_ops
from aether.store.checkpointer import Checkpointer
from aether.store.state import Mutation

FLUSH_BATCH = 500


def build_memory(
    memory: MemoryLayer,
    content: str,
    *,
    source: str = "agent",
    tags: list[str] | None = None,
    score: float = 0.5,
    sources: list[str] | None = None,
    timestamp: datetime | float | None = None,
    memory_id: str | None = None,
) -> LongTermRecord:
    """A validated long-term memory document (without its embedding)."""
    doc = base_record(
        "longterm",
        content,
        max_bytes=memory.settings.max_content_bytes,
        source=source,
        tags=tags,
        score=score,
        timestamp=timestamp,
        record_id=memory_id,
    )
    doc["sources"] = [check_id(s, "source entry id") for s in sources or []]
    return doc


class LongTermMemory:
    """Distilled memories that outlive the daily logs."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys

    async def add(
        self,
        content: str,
        source: str = "agent",
        tags: list[str] | None = None,
        score: float = 0.5,
        sources: list[str] | None = None,
        timestamp: datetime | float | None = None,
    ) -> LongTermRecord:
        """Store a memory; ``sources`` are the daily entry ids it was distilled from."""
        doc = build_memory(
            self.memory,
            content,
            source=source,
            tags=tags,
            score=score,
            sources=sources,
            timestamp=timestamp,
        )
        await self.memory.attach_embeddings([doc])
        m = self.memory.put(Mutation(), self.keys.longterm(doc["id"]), doc)
        count_ops(m, self.keys, [doc])
        await self.memory.store.apply(m, "memory.longterm.add")
        return doc

    async def get(self, memory_id: str) -> MemoryDoc:
        """One memory.

        Raises:
            NotFoundError: no such memory.
        """
        doc = (await self.memory.get_docs([self.keys.longterm(check_id(memory_id))]))[0]
        if doc is None:
            raise NotFoundError(f"no long-term memory {memory_id!r}")
        return doc

    async def ids(self) -> list[str]:
        """Every memory id, oldest first."""
        prefix = self.keys.longterm("")
        scan = self.memory.client.scan_iter(match=prefix + "*", count=1000)
        found = [text(raw)[len(prefix) :] async for raw in scan]
        return sorted(found)

    async def delete(self, memory_id: str) -> None:
        """Delete one memory (journaled: a rollback restores it)."""
        doc = await self.get(memory_id)
        m = self.memory.remove(Mutation(), self.keys.longterm(memory_id))
        count_ops(m, self.keys, [doc], sign=-1)
        await self.memory.store.apply(m, "memory.longterm.delete")

    async def flush(self, *, confirm: bool, checkpoints: Checkpointer, actor: str = "cli") -> int:
        """Delete every long-term memory, after a checkpoint. Returns how many.

        Raises:
            InvalidOperationError: ``confirm`` is not set; nothing is deleted.
        """
        if not confirm:
            raise InvalidOperationError("flushing long-term memory needs explicit confirmation")
        ids = await self.ids()
        if not ids:
            return 0
        await checkpoints.create(label="before long-term flush", reason="pre-flush", actor=actor)
        for start in range(0, len(ids), FLUSH_BATCH):
            m = Mutation()
            batch = [self.keys.longterm(i) for i in ids[start : start + FLUSH_BATCH]]
            for key in batch:
                self.memory.remove(m, key)
            docs = await self.memory.get_docs(batch, ("kind", "tags"))
            count_ops(m, self.keys, [d for d in docs if d], sign=-1)
            await self.memory.store.apply(m, "memory.longterm.flush", actor)
        return len(ids)

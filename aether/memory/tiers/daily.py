"""Tier 1, daily logs: an entry document plus its id appended to ``ns:daily:YYYY-MM-DD``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime

from aether.codec import texts
from aether.ids import check_id
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import DailyEntry, MemoryDoc, base_record, day_of
from aether.memory.tiers.memory_index import count_ops
from aether.store.state import Mutation


def build_entry(
    memory: MemoryLayer,
    content: str,
    *,
    source: str = "agent",
    tags: list[str] | None = None,
    score: float = 0.5,
    session: str | None = None,
    timestamp: datetime | float | None = None,
    entry_id: str | None = None,
) -> DailyEntry:
    """A validated daily entry document (without its embedding)."""
    doc = base_record(
        "daily",
        content,
        max_bytes=memory.settings.max_content_bytes,
        source=source,
        tags=tags,
        score=score,
        timestamp=timestamp,
        record_id=entry_id,
    )
    doc["session"] = check_id(session, "session id") if session else ""
    doc["day"] = day_of(doc["timestamp"])
    return doc


class DailyLog:
    """Append-only daily log of what happened."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys

    async def log(
        self,
        content: str,
        source: str = "agent",
        tags: list[str] | None = None,
        score: float = 0.5,
        session: str | None = None,
        timestamp: datetime | float | None = None,
    ) -> DailyEntry:
        """Write an entry (one journaled round trip, plus embedding when configured).

        Raises:
            InvalidOperationError: empty or oversized content, unknown source, bad tags,
                score, session id or timestamp; nothing is written.
        """
        doc = build_entry(
            self.memory,
            content,
            source=source,
            tags=tags,
            score=score,
            session=session,
            timestamp=timestamp,
        )
        await self.memory.attach_embeddings([doc])
        await self.memory.store.apply(self.mutation([doc]), "memory.log")
        return doc

    def mutation(self, docs: Sequence[DailyEntry]) -> Mutation:
        """The ops that write entries and append them to their days, in order."""
        m = Mutation()
        by_day: dict[str, list[str]] = {}
        for doc in docs:
            self.memory.put(m, self.keys.daily_entry(doc["id"]), doc)
            by_day.setdefault(doc["day"], []).append(doc["id"])
        for day, ids in by_day.items():
            m.rpush(self.keys.daily(date.fromisoformat(day)), *ids)
        count_ops(m, self.keys, docs)
        return m

    def removal(self, day: date, docs: Sequence[DailyEntry], *, whole_day: bool) -> Mutation:
        """The ops that delete ``docs`` of ``day`` (and the day's list when ``whole_day``)."""
        m = Mutation()
        for doc in docs:
            self.memory.remove(m, self.keys.daily_entry(doc["id"]))
        if whole_day:
            m.delete(self.keys.daily(day))
        count_ops(m, self.keys, docs, sign=-1)
        return m

    async def ids(self, day: date) -> list[str]:
        """Entry ids of a day, chronological."""
        return texts(await self.memory.client.lrange(self.keys.daily(day), 0, -1))

    async def list_day(self, day: date) -> list[MemoryDoc]:
        """The entries of a day, chronological.

        By their time, not by when they were written: an import or a late entry may land
        after a later one.
        """
        ids = await self.ids(day)
        docs = await self.memory.get_docs([self.keys.daily_entry(i) for i in ids])
        found = [d for d in docs if d is not None]
        return sorted(found, key=lambda d: float(d.get("timestamp") or 0.0))

    async def page_day(self, day: date, offset: int, limit: int) -> tuple[list[MemoryDoc], int]:
        """``limit`` entries of a day from ``offset`` on, chronological, and the day's count.

        The full-text index sorts and counts the day's entries by their time, so a page
        costs the same on a day of ten entries and on one of a hundred thousand; without
        the index (a fresh namespace, whose index waits for its first write) the day's
        list is read whole.
        """
        if not await self.memory.indexed():
            docs = await self.list_day(day)
            return docs[offset : offset + limit], len(docs)
        from redisvl.query import FilterQuery
        from redisvl.query.filter import Num, Tag

        start = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
        query = FilterQuery(
            filter_expression=(Tag("kind") == "daily")
            & (Num("timestamp") >= start)
            & (Num("timestamp") < start + 86_400),
            return_fields=["id"],
            num_results=limit,
            sort_by="timestamp",
        )
        query.paging(offset, limit)
        found = await self.memory.text_index().search(query.query, query_params=query.params)
        read = await self.memory.get_docs([row.id for row in found.docs])
        return [d for d in read if d is not None], int(found.total)

    async def recent(self, days: int, today: date | None = None) -> list[MemoryDoc]:
        """Entries of the last ``days`` days (``today``, default now, included), oldest first."""
        today = today or datetime.now(UTC).date()
        out: list[MemoryDoc] = []
        for offset in range(days - 1, -1, -1):
            out.extend(await self.list_day(date.fromordinal(today.toordinal() - offset)))
        return out

    async def days(self) -> list[date]:
        """Days that have a log, oldest first."""
        pattern = self.keys.daily(date(2000, 1, 1)).replace("2000-01-01", "[0-9]*-[0-9]*-[0-9]*")
        found = set()
        async for raw in self.memory.client.scan_iter(match=pattern, count=1000):
            try:
                found.add(date.fromisoformat(raw.decode().rsplit(":", 1)[1]))
            except ValueError:
                continue
        return sorted(found)

r"""All of a search's Redis I/O: the candidate lists, their completion, the fallback.

User text never reaches query syntax: it is reduced to word tokens (``\\w+``) before it
becomes a redisvl ``TextQuery``; filter values go through redisvl's escaping ``Tag`` and
``Num`` filters (:class:`~aether.memory.retrieval.search_filter.SearchFilter`). The
neighbours a hit lends relevance to, and the documents fusion needs beyond the
candidates, are read here too (:meth:`CandidateReader.neighbours`,
:meth:`CandidateReader.documents`), and a vanished memory is dropped from the Qdrant
mirror here (:meth:`CandidateReader.forget`): ranking itself reads nothing.

A search reads its candidates in two round trips (:meth:`CandidateReader.read`): both
lists at once (BM25, and the vector list from the reader's
:mod:`~aether.memory.retrieval.vector_source`, chosen once: Redis KNN in the same round
trip or the Qdrant mirror beside it), then the
documents with the completion, which scores every candidate on the signal whose list
missed it. When the index cannot answer, :meth:`CandidateReader.fallback` matches
substrings over the last days of daily logs.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from redis.exceptions import ResponseError
from redisvl.index import AsyncSearchIndex
from redisvl.query import TextQuery
from redisvl.query.filter import FilterExpression

from aether.memory.retrieval.fusion import Ranked
from aether.memory.retrieval.hit import SearchHit, Signal
from aether.memory.retrieval.search_filter import SearchFilter
from aether.memory.retrieval.vector_source import vector_source
from aether.memory.storage.fulltext import ensure_index, search_command, search_results
from aether.memory.storage.layer import MemoryLayer, mget_command, read_mget
from aether.memory.storage.records import (
    MemoryDoc,
    check_timestamp,
)
from aether.memory.storage.vectors import ensure_vector_index, nearest_rows, similarity_command
from aether.memory.tiers.daily import DailyLog
from aether.store.cluster import SlotRedis
from aether.store.functions import Functions

__all__ = ["OPENINGS_READ", "CandidateReader", "Candidates", "text_query"]

OPENINGS_READ = 40
"""How many of the vector list's first candidates have their opening reading read when
the KNN reply did not hold it (the pool of a 10-result search): a bound on the completion's
cost for a long search (a context asks for 50 results, 200 candidates per list), where the
rest, far down the list, are judged by their best reading."""


def text_query(tokens: list[str], flt: FilterExpression | None, num: int) -> TextQuery:
    """The BM25 query of the query's words, for ids and scores only.

    The documents are read once, after fusion.
    """
    query = TextQuery(
        " ".join(tokens),
        "content",
        text_scorer="BM25STD",
        filter_expression=flt,
        num_results=num,
        stopwords=None,
    )
    query.no_content()
    return query


async def _nothing(value: Any) -> Any:
    return value


@dataclass
class Candidates:
    """What the candidate round trips found (:meth:`CandidateReader.read`).

    Attributes:
        lists: each signal's candidates, (key, score) best first.
        docs: the candidates' documents (``None``: gone).
        openings: each candidate's opening reading's similarity, where a reply held it
            (none from the Qdrant mirror, whose rows are scored whole).
        own: each candidate's opening reading's similarity, also read for the first
            :data:`OPENINGS_READ` vector candidates whose reply lacked it
            (``fusion.with_own_reading``); ``openings`` alone decides the chance
            correction, which was measured with the openings the replies hold.
    """

    lists: Ranked
    docs: dict[str, MemoryDoc | None]
    openings: dict[str, float]
    own: dict[str, float] = field(default_factory=dict)


class CandidateReader:
    """Reads a search's candidates from the memory layer's indexes.

    Args:
        memory: the memory layer.
    """

    def __init__(self, memory: MemoryLayer):
        self.memory = memory
        self.index = memory.text_index()
        self.vectors = vector_source(memory)

    async def ensure_index(self, percent: Callable[[float], None] | None = None) -> None:
        """Create (or rebuild) the indexes; never writes a key (``Aether.ready`` migrates).

        Args:
            percent: told how much of the existing memories a new index has scanned.
        """
        await self._ensure_indexes(percent)
        if isinstance(self.memory.client, SlotRedis):  # the index stays with the shard
            self.memory.client.on_move("memory-index", self._ensure_indexes)

    async def _ensure_indexes(self, percent: Callable[[float], None] | None = None) -> None:
        memory = self.memory
        self.index = await ensure_index(memory.client, memory.keys, percent)
        if memory.embedder is not None:
            await ensure_vector_index(
                memory.client,
                memory.keys,
                memory.embedder.dims,
                memory.settings.vector_datatype,
                percent,
            )

    async def read(
        self, query: str, tokens: list[str], limits: SearchFilter, pool: int
    ) -> Candidates:
        """Candidates of each signal, (key, score) best first, and their documents.

        The documents are read while the candidates are completed (:meth:`_completion`):
        both need only the keys the first round trip found, so they share the second.

        Raises:
            ResponseError, RedisSearchError: the index cannot answer.
        """
        memory = self.memory
        if not await memory.indexed():  # a fresh namespace: nothing is stored yet
            return Candidates({}, {}, {})
        vector = await memory.embed(query) if query.strip() else None
        return await self._read(vector, tokens, limits, pool)

    async def _read(
        self, vector: list[float] | None, tokens: list[str], limits: SearchFilter, pool: int
    ) -> Candidates:
        memory = self.memory
        flt = limits.expression()
        # both searches in one round trip, their replies read raw (see search_command)
        pipe = memory.client.pipeline(transaction=False)
        sent: list[Signal] = []
        if tokens:
            pipe.execute_command(*search_command(self.index, text_query(tokens, flt, pool)))
            sent.append(Signal.TEXT)
        plan = await self.vectors.plan(limits) if vector is not None else None
        if vector is not None and plan is not None:
            pipe.execute_command(*self.vectors.command(vector, plan, pool))
            sent.append(Signal.VECTOR)
        try:
            replies, apart = await asyncio.gather(  # the mirror, if searched, at the same time
                pipe.execute() if sent else _nothing([]),
                self.vectors.apart(vector, limits, pool) if vector is not None else _nothing(None),
            )
        except ResponseError:
            if plan is None or not await self.vectors.lost(plan):
                raise
            return await self._read(vector, tokens, limits, pool)  # without the dropped index
        out: Ranked = {}
        openings: dict[str, float] = {}
        for name, reply in zip(sent, replies, strict=True):
            if name == Signal.TEXT:
                rows = search_results(reply, scores=True, fields=False)
                out[name] = [(key, score) for key, score, _ in rows]
            else:
                out[name] = self.vectors.rows(reply, openings)
        if apart is not None:
            out[Signal.VECTOR] = apart
        keys = list(dict.fromkeys(key for rows in out.values() for key, _ in rows))
        if not keys:
            return Candidates(out, {}, openings, openings)
        # the documents and the completion need only these keys: one more round trip
        pipe = memory.client.pipeline(transaction=False)
        pipe.execute_command(*mget_command(keys))
        completion: dict[Signal, list[Any]] = {}
        if vector is not None and (vector_index := self.vectors.index()) is not None:
            completion = self._completion(out, openings, tokens, flt, vector, vector_index)
        for args in completion.values():
            pipe.execute_command(*args)
        replies = await pipe.execute()
        own: dict[str, float] = {}
        self._complete(out, dict(zip(completion, replies[1:], strict=True)), openings, own)
        own.update(openings)  # with the text-only candidates', read with all their readings
        docs = dict(zip(keys, read_mget(replies[0]), strict=True))
        return Candidates(out, docs, openings, own)

    def _completion(
        self,
        lists: Ranked,
        openings: dict[str, float],
        tokens: list[str],
        flt: FilterExpression | None,
        vector: list[float],
        vector_index: AsyncSearchIndex,
    ) -> dict[Signal, list[Any]]:
        """The commands that score every candidate on both signals, by the list they fill.

        A candidate one list missed would otherwise score zero on that signal: a memory
        that matches the query's words well and is also fairly similar to it loses to one
        that only does either, merely because it fell outside one list's cut. So the
        memories found by full text alone get their cosine similarity from their stored
        readings (a KNN query limited to them), and those found by vector alone their
        BM25 score (a full-text query limited to them, ``INKEYS``, with the same scorer
        and statistics as the list). The vector candidates whose own opening reading the
        KNN reply did not hold get its similarity too (a KNN limited to those readings).
        """
        if Signal.VECTOR not in lists:
            return {}
        memory = self.memory
        datatype = memory.settings.vector_datatype
        texts, vectors = dict(lists.get(Signal.TEXT, [])), dict(lists[Signal.VECTOR])
        commands: dict[Signal, list[Any]] = {}
        first = itertools.islice(vectors, OPENINGS_READ)
        unopened = [key for key in first if key not in openings]
        if unopened:
            commands[Signal.OPENINGS] = similarity_command(
                vector_index, memory.keys, unopened, vector, datatype, openings_only=True
            )
        if Signal.TEXT not in lists:
            return commands
        vectorless = [key for key in texts if key not in vectors]
        if vectorless:
            commands[Signal.VECTOR] = similarity_command(
                vector_index, memory.keys, vectorless, vector, datatype
            )
        wordless = [key for key in vectors if key not in texts]
        if wordless:
            query = text_query(tokens, flt, len(wordless))
            query.limit_ids(*wordless)
            commands[Signal.TEXT] = search_command(self.index, query)
        return commands

    def _complete(
        self,
        lists: Ranked,
        replies: dict[Signal, Any],
        openings: dict[str, float],
        own: dict[str, float],
    ) -> None:
        """Add the completion's scores (:meth:`_completion`) to the lists, in place."""
        if Signal.OPENINGS in replies:  # fills ``own`` only: the lists have their best
            nearest_rows(self.memory.keys, replies.pop(Signal.OPENINGS), own)
        scored = {name: dict(rows) for name, rows in lists.items()}
        if Signal.VECTOR in replies:
            scored[Signal.VECTOR].update(
                nearest_rows(self.memory.keys, replies[Signal.VECTOR], openings)
            )
        if Signal.TEXT in replies:
            rows = search_results(replies[Signal.TEXT], scores=True, fields=False)
            scored[Signal.TEXT].update((key, score) for key, score, _ in rows)
        for name in replies:
            lists[name] = sorted(scored[name].items(), key=lambda row: row[1], reverse=True)

    async def neighbours(self, lists: list[str], reach: int, pairs: list[str]) -> Any:
        """The ids around daily entries (``Functions.neighbours``), one round trip."""
        return await Functions(self.memory.client, self.memory.keys).neighbours(lists, reach, pairs)

    async def documents(self, keys: list[str]) -> list[MemoryDoc | None]:
        """Documents fusion needs beyond the candidates (a hit's neighbours)."""
        return await self.memory.get_docs(keys)

    async def forget(self, vanished: list[str]) -> None:
        """Drop from the Qdrant mirror the memories a search found gone from Redis."""
        if vanished and self.memory.mirror is not None:  # deleted or rolled back in Redis
            await self.memory.mirror.delete([key.rsplit(":", 1)[1] for key in vanished])

    async def fallback(
        self,
        query: str,
        tokens: list[str],
        kind: str | None,
        source: str | None,
        tags: list[str] | None,
        since: datetime | float | None,
        limit: int,
    ) -> list[SearchHit]:
        """A substring match over the last days of daily logs (the index cannot answer)."""
        if kind not in (None, "daily"):
            return []
        needles = tokens or [query.lower().strip()]
        since_ts = check_timestamp(since) if since is not None else None
        days = self.memory.settings.daily_retention_days
        hits = []
        for doc in await DailyLog(self.memory).recent(days):
            text = str(doc.get("content", "")).lower()
            matched = sum(1 for n in needles if n and n in text)
            if not matched:
                continue
            if source and doc.get("source") != source:
                continue
            if tags and not set(tags) & set(doc.get("tags", [])):
                continue
            if since_ts is not None and float(doc.get("timestamp", 0)) < since_ts:
                continue
            doc.pop("embedding", None)
            hits.append(
                SearchHit(
                    self.memory.keys.daily_entry(doc["id"]), doc, matched / len(needles), None, None
                )
            )
        hits.sort(key=lambda h: (h.relevance, h.doc.get("timestamp", 0)), reverse=True)
        return hits[:limit]

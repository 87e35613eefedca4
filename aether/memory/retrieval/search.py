"""Hybrid search over ``ns:memory:idx``: the pipeline that runs one search.

candidates (:mod:`.candidates`: BM25 and vector KNN, completed) → fusion and the
absolute gate (:mod:`.fusion`) → neighbours and names (:mod:`.neighbours`) → own reading
(:mod:`.fusion`) → recency (:mod:`.recency`) → rerank (:mod:`.rerank`, when
``memory.rerank`` is on) → newest first (:mod:`.newest`).

A question about a kind of thing (:mod:`.kinds`) is searched as several queries (each
entity of that kind) whose answers are interleaved with the plain answer.

Each hit carries its ``match`` (how well it matches the query alone) and its
``relevance`` (the match blended with recency by ``memory.recency_weight``, the order
of a search's results). A caller with its own recency rule, such as the context's
scoring, ranks by ``match``, so age never counts twice. Inactive beliefs and superseded
notes (any ``status`` of :data:`INACTIVE`) are left out unless asked for. When the
index cannot answer, a substring match over the last days of daily logs does, and the
fallback is logged once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import cached_property
from typing import cast

import structlog
from redis.exceptions import ResponseError
from redisvl.exceptions import RedisSearchError
from redisvl.index import AsyncSearchIndex
from redisvl.query.filter import FilterExpression

from aether.errors import InvalidOperationError
from aether.logging import log_once
from aether.memory.retrieval import fusion
from aether.memory.retrieval.candidates import CandidateReader, Candidates
from aether.memory.retrieval.hit import SearchHit, Signal
from aether.memory.retrieval.kinds import asked_kind
from aether.memory.retrieval.neighbours import in_context
from aether.memory.retrieval.newest import newest_first
from aether.memory.retrieval.ranker import (
    RANK_DEPTH,
    FeatureObserver,
    LearnedRanker,
    RankingInputs,
    features,
    ranker_for,
    reordered,
)
from aether.memory.retrieval.recency import blend, decay
from aether.memory.retrieval.rerank import PackagedCrossEncoder, RelevanceJudge, rerank
from aether.memory.retrieval.search_filter import SearchFilter
from aether.memory.retrieval.text import query_tokens
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import HIT_FIELDS, MemoryDoc
from aether.memory.storage.status import INACTIVE

__all__ = ["MemorySearch", "SearchHit"]

log = structlog.get_logger(__name__)


def _hit_fields(doc: MemoryDoc) -> MemoryDoc:
    """What a hit carries of its document (:data:`HIT_FIELDS`)."""
    fields: dict[str, object] = dict(doc)
    return cast(MemoryDoc, {name: fields[name] for name in HIT_FIELDS if name in fields})


class MemorySearch:
    """Search across daily entries, long-term memories and beliefs.

    Built once by ``aether.operations.parts.Parts`` (with the configured judge) and
    handed to everything that searches.

    Args:
        memory: the memory layer.
        alpha: weight of vector similarity against full text (default: the settings').
        judge: who reranks the best results when ``memory.rerank`` is on (default: the
            packaged cross-encoder for ``cross-encoder``; for ``llm`` the caller gives the
            LLM's judge, and a search built without one is not reranked).
        entities: the names of the graph's entities of a type, most salient first: a
            question that asks to list a kind of thing ("which people did we talk
            about", :func:`~aether.memory.retrieval.kinds.asked_kind`) finds the facts
            that name them.
    """

    def __init__(
        self,
        memory: MemoryLayer,
        alpha: float | None = None,
        judge: RelevanceJudge | None = None,
        entities: EntitySource | None = None,
    ):
        self.memory = memory
        self.entities = entities
        self.alpha = memory.settings.vector_alpha if alpha is None else alpha
        self.candidates = CandidateReader(memory)
        if judge is None and memory.settings.rerank == "cross-encoder":
            judge = PackagedCrossEncoder()
        self.judge = judge
        self.feature_observer: FeatureObserver | None = None
        """Told each search's candidates and feature rows (``bench/ranker_data.py``)."""

    @cached_property
    def ranker(self) -> LearnedRanker | None:
        """The learned ranker, loaded at the first search that orders (``None``: fusion's order).

        Loading it imports LightGBM, which a command that never searches should not pay for.
        """
        if self.memory.settings.ranker != "learned":
            return None
        embedder = self.memory.embedder
        return ranker_for(embedder.model_name if embedder else None)

    @property
    def index(self) -> AsyncSearchIndex:
        """The full-text index."""
        return self.candidates.index

    async def ensure_index(self, percent: Callable[[float], None] | None = None) -> None:
        """Create (or rebuild) the indexes; never writes a key (``Aether.ready`` migrates).

        Args:
            percent: told how much of the existing memories a new index has scanned.
        """
        await self.candidates.ensure_index(percent)

    async def search(
        self,
        query: str,
        *,
        kind: str | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
        since: datetime | float | None = None,
        session: str | None = None,
        limit: int = 10,
        now: float | None = None,
        scopes: list[str] | None = None,
        include_inactive: bool = False,
        where: FilterExpression | None = None,
    ) -> list[SearchHit]:
        """The ``limit`` most relevant memories for ``query``; none when nothing is relevant.

        Args:
            query: what to look for, in any words (reduced to word tokens).
            kind: only this kind of memory.
            source: only from this source.
            tags: only memories with one of these tags.
            since: only memories from this time on.
            session: only memories of this session.
            limit: at most this many results (1-1000).
            now: the time recency is measured from (default: now).
            scopes: only memories in these scopes.
            include_inactive: also superseded, forgotten or pruned beliefs and superseded
                notes (left out by default).
            where: a further condition over the indexed fields (redisvl), applied in the
                query (the Qdrant mirror, when it searches, does not apply it).

        Raises:
            InvalidOperationError: unknown kind or source, bad tags, time or limit.
        """
        if not 1 <= limit <= 1000:
            raise InvalidOperationError("limit must be between 1 and 1000")

        async def plain(q: str, n: int) -> list[SearchHit]:
            return await self._search(
                q, kind, source, tags, since, session, n, now, scopes, include_inactive, where
            )

        asked = asked_kind(query) if self.entities is not None else None
        spread: list[SearchHit] = []
        if asked is not None and self.entities is not None:
            spread = await _each(await self.entities(asked, BROAD_NAMES), plain, limit)
        hits = await plain(query, limit)
        if not spread:
            return hits
        return _interleaved([spread, hits], limit)  # the kind's spread, and the plain answer

    async def _search(
        self,
        query: str,
        kind: str | None,
        source: str | None,
        tags: list[str] | None,
        since: datetime | float | None,
        session: str | None,
        limit: int,
        now: float | None,
        scopes: list[str] | None,
        include_inactive: bool,
        where: FilterExpression | None = None,
    ) -> list[SearchHit]:
        limits = SearchFilter(kind, source, tags, since, session, scopes, where)
        limits.expression()  # a bad criterion is refused before any round trip
        tokens = query_tokens(query)
        pool = max(limit * self.memory.settings.candidates_per_result, 40)
        try:
            found = await self.candidates.read(query, tokens, limits, pool)
        except (ResponseError, RedisSearchError) as e:
            log_once(
                log,
                "search-fallback",
                "search index unavailable; substring match over recent daily logs",
                error=str(e),
            )
            return await self.candidates.fallback(query, tokens, kind, source, tags, since, limit)
        return await self._rank(query, found, tokens, limit, now or time.time(), include_inactive)

    async def _rank(
        self,
        query: str,
        found: Candidates,
        tokens: list[str],
        limit: int,
        now: float,
        include_inactive: bool,
    ) -> list[SearchHit]:
        settings = self.memory.settings
        ranked, read = found.lists, found.docs
        if not read:
            return []
        covered = {
            key: fusion.coverage_of(tokens, read[key]) for key, _ in ranked.get(Signal.TEXT, [])
        }
        similarity = dict(ranked.get(Signal.VECTOR, []))  # raw: what the gate judges
        if Signal.VECTOR in ranked:
            corrected = fusion.chance_corrected(ranked[Signal.VECTOR], read, found.openings)
            ranked = {**ranked, Signal.VECTOR: corrected}
        weights = fusion.fusion_weights(ranked, self.alpha, settings.fusion)
        before_gate, ranks = fusion.fuse(ranked, weights, covered, settings.fusion)
        fused = fusion.gate(
            before_gate, ranks, similarity, covered, settings.min_similarity, settings.min_coverage
        )
        if not fused:
            return []
        fused = await in_context(self.candidates, self.memory.keys, fused, tokens, read)
        fused = fusion.with_own_reading(fused, found.own, similarity)
        if self.ranker is not None or self.feature_observer is not None:
            inputs = RankingInputs(
                query,
                tokens,
                ranked,
                similarity,
                covered,
                weights,
                before_gate,
                fused,
                found.own,
                read,
            )
            observed = self.feature_observer
            keys, rows = features(inputs, None if observed is not None else RANK_DEPTH)
            if observed is not None:
                observed(query, limit, keys, rows)
            if self.ranker is not None:  # the first RANK_DEPTH, observed or not
                ranked_keys = self.ranker.order(keys[:RANK_DEPTH], rows[:RANK_DEPTH])
                fused = reordered(fused, ranked_keys + keys[RANK_DEPTH:])
        # recency weighs at most recency_weight: past twice the limit nothing climbs back in
        judge = self.judge if settings.rerank != "off" else None
        depth = max(limit * 2, settings.rerank_depth if judge is not None else 0)
        shortlist = sorted(fused, key=fused.__getitem__, reverse=True)[:depth]
        await self.candidates.forget([key for key in shortlist if read[key] is None])
        hits = []
        for key in shortlist:
            doc = read[key]
            if doc is None or (not include_inactive and doc.get("status") in INACTIVE):
                # checked here, not in the query: a negated tag filter there costs recall
                # and a Qdrant payload may be stale
                continue
            doc = _hit_fields(doc)
            recency = decay(now - float(doc.get("timestamp", now)), settings.recency_half_life_days)
            score = blend(fused[key], recency, settings.recency_weight)
            hits.append(
                SearchHit(
                    key,
                    doc,
                    round(score, 6),
                    ranks.get(key, {}).get(Signal.TEXT),
                    ranks.get(key, {}).get(Signal.VECTOR),
                    round(fused[key], 6),
                    similarity.get(key),
                    coverage=covered[key] if key in covered else fusion.coverage_of(tokens, doc),
                )
            )
        hits.sort(key=lambda h: h.relevance, reverse=True)
        if judge is not None:
            hits = await rerank(
                query,
                tokens,
                hits,
                settings.rerank_depth,
                settings.recency_weight,
                judge,
                settings.rerank_floor,
            )
        # reordered within the results only: what is found stays what fusion found
        return newest_first(hits[:limit], tokens)


EntitySource = Callable[[str, int], Awaitable[list[str]]]
"""``(type, limit) -> names``: the graph's entities of one type, most salient first."""
BROAD_NAMES = 12
"""How many entities a question about a kind of thing looks for."""


async def _each(
    queries: list[str], plain: Callable[[str, int], Awaitable[list[SearchHit]]], limit: int
) -> list[SearchHit]:
    """Each query searched apart by ``plain`` (a share of ``limit`` each), interleaved."""
    if not queries:
        return []
    share = max(2, limit // len(queries))
    return _interleaved([await plain(q, share) for q in queries], limit)


def _interleaved(lists: list[list[SearchHit]], limit: int) -> list[SearchHit]:
    """The first hit of each list, then the second of each...: once each, up to ``limit``."""
    out: list[SearchHit] = []
    seen: set[str] = set()
    for rank in range(max((len(x) for x in lists), default=0)):
        for hits in lists:
            if rank < len(hits) and hits[rank].key not in seen:
                seen.add(hits[rank].key)
                out.append(hits[rank])
    return out[:limit]

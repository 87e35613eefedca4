"""Where a search's vector list comes from: Redis KNN or the Qdrant mirror, chosen once.

A :class:`~aether.memory.retrieval.candidates.CandidateReader` picks its source when it
is made (:func:`vector_source`, from ``memory.qdrant_search``) and never asks again:
the Redis KNN rides in the same round trip as the BM25 list (:meth:`VectorSource.command`),
the mirror is searched beside it (:meth:`VectorSource.apart`). Either way the candidates
are completed from the readings stored in Redis, the one place they all are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from redisvl.index import AsyncSearchIndex
from redisvl.query.filter import FilterExpression

from aether.memory.retrieval.filter_size import FilterSizes
from aether.memory.retrieval.search_filter import SearchFilter
from aether.memory.storage.fulltext import search_command
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import check_tags
from aether.memory.storage.scoped_indexes import ScopedIndexes
from aether.memory.storage.vectors import FilteredPolicy, knn_query, nearest_rows

__all__ = ["Knn", "MirrorVectors", "RedisVectors", "VectorSource", "vector_source"]

Rows = list[tuple[str, float]]


@dataclass(frozen=True)
class Knn:
    """How a search's KNN runs: on which index, under which filter, by which policy.

    Attributes:
        index: the namespace's vector index, or a tag's own (``scoped_indexes``).
        flt: what the index's readings must still pass (``None``: all do).
        policy: how the filter is applied (``memory.knn_filtered_policy``).
    """

    index: AsyncSearchIndex
    flt: FilterExpression | None
    policy: FilteredPolicy = "auto"


class VectorSource(Protocol):
    """The vector half of a search's candidates."""

    async def plan(self, limits: SearchFilter) -> Knn | None:
        """How the KNN sent with the text query runs, or ``None`` (searched apart)."""

    def command(self, vector: list[float], plan: Knn, pool: int) -> Any:
        """The KNN command of ``plan``, sent with the text query."""

    async def lost(self, plan: Knn) -> bool:
        """Whether ``plan``'s index was a tag's own, dropped since (a new plan avoids it)."""

    def rows(self, reply: Any, openings: dict[str, float]) -> Rows:
        """The candidates of :meth:`command`'s reply, (key, score) best first.

        ``openings`` gets each candidate's opening reading's similarity the reply holds.
        """

    async def apart(self, vector: list[float], limits: SearchFilter, pool: int) -> Rows | None:
        """The candidates read beside the text query's round trip, or ``None``."""

    def index(self) -> AsyncSearchIndex | None:
        """The Redis vector index the completion scores candidates with (``None``: none)."""


class RedisVectors:
    """KNN over the namespace's vector index, in the text query's round trip.

    Args:
        memory: the memory layer (its embedder may be swapped, so the index is looked up
            per search).
    """

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.sizes = FilterSizes(keys=memory.keys)
        self.scoped = ScopedIndexes(memory.client, memory.keys)

    def index(self) -> AsyncSearchIndex | None:
        """The vector index of the current embedder (``None`` without one)."""
        return self.memory.vector_index()

    async def plan(self, limits: SearchFilter) -> Knn | None:
        """The KNN of a search limited by ``limits`` (``None`` without a vector index).

        A filter of one tag that has an index of its own, ready
        (:mod:`~aether.memory.storage.scoped_indexes`), searches that index under the rest
        of the filter; any other filter searches the namespace's index.
        """
        index = self.index()
        if index is None:
            return None
        flt = limits.expression()
        if flt is None:
            return Knn(index, None)
        tags = check_tags(limits.tags)  # as the filter reads them: trimmed
        if len(tags) == 1 and self.memory.settings.scoped_indexes:
            scoped = await self.scoped.ready(index, tags[0])
            if scoped is not None:
                rest = replace(limits, tags=None)
                policy = await self.policy(rest, scoped.index, scoped.readings)
                return Knn(scoped.index, rest.expression(), policy)
        return Knn(index, flt, await self.policy(limits, index))

    async def policy(
        self, limits: SearchFilter, index: AsyncSearchIndex, readings: int | None = None
    ) -> FilteredPolicy:
        """The configured policy (``adaptive``: by what ``limits`` pass, :class:`FilterSizes`).

        ``readings``: the size of a scoped ``index`` (``None``: the namespace's memories).
        """
        configured = self.memory.settings.knn_filtered_policy
        if configured != "adaptive":
            return configured
        memory = self.memory  # FilterSizes answers "auto" for an unfiltered ``limits``
        return await self.sizes.policy(memory.client, index, memory.text_index(), limits, readings)

    def command(self, vector: list[float], plan: Knn, pool: int) -> Any:
        """``FT.SEARCH`` KNN over the plan's index, raw."""
        settings = self.memory.settings
        knn = knn_query(
            vector, plan.flt, pool, settings.vector_datatype, plan.policy, settings.knn_ef_runtime
        )
        return search_command(plan.index, knn)

    async def lost(self, plan: Knn) -> bool:
        """Whether ``plan``'s index was a scoped one, dropped since it was found ready.

        Maintenance (a daemon's) or an erasure drops scoped indexes while a search trusts
        its answer of a few minutes ago: its KNN is then refused, and the search runs again
        on the namespace's index. ``False`` for any other failure, which the search raises.
        """
        if not plan.index.name.startswith(self.scoped.prefix()):
            return False
        self.scoped.forget()
        return plan.index.name not in await self.scoped.names()

    def rows(self, reply: Any, openings: dict[str, float]) -> Rows:
        """The KNN reply's memories, best reading first."""
        return nearest_rows(self.memory.keys, reply, openings)

    async def apart(self, vector: list[float], limits: SearchFilter, pool: int) -> Rows | None:
        """Nothing: the KNN rode with the text query."""
        return None


class MirrorVectors(RedisVectors):
    """The Qdrant mirror's nearest memories, searched beside the text query.

    Args:
        memory: the memory layer; its ``mirror`` is set.
    """

    async def plan(self, limits: SearchFilter) -> Knn | None:
        """Nothing in the round trip: the mirror is asked apart (it applies the filter)."""
        return None

    async def apart(self, vector: list[float], limits: SearchFilter, pool: int) -> Rows | None:
        """The mirror's nearest memories under the same filter's criteria."""
        assert self.memory.mirror is not None  # vector_source chose this source for it
        return await self.memory.mirror.search(vector, pool, limits.criteria())


def vector_source(memory: MemoryLayer) -> VectorSource:
    """The source the settings name: the mirror when search asks it, else Redis KNN."""
    if memory.qdrant_search and memory.mirror is not None:
        return MirrorVectors(memory)
    return RedisVectors(memory)

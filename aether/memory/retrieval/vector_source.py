"""Where a search's vector list comes from: Redis KNN or the Qdrant mirror, chosen once.

A :class:`~aether.memory.retrieval.candidates.CandidateReader` picks its source when it
is made (:func:`vector_source`, from ``memory.qdrant_search``) and never asks again:
the Redis KNN rides in the same round trip as the BM25 list (:meth:`VectorSource.command`),
the mirror is searched beside it (:meth:`VectorSource.apart`). Either way the candidates
are completed from the readings stored in Redis, the one place they all are.
"""

from __future__ import annotations

from typing import Any, Protocol

from redisvl.index import AsyncSearchIndex
from redisvl.query.filter import FilterExpression

from aether.memory.retrieval.filter_size import FilterSizes
from aether.memory.retrieval.search_filter import SearchFilter
from aether.memory.storage.fulltext import search_command
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.vectors import FilteredPolicy, knn_query, nearest_rows

__all__ = ["MirrorVectors", "RedisVectors", "VectorSource", "vector_source"]

Rows = list[tuple[str, float]]


class VectorSource(Protocol):
    """The vector half of a search's candidates."""

    async def policy(self, limits: SearchFilter) -> FilteredPolicy:
        """How :meth:`command` applies ``limits`` (``memory.knn_filtered_policy``)."""

    def command(
        self,
        vector: list[float],
        flt: FilterExpression | None,
        pool: int,
        policy: FilteredPolicy = "auto",
    ) -> Any:
        """The KNN command sent with the text query, or ``None`` (searched apart)."""

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

    def index(self) -> AsyncSearchIndex | None:
        """The vector index of the current embedder (``None`` without one)."""
        return self.memory.vector_index()

    async def policy(self, limits: SearchFilter) -> FilteredPolicy:
        """The configured policy (``adaptive``: by what ``limits`` pass, :class:`FilterSizes`)."""
        configured = self.memory.settings.knn_filtered_policy
        if configured != "adaptive":
            return configured
        index = self.index()
        if index is None:
            return "auto"
        return await self.sizes.policy(self.memory.client, index, self.memory.text_index(), limits)

    def command(
        self,
        vector: list[float],
        flt: FilterExpression | None,
        pool: int,
        policy: FilteredPolicy = "auto",
    ) -> Any:
        """``FT.SEARCH`` KNN over the vector index, raw (``None`` without an index)."""
        index = self.index()
        if index is None:
            return None
        settings = self.memory.settings
        knn = knn_query(
            vector, flt, pool, settings.vector_datatype, policy, settings.knn_ef_runtime
        )
        return search_command(index, knn)

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

    async def policy(self, limits: SearchFilter) -> FilteredPolicy:
        """RediSearch's own (the mirror applies its filter itself)."""
        return "auto"

    def command(
        self,
        vector: list[float],
        flt: FilterExpression | None,
        pool: int,
        policy: FilteredPolicy = "auto",
    ) -> Any:
        """Nothing in the round trip: the mirror is asked apart."""
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

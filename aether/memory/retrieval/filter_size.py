"""How a filtered vector search applies its filter, chosen by how much the filter passes.

RediSearch answers a KNN with a filter in one of two ways (its ``HYBRID_POLICY``): brute
force over every reading that passes (``ADHOC_BF``: exact, its cost grows with the
passing readings) or a walk of the HNSW graph in batches that are filtered as they come
(``BATCHES``: its cost grows as the filter gets more selective, about as the index's size
over what passes). Measured at a million memories (decision 0011), brute force costs
about 1.2 µs a passing reading (61 ms for 50,000) and the walk about 0.64 ms over the
share that passes (13 ms at 5 %, 53 ms at 1 %, half a second at 0.01 %): they break even
where the passing readings P satisfy P² ≈ 500 × N, N the memories indexed (22,000 at a
million, 7,000 at 100,000). RediSearch's own choice (``auto``) misjudges the range
between: 50-75 ms at p99 for filters that pass 0.5 to 5 % of a million memories.

``memory.knn_filtered_policy = "adaptive"`` brute-forces up to :func:`brute_force_max`
readings and walks the graph above. Whether a filter passes more is one ``FT.SEARCH`` of
the filter alone for the result just past that number (``LIMIT n 1`` under ``DIALECT 4``,
which stops iterating once it has it, where ``LIMIT 0 0`` counts every match: 0.7 ms
against 85 ms for a filter half a million readings pass); N is the full-text index's
document count (``FT.INFO`` of the vector index takes 0.3 s at a million). Both answers
are kept for :data:`SIZE_TTL_S`. A stale answer only costs speed, never results: both
policies answer the same query. ``bench/memory.py`` measures each policy at each size.

The probe walks up to that number of matches: 3.4 ms for a tag a million memories' 5 %
carry, paid by the first search of each filter every five minutes, which made
``adaptive``'s p99 at a million (22.8 ms against 18.5 ms for ``batches``). A filter of tags
alone, or of one kind alone, passes at least as many memories as the memory index's
counters give its largest tag or its kind (``memory:topics``, ``memory:counts``, kept in
the same journaled change as the memories), and each indexed memory has at least one
reading: when that count is past the number, one ``ZMSCORE`` answers instead of the probe.
A count below it says nothing (a memory may have several readings), so the probe asks.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

import structlog
from redis.asyncio import Redis
from redis.exceptions import ResponseError
from redisvl.exceptions import RedisSearchError
from redisvl.index import AsyncSearchIndex
from redisvl.query import FilterQuery
from redisvl.query.filter import FilterExpression

from aether.codec import command
from aether.keys import Keyspace
from aether.logging import log_once
from aether.memory.retrieval.search_filter import SearchFilter
from aether.memory.storage.fulltext import search_command, search_results
from aether.memory.storage.records import check_kind, check_tags, check_timestamp
from aether.memory.storage.vectors import FilteredPolicy

__all__ = ["BREAK_EVEN", "BRUTE_FORCE_MIN", "SIZE_TTL_S", "FilterSizes", "brute_force_max"]

log = structlog.get_logger(__name__)

BREAK_EVEN = 500
"""Brute force over P passing readings costs about what the graph's walk does when
P² = BREAK_EVEN × N (the module's measurements: 0.64 ms / 1.2 µs)."""

BRUTE_FORCE_MIN = 1_000
"""Readings always searched by brute force, whatever the index's size (about a
millisecond)."""


def brute_force_max(memories: int) -> int:
    """The most readings a filter may pass and still be searched by brute force.

    Args:
        memories: the memories indexed.
    """
    return max(BRUTE_FORCE_MIN, math.isqrt(BREAK_EVEN * max(memories, 0)))


SIZE_TTL_S = 300.0
"""How long an answer (a filter's size, the index's) is trusted: memories come and go
slowly against it."""

SINCE_GRAIN_S = 3_600.0
"""A time limit is asked about from the start of its hour: a search "since seven days
ago" moves with the clock and would otherwise never meet its answer again. The hour
passes at least as many readings, which can only lean towards the graph's walk."""

SIZES_KEPT = 1_024
"""Distinct filters whose answers are kept (the least recently used go first)."""


class FilterSizes:
    """The policy a filtered KNN uses, from whether its filter passes many readings.

    Args:
        clock: seconds, monotonic (tests move it).
        keys: the namespace's keyspace, whose memory counters can answer for a filter of
            tags or of a kind alone (``None``: every filter is probed).
    """

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, keys: Keyspace | None = None
    ) -> None:
        self._clock = clock
        self._keys = keys
        self._large: OrderedDict[tuple[str, str, int], tuple[bool, float]] = OrderedDict()
        self._memories: dict[str, tuple[int, float]] = {}

    async def policy(
        self,
        client: Redis,
        index: AsyncSearchIndex,
        memories: AsyncSearchIndex,
        limits: SearchFilter,
        readings: int | None = None,
    ) -> FilteredPolicy:
        """The policy for a KNN limited by ``limits`` on ``index``.

        ``adhoc_bf`` when ``limits`` pass at most :func:`brute_force_max` readings for the
        documents ``memories`` (the full-text index) holds, else ``batches``; ``auto`` for
        an unfiltered search (no policy applies), and when the index refuses the question
        (a server without ``DIALECT 4``, or no index yet: the search itself then says so).
        ``readings``: the size of ``index`` when it is a tag's own (a scoped index), whose
        graph is that size; the memory counters, which count the whole namespace, are then
        not asked.
        """
        flt = _coarse(limits).expression()
        if flt is None:
            return "auto"
        try:
            size = await self.memories(memories) if readings is None else readings
            counted = self._counted(limits) if readings is None else None
            most = brute_force_max(size)
            large = await self.large(client, index, flt, most, counted)
        except (ResponseError, RedisSearchError) as e:
            log_once(log, "filter-probe", "filtered search: RediSearch chooses", error=str(e))
            return "auto"
        return "batches" if large else "adhoc_bf"

    async def memories(self, memories: AsyncSearchIndex) -> int:
        """The documents the full-text index holds, from the kept answer while it is fresh."""
        now = self._clock()
        kept = self._memories.get(memories.name)
        if kept is not None and now - kept[1] <= SIZE_TTL_S:
            return kept[0]
        count = int((await memories.info()).get("num_docs", 0) or 0)
        self._memories[memories.name] = (count, now)
        return count

    def _counted(self, limits: SearchFilter) -> tuple[str, list[str]] | None:
        """The counter and members whose largest count ``limits`` pass at least.

        ``None`` when no counter bounds them: a filter of anything but tags alone or one
        kind alone (a criterion added to either passes fewer).
        """
        if self._keys is None:
            return None
        others = (limits.source, limits.since, limits.session, limits.scopes, limits.where)
        if any(x is not None and x != [] for x in others):
            return None
        if limits.tags and not limits.kind:
            return self._keys.memory_topics(), check_tags(limits.tags)
        if limits.kind and not limits.tags:
            return self._keys.memory_counts(), [check_kind(limits.kind)]
        return None

    async def large(
        self,
        client: Redis,
        index: AsyncSearchIndex,
        flt: FilterExpression,
        most: int,
        counted: tuple[str, list[str]] | None = None,
    ) -> bool:
        """Whether ``flt`` passes more than ``most`` readings of ``index``.

        From the kept answer while it is fresh; else from ``counted`` (a counter and its
        members, the largest of whose counts ``flt`` passes at least) when that is past
        ``most``; else from the probe.

        Raises:
            ResponseError: the index refused the question (nothing is kept).
        """
        key = (index.name, str(flt), most)
        now = self._clock()
        kept = self._large.get(key)
        if kept is not None and now - kept[1] <= SIZE_TTL_S:
            self._large.move_to_end(key)
            return kept[0]
        large = counted is not None and await _counted_past(client, *counted, most)
        if not large:
            probe = FilterQuery(flt, return_fields=[], num_results=1, dialect=4)
            probe.paging(most, 1)  # the one reading past the most, if any
            probe.no_content()
            reply = await command(client, *search_command(index, probe))
            large = bool(search_results(reply, scores=False, fields=False))
        self._large[key] = (large, now)
        self._large.move_to_end(key)
        while len(self._large) > SIZES_KEPT:
            self._large.popitem(last=False)
        return large


async def _counted_past(client: Redis, counter: str, members: list[str], most: int) -> bool:
    """Whether a member of ``counter`` (a sorted set of counts) is counted past ``most``."""
    counts = await client.zmscore(counter, members)
    return max((c for c in counts if c is not None), default=0.0) > most


def _coarse(limits: SearchFilter) -> SearchFilter:
    """``limits`` with its time limit moved back to the start of its hour."""
    if limits.since is None:
        return limits
    since = check_timestamp(limits.since)
    return replace(limits, since=math.floor(since / SINCE_GRAIN_S) * SINCE_GRAIN_S)

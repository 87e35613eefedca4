"""How a filtered vector search applies its filter, chosen by how much the filter passes.

RediSearch answers a KNN with a filter in one of two ways (its ``HYBRID_POLICY``): brute
force over every reading that passes (``ADHOC_BF``: exact, its cost grows with the
passing readings) or a walk of the HNSW graph in batches that are filtered as they come
(``BATCHES``: about the graph's own cost, and its approximation). Its own choice
(``auto``) falls back to brute force often enough at a million memories that a tag on 5 %
of them (50,000 readings) costs 55 ms at p99, where batches take under 20; forced batches
cost a very selective filter (one conversation among a million memories) ten times what
brute force does.

``memory.knn_filtered_policy = "adaptive"`` asks whether the filter passes more than
:data:`BRUTE_FORCE_MAX` readings and brute-forces up to that many, walks the graph above.
The question is one ``FT.SEARCH`` of the filter alone for the result just past that
number (``LIMIT BRUTE_FORCE_MAX 1`` under ``DIALECT 4``, which stops iterating once it
has it, where ``LIMIT 0 0`` counts every match: 0.7 ms against 85 ms for a filter half a
million readings pass), and its answer is kept for :data:`SIZE_TTL_S`. A stale answer
only costs speed, never results: both policies answer the same query.
``bench/memory.py`` measures each policy at each size.
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
from redisvl.index import AsyncSearchIndex
from redisvl.query import FilterQuery

from aether.codec import command
from aether.logging import log_once
from aether.memory.retrieval.search_filter import SearchFilter
from aether.memory.storage.fulltext import search_command, search_results
from aether.memory.storage.records import check_timestamp
from aether.memory.storage.vectors import FilteredPolicy

__all__ = ["BRUTE_FORCE_MAX", "SIZE_TTL_S", "FilterSizes"]

log = structlog.get_logger(__name__)

BRUTE_FORCE_MAX = 10_000
"""Readings a filter may pass and still be searched by brute force (a few milliseconds on
the dev machine, where the graph's walk in batches takes about ten at a million)."""

SIZE_TTL_S = 300.0
"""How long a filter's answer is trusted: memories come and go slowly against it."""

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
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._large: OrderedDict[tuple[str, str], tuple[bool, float]] = OrderedDict()

    async def policy(
        self, client: Redis, index: AsyncSearchIndex, limits: SearchFilter
    ) -> FilteredPolicy:
        """The policy for a KNN limited by ``limits`` on ``index``.

        ``adhoc_bf`` when ``limits`` pass at most :data:`BRUTE_FORCE_MAX` of the index's
        readings, else ``batches``; ``auto`` for an unfiltered search (no policy applies).

        RediSearch's own choice (``auto``) when the index refuses the question (a server
        without ``DIALECT 4``, or no index yet: the search itself then says so).
        """
        asked = _coarse(limits)
        if asked.expression() is None:
            return "auto"
        large = await self.large(client, index, asked)
        if large is None:
            return "auto"
        return "batches" if large else "adhoc_bf"

    async def large(
        self, client: Redis, index: AsyncSearchIndex, limits: SearchFilter
    ) -> bool | None:
        """Whether ``limits`` pass more than :data:`BRUTE_FORCE_MAX` readings of ``index``.

        From the kept answer while it is fresh; ``None`` when the index refused the
        question (not kept). ``limits`` must filter something.
        """
        flt = limits.expression()
        assert flt is not None
        key = (index.name, str(flt))
        now = self._clock()
        kept = self._large.get(key)
        if kept is not None and now - kept[1] <= SIZE_TTL_S:
            self._large.move_to_end(key)
            return kept[0]
        probe = FilterQuery(flt, return_fields=[], num_results=1, dialect=4)
        probe.paging(BRUTE_FORCE_MAX, 1)  # the one reading past the limit, if any
        probe.no_content()
        try:
            reply = await command(client, *search_command(index, probe))
        except ResponseError as e:
            log_once(log, "filter-probe", "filtered search: RediSearch chooses", error=str(e))
            return None
        large = bool(search_results(reply, scores=False, fields=False))
        self._large[key] = (large, now)
        self._large.move_to_end(key)
        while len(self._large) > SIZES_KEPT:
            self._large.popitem(last=False)
        return large


def _coarse(limits: SearchFilter) -> SearchFilter:
    """``limits`` with its time limit moved back to the start of its hour."""
    if limits.since is None:
        return limits
    since = check_timestamp(limits.since)
    return replace(limits, since=math.floor(since / SINCE_GRAIN_S) * SINCE_GRAIN_S)

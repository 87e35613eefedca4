"""Hybrid search at scale, plain and filtered under each policy; prints one JSON object.

``bench/memory.py`` grows an agent's namespace and measures everything at each size (most
of two hours at a million). This one measures only search, in a namespace filled as
``bench/memory.py``'s ``search_latency`` fills it (the same sentences and seeded random
unit vectors, a tag ``t0``-``t19`` on each entry, one entry every 30 s from 1.7e9), which
``--home`` keeps, its server left running, so that later runs skip the fill (40 minutes
at a million; a restarted server would rebuild its vector index):

- ``hybrid``: p50/p99 of a search of three content words, no filter, and its two round
  trips apart (``lists``: BM25 and KNN together; ``completion``: the documents and the
  completion's scores); the BM25 list alone;
- ``filtered``: for filters that pass 5 % of the entries (a tag) and 2 %, 1 % and 0.1 % (a
  tag and a time limit), the search under each ``memory.knn_filtered_policy``: p50/p99 and
  the share of brute force's top 10 found (brute force's results are the exact ones);
- ``scoped``: tags ``t0``-``t3`` given a vector index of their own
  (``aether.memory.storage.scoped_indexes``): the indexes' build time and memory, then
  each filter size under brute force (exact), ``adaptive`` without them and the product's
  default with them, over the same filters;
- ``probe_ms``: what ``adaptive`` asks the first time it meets a filter (the size
  question, ``aether.memory.retrieval.filter_size``), p50/p99 over 20 filters of each size:
  ``asked`` as the product asks it (a tag alone is answered by the memory counters when
  its count is past brute force's reach), ``probe_only`` the index's matches walked.

With ``--erase SUBJECT`` it measures nothing else: 60 entries holding ``SUBJECT`` are
written into the namespace and ``aether erase`` takes it (``bench/memory.py``'s figures:
its time, phases, and the files after), so a kept home times an erasure at its size
without a fill of its own (an hour at a million).

Usage: python bench/filtered_scale.py [--entries N] [--home DIR] [--queries Q] [--erase S]
    [--sections hybrid,filtered,probe,scoped] [--keep-scoped]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memory import FILL_BATCH, QUERY_WORDS, PrecomputedEmbedder, erasure, quiesce, sentence
from percentiles import percentile
from redis.asyncio import Redis

from aether.app import Aether
from aether.codec import command
from aether.config import MemorySettings, Settings
from aether.keys import Keyspace
from aether.memory.retrieval.candidates import text_query
from aether.memory.retrieval.filter_size import FilterSizes, brute_force_max
from aether.memory.retrieval.search import MemorySearch
from aether.memory.retrieval.search_filter import SearchFilter
from aether.memory.storage.fulltext import search_command
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.scoped_indexes import ScopedIndexes
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.runtime.heap import settle_heap
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.store.state import Store

NAMESPACE = "bench-search"
BASE_TS = 1.7e9
STEP_S = 30
POLICIES = ("adhoc_bf", "batches", "auto", "adaptive")
SHARES = (0.05, 0.02, 0.01, 0.001)
SCOPED_TAGS = 4
SECTIONS = ("hybrid", "filtered", "probe", "scoped")


def _figures(times: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(times), 2), "p99_ms": percentile(times, 0.99)}


async def _search(client: Redis, **memory: Any) -> MemorySearch:
    layer = MemoryLayer(Store(client, Keyspace(NAMESPACE)), MemorySettings(**memory), None)
    layer.embedder = PrecomputedEmbedder()  # type: ignore[assignment]
    search = MemorySearch(layer)
    await search.ensure_index()
    return search


async def fill(client: Redis, n: int) -> float:
    """``n`` entries as ``search_latency`` writes them (skipped when they are there)."""
    search = await _search(client)
    layer = search.memory
    have = int((await search.index.info()).get("num_docs", 0) or 0)
    t = time.perf_counter()
    daily = DailyLog(layer)
    for start in range(have, n, FILL_BATCH):
        docs: list[dict[str, Any]] = [
            build_entry(layer, sentence(), tags=[f"t{i % 20}"], timestamp=BASE_TS + i * STEP_S)
            for i in range(start, min(start + FILL_BATCH, n))
        ]
        await layer.attach_embeddings(docs)
        await layer.store.apply(daily.mutation(docs), "bench.fill")
    if have < n:
        await quiesce(client)
    return round(time.perf_counter() - t, 1)


async def hybrid(client: Redis, queries: int) -> dict[str, Any]:
    """The unfiltered search, its round trips apart, and the BM25 list alone."""
    search = await _search(client)
    trips: list[float] = []  # this search's round trips, in order
    plain = client.pipeline

    def timed_pipeline(*args: Any, **kwargs: Any) -> Any:
        pipe = plain(*args, **kwargs)
        execute = pipe.execute

        async def timed(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            reply = await execute(*a, **k)
            trips.append((time.perf_counter() - t) * 1000)
            return reply

        pipe.execute = timed  # type: ignore[method-assign]
        return pipe

    words = random.Random(5)
    for _ in range(100):  # warm-up
        await search.search(" ".join(words.sample(QUERY_WORDS, 3)), limit=10)
    client.pipeline = timed_pipeline  # type: ignore[method-assign]
    times: list[float] = []
    lists: list[float] = []
    completion: list[float] = []
    try:
        for _ in range(queries):
            trips.clear()
            t = time.perf_counter()
            await search.search(" ".join(words.sample(QUERY_WORDS, 3)), limit=10)
            times.append((time.perf_counter() - t) * 1000)
            if len(trips) >= 2:
                lists.append(trips[0])
                completion.append(trips[1])
    finally:
        client.pipeline = plain  # type: ignore[method-assign]
    bm25: list[float] = []
    for _ in range(queries):
        args = search_command(search.index, text_query(words.sample(QUERY_WORDS, 3), None, 40))
        t = time.perf_counter()
        await command(client, *args)
        bm25.append((time.perf_counter() - t) * 1000)
    return {
        **_figures(times),
        "lists": _figures(lists),
        "completion": _figures(completion),
        "bm25_alone": _figures(bm25),
    }


def _limits(share: float, n: int, i: int, tags: int = 20) -> SearchFilter:
    """A filter ``share`` of the ``n`` entries pass: a tag (5 %), and a time limit below.

    ``tags``: the filters cycle through tags ``t0`` to ``t{tags - 1}``.
    """
    tag = [f"t{i % tags}"]
    if share >= 0.05:
        return SearchFilter(tags=tag)
    last = int(n * share * 20)  # of the tag's entries, the last ``last / 20`` pass
    return SearchFilter(tags=tag, since=BASE_TS + (n - last) * STEP_S)


async def _each_filter(
    searches: dict[str, MemorySearch], n: int, queries: int, tags: int, seed: int
) -> dict[str, Any]:
    """Each search over each filter size: p50/p99 and the share of the first one's top 10.

    The first search is brute force's (exact), so the share says what the others miss.
    """
    out: dict[str, Any] = {}
    for share in SHARES:
        figures: dict[str, Any] = {}
        exact: list[set[str]] = []
        for name, search in searches.items():
            words = random.Random(seed)
            times: list[float] = []
            found: list[set[str]] = []
            for i in range(queries):
                limits = _limits(share, n, i, tags)
                query = " ".join(words.sample(QUERY_WORDS, 3))
                t = time.perf_counter()
                hits = await search.search(query, limit=10, tags=limits.tags, since=limits.since)
                times.append((time.perf_counter() - t) * 1000)
                found.append({h.key for h in hits})
            if not exact:
                exact = found
            overlap = [len(f & e) / len(e) for f, e in zip(found, exact, strict=True) if e]
            figures[name] = {
                **_figures(times),
                "share_of_brute_force_top10": round(statistics.fmean(overlap), 3) if overlap else 0,
            }
        out[f"{share:.1%}"] = figures
    return out


async def filtered(client: Redis, n: int, queries: int) -> dict[str, Any]:
    """Each policy over each filter size: p50/p99 and the share of the exact top 10."""
    searches = {policy: await _search(client, knn_filtered_policy=policy) for policy in POLICIES}
    return await _each_filter(searches, n, queries, 20, 11)


async def scoped(client: Redis, n: int, queries: int, keep: bool = False) -> dict[str, Any]:
    """Tags ``t0``-``t3`` given an index of their own: its build, its memory, and each
    filter searched through it (``memory.scoped_indexes``) against brute force's exact
    top 10 and ``adaptive`` without it, over the same filters, twice: ``first`` as the
    searches meet each filter and index for the first time (what a process asks once
    and keeps five minutes: the size question, whether an index is ready), ``again``
    with those answers kept. The indexes are dropped after (kept with ``--keep-scoped``)."""
    search = await _search(client)
    layer = search.memory
    vectors = layer.vector_index()
    assert vectors is not None
    indexes = ScopedIndexes(client, layer.keys)
    tags = [f"t{k}" for k in range(SCOPED_TAGS)]
    existed = bool(await indexes.names())
    used = int((await client.info("memory"))["used_memory"])
    t = time.perf_counter()
    for tag in tags:
        await indexes.create(vectors, tag)
    while True:
        indexes.forget()
        if all([await indexes.ready(vectors, tag) for tag in tags]):
            break
        await asyncio.sleep(0.5)
    out: dict[str, Any] = {
        "tags": SCOPED_TAGS,
        "build_s": None if existed else round(time.perf_counter() - t, 1),
        "memory_mb": None
        if existed
        else round((int((await client.info("memory"))["used_memory"]) - used) / 1e6, 1),
    }
    searches = {
        "adhoc_bf": await _search(client, knn_filtered_policy="adhoc_bf", scoped_indexes=0),
        "adaptive": await _search(client, scoped_indexes=0),
        "scoped": search,
    }
    try:
        out["first"] = await _each_filter(searches, n, queries, SCOPED_TAGS, 13)
        out["again"] = await _each_filter(searches, n, queries, SCOPED_TAGS, 17)
    finally:
        for name in await indexes.names() if not keep else []:
            await indexes.drop(name)
    return out


async def probe(client: Redis, n: int) -> dict[str, Any]:
    """The size question ``adaptive`` asks once per filter, unkept, for each filter size."""
    search = await _search(client)
    layer = search.memory
    index, text = layer.vector_index(), layer.text_index()
    assert index is not None
    out: dict[str, Any] = {"brute_force_max": brute_force_max(n)}
    for share in SHARES:
        figures: dict[str, Any] = {}
        for name, keys in (("asked", layer.keys), ("probe_only", None)):
            times: list[float] = []
            for i in range(20):
                sizes = FilterSizes(keys=keys)
                await sizes.memories(text)
                t = time.perf_counter()
                await sizes.policy(client, index, text, _limits(share, n, i))
                times.append((time.perf_counter() - t) * 1000)
            figures[name] = _figures(times)
        out[f"{share:.1%}"] = figures
    return out


async def erase(client: Redis, settings: Settings, subject: str) -> dict[str, Any]:
    """``subject`` written into 60 entries, then erased: the erasure's figures."""
    agent = Aether(settings.model_copy(update={"namespace": NAMESPACE}), client, actor="bench")
    agent.memory.embedder = PrecomputedEmbedder()  # type: ignore[assignment]
    layer = agent.memory
    docs: list[dict[str, Any]] = [
        build_entry(layer, f"{sentence()} with {subject}", tags=["t1"], timestamp=time.time())
        for _ in range(60)
    ]
    await layer.attach_embeddings(docs)
    await layer.store.apply(DailyLog(layer).mutation(docs), "bench.plant")
    return await erasure(agent, subject)


async def main(
    entries: int,
    home: Path | None,
    queries: int,
    subject: str | None,
    sections: set[str],
    keep_scoped: bool = False,
) -> None:
    kept = home is not None
    settings = Settings(
        home=home or Path(tempfile.mkdtemp(prefix="aether-bench-filtered-")),
        embedding={"provider": "none"},
    )
    client = await connect(settings)
    try:
        fill_s = await fill(client, entries)
        settle_heap()  # as the daemon does once it is up
        if subject is not None:
            print(json.dumps({"entries": entries, **await erase(client, settings, subject)}))
            return
        out: dict[str, Any] = {"entries": entries, "fill_s": fill_s}
        few = max(50, queries // 4)
        if "hybrid" in sections:
            out["hybrid"] = await hybrid(client, queries)
        if "filtered" in sections:
            out["filtered"] = await filtered(client, entries, few)
        if "probe" in sections:
            out["probe_ms"] = await probe(client, entries)
        if "scoped" in sections:
            out["scoped"] = await scoped(client, entries, few, keep_scoped)
    finally:
        await client.aclose()
        if not kept:  # a kept home's server stays up: a restart rebuilds the vector index
            EmbeddedRedis(settings).stop()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--home", type=Path, default=None, help="a home to fill or reuse")
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--erase", default=None, help="only erase this subject (see above)")
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"what to measure, comma-separated (default: all of {','.join(SECTIONS)})",
    )
    parser.add_argument(
        "--keep-scoped", action="store_true", help="keep the scoped indexes for the next run"
    )
    args = parser.parse_args()
    chosen = set(args.sections.split(","))
    if chosen - set(SECTIONS):
        parser.error(f"unknown sections: {sorted(chosen - set(SECTIONS))}")
    asyncio.run(main(args.entries, args.home, args.queries, args.erase, chosen, args.keep_scoped))

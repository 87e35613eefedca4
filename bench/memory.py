"""Memory-layer speed on a real embedded Redis; prints one JSON object.

- log_vs_raw_ratio: throughput of DailyLog.log (no embeddings; journaled, one FCALL) over
  that of a raw redis-py pipeline doing the same two writes per entry (JSON.SET + RPUSH).
- search_p99_ms: hybrid search latency at 100k entries with 384-d vectors, query
  embedding excluded (documents and queries carry precomputed unit vectors);
  search_filtered_p99_ms: the same with a tag filter that 5 % of entries match. Timed
  with the heap settled, as a running daemon's is (``aether.runtime.heap``). These and
  bytes_per_entry_with_vectors are the first size's of ``scale`` (below).
- import_100k_s: importing 100k entries from JSONL without embeddings; import_all_s the
  same for ``--entries`` entries when that is larger (a million: issue 65's ≤ 5 minutes).
- bytes_per_entry: Redis memory per entry (document + index + journal), without and with
  vectors (a binary vector hash beside each document, in the default float16; the
  ``float32_*`` figures are the same namespace size with ``vector_datatype = "float32"``).
- entries, checkpoint_ms, scale: one namespace in the default configuration grown to
  100k entries and then to ``--entries`` (one size when it is 100k or less), measured at
  each size: Redis memory in all and per entry, hybrid search p50/p99 with and without a
  filter and with the learned ranker (``memory.ranker = "learned"``, no filter), a durable
  checkpoint, a rollback of 10k changes (changed keys, ten to a journal entry; changes/s),
  a maintenance run (the entries are of the last six days),
  an erasure of one subject (planted in 60 entries of that size's fill, AOF rewrite
  included; its seconds per phase), the filtered search under each HYBRID_POLICY
  (``memory.knn_filtered_policy``: the default ``adaptive``, RediSearch's ``auto``,
  ``batches``, ``adhoc_bf``: p50/p99 and the share of brute force's top 10 found; with a
  tag on 5 % and with one on 0.1 % of the entries),
  a ``checkpoint diff`` of 100k changes, and ``aether status`` (a process).
  ``checkpoint_ms`` repeats the first size's.

``--erase-only`` grows the same namespace and measures only its size and the erasure at
each size (the rest takes most of an hour at a million).

Usage: python bench/memory.py [--quick] [--entries N] [--erase-only]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from percentiles import percentile
from redis.asyncio import Redis

from aether.app import Aether
from aether.codec import command
from aether.config import MemorySettings, Settings
from aether.keys import Keyspace
from aether.maintenance.engine import MaintenanceEngine
from aether.memory.retrieval.ranker import shared_ranker
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.memory.transfer import import_file
from aether.runtime.heap import settle_heap
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.store.state import Mutation, Store

random.seed(7)
_COMMON = """deploy build test redis index search memory agent operator release staging
production cache failure timeout retry branch review meeting design budget customer
invoice schedule travel dinner family garden music"""
WORDS = [f"w{i}" for i in range(3000)] + _COMMON.split()
# Queries are content words (what is left after stopword removal), not the handful of
# most frequent words, which behave like stopwords in a Zipf vocabulary.
QUERY_WORDS = WORDS[100:]
DIMS = 384
# documents per journaled write while filling: Redis indexes them inside that one call,
# so a batch of 1,000 held it for seconds on a loaded machine (past the client's timeout)
FILL_BATCH = 250


def sentence() -> str:
    return " ".join(random.choices(WORDS, weights=[1 / (i + 1) for i in range(len(WORDS))], k=14))


class PrecomputedEmbedder:
    """Returns seeded unit vectors at once: search timing without embedding time."""

    model_name = "bench-random"
    dims = DIMS

    def __init__(self) -> None:
        self.rng = np.random.default_rng(1)

    async def embed_many(self, texts: list[str]) -> list[list[float]]:
        v = self.rng.normal(size=(len(texts), DIMS)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return [list(map(float, row)) for row in v]

    async def embed(self, text: str) -> list[float]:
        return (await self.embed_many([text]))[0]


async def quiesce(client: Redis) -> None:
    """Rewrite the AOF now and wait for it: a fork on 2 cores is not search latency.

    Waiting for a running rewrite alone is not enough: Redis starts one when the AOF has
    grown enough, at its next cron tick, which may fall after the fill's last write and
    so in the middle of the measurement. After a fresh rewrite none is due.
    """
    await command(client, "BGREWRITEAOF")  # scheduled when a rewrite or save runs
    for _ in range(1200):
        await asyncio.sleep(0.5)
        info = await client.info("persistence")
        busy = ("aof_rewrite_in_progress", "aof_rewrite_scheduled", "rdb_bgsave_in_progress")
        if not any(info[name] for name in busy):
            return


async def used_memory(client: Redis) -> int:
    return int((await client.info("memory"))["used_memory"])


async def log_vs_raw(client: Redis, n: int) -> dict[str, float]:
    keys = Keyspace("bench-log")
    layer = MemoryLayer(Store(client, keys), MemorySettings())
    daily = DailyLog(layer)
    texts = [sentence() for _ in range(n)]
    t = time.perf_counter()
    for text in texts:
        await daily.log(text, "agent", ["bench"])
    log_s = time.perf_counter() - t
    raw_keys = Keyspace("bench-raw")
    day = raw_keys.daily(date(2026, 1, 1))
    t = time.perf_counter()
    for i, text in enumerate(texts):
        doc = build_entry(layer, text, tags=["bench"])
        pipe = client.pipeline(transaction=False)
        pipe.execute_command("JSON.SET", raw_keys.daily_entry(f"r{i}"), "$", json.dumps(doc))
        pipe.rpush(day, f"r{i}")
        await pipe.execute()
    raw_s = time.perf_counter() - t
    return {
        "log_per_s": round(n / log_s),
        "raw_per_s": round(n / raw_s),
        "ratio": round(raw_s / log_s, 3),
    }


async def import_entries(client: Redis, n: int, workdir: Path) -> dict[str, float]:
    keys = Keyspace("bench-import")
    layer = MemoryLayer(Store(client, keys), MemorySettings())
    path = workdir / "entries.jsonl"
    base = 1_700_000_000.0
    with path.open("w") as f:
        for i in range(n):
            record = {
                "kind": "daily",
                "content": sentence(),
                "source": "agent",
                "tags": [f"t{i % 20}"],
                "timestamp": base + i * 30,
            }
            f.write(json.dumps(record) + "\n")
    await MemorySearch(layer).ensure_index()
    before = await used_memory(client)
    t = time.perf_counter()
    report = await import_file(layer, path)
    seconds = time.perf_counter() - t
    await command(client, "FT.INFO", keys.memory_index())  # indexing is synchronous for JSON
    after = await used_memory(client)
    return {
        "seconds": round(seconds, 2),
        "imported": report.imported,
        "bytes_per_entry": round((after - before) / n),
    }


async def search_latency(
    client: Redis, n: int, queries: int, datatype: str = "float32"
) -> dict[str, float]:
    keys = Keyspace(f"bench-search-{datatype}")
    layer = MemoryLayer(Store(client, keys), MemorySettings(vector_datatype=datatype), None)
    embedder = PrecomputedEmbedder()
    layer.embedder = embedder  # type: ignore[assignment]
    search = MemorySearch(layer)
    await search.ensure_index()
    daily = DailyLog(layer)
    before = await used_memory(client)
    base = 1_700_000_000.0
    for start in range(0, n, FILL_BATCH):
        docs: list[dict[str, Any]] = [
            build_entry(layer, sentence(), tags=[f"t{i % 20}"], timestamp=base + i * 30)
            for i in range(start, min(start + FILL_BATCH, n))
        ]
        await layer.attach_embeddings(docs)
        await layer.store.apply(daily.mutation(docs), "bench.fill")
    after = await used_memory(client)
    await quiesce(client)
    settle_heap()  # as the daemon does once it is up
    timed = await timed_search(search, queries)
    return {
        "p50_ms": timed["search_p50_ms"],
        "p99_ms": timed["search_p99_ms"],
        "filtered_p50_ms": timed["search_filtered_p50_ms"],
        "filtered_p99_ms": timed["search_filtered_p99_ms"],
        "bytes_per_entry_with_vectors": round((after - before) / n),
    }


DAY_S = 86_400.0
STATUS_RUNS = 5


async def timed_search(search: MemorySearch, queries: int) -> dict[str, float]:
    """Hybrid search latency, plain and with a tag 5 % of entries carry, after a warm-up."""
    for _ in range(100):
        await search.search(" ".join(random.sample(QUERY_WORDS, 3)), limit=10)
    plain: list[float] = []
    filtered: list[float] = []
    for i in range(queries):
        query = " ".join(random.sample(QUERY_WORDS, 3))
        tags = [f"t{i % 20}"] if i % 4 == 0 else None  # a tag that 5 % of entries carry
        t = time.perf_counter()
        await search.search(query, limit=10, tags=tags)
        (filtered if tags else plain).append((time.perf_counter() - t) * 1000)
    return {
        "search_p50_ms": round(statistics.median(plain), 2),
        "search_p99_ms": percentile(plain, 0.99),
        "search_filtered_p50_ms": round(statistics.median(filtered), 2),
        "search_filtered_p99_ms": percentile(filtered, 0.99),
    }


def search_with(agent: Aether, **memory: Any) -> MemorySearch:
    """A search over the agent's namespace with other memory settings (precomputed vectors)."""
    settings = agent.settings.model_copy(
        update={"memory": agent.settings.memory.model_copy(update=memory)}
    )
    layer = MemoryLayer.open(settings, agent.client)
    layer.embedder = PrecomputedEmbedder()  # type: ignore[assignment]
    return MemorySearch(layer)


async def learned_search(agent: Aether, queries: int) -> dict[str, float]:
    """Hybrid search latency with ``memory.ranker = "learned"`` (the plain queries).

    The ranker is given to the search here: the product declines it with any embedder but
    the one it was trained on (``ranker_for``), and this bench's vectors are seeded random
    numbers, so the setting alone would time fusion's order. Its order over random
    similarities means nothing; its cost (the features read, the model run) is the figure.
    """
    search = search_with(agent, ranker="learned")
    search.ranker = shared_ranker()
    assert search.ranker is not None, "the packaged model did not load"
    for _ in range(50):
        await search.search(" ".join(random.sample(QUERY_WORDS, 3)), limit=10)
    times: list[float] = []
    for _ in range(queries):
        query = " ".join(random.sample(QUERY_WORDS, 3))
        t = time.perf_counter()
        await search.search(query, limit=10)
        times.append((time.perf_counter() - t) * 1000)
    return {
        "search_learned_p50_ms": round(statistics.median(times), 2),
        "search_learned_p99_ms": percentile(times, 0.99),
    }


RARE_TAG = "rare"
"""A tag one memory in a thousand carries (a filter as selective as one conversation's)."""

POLICIES = ("adhoc_bf", "batches", "auto", "adaptive")
"""``memory.knn_filtered_policy`` values the filtered search is timed with (brute force
first: its results are the exact ones the others are compared with)."""


async def filtered_policies(agent: Aether, queries: int) -> dict[str, Any]:
    """The filtered search under each HYBRID_POLICY, the same queries and query vectors for
    each: p50/p99 and how much of brute force's top 10 each finds. With a tag 5 % carry (a
    policy's figures) and with one a thousandth carry (``one_in_1000``: so selective a
    filter is what brute force is for)."""
    out: dict[str, Any] = {}
    for rare in (False, True):
        figures: dict[str, dict[str, float]] = {}
        exact: list[set[str]] = []
        for policy in POLICIES:
            search = search_with(agent, knn_filtered_policy=policy)
            words = random.Random(11)
            times: list[float] = []
            found: list[set[str]] = []
            for i in range(queries):
                query = " ".join(words.sample(QUERY_WORDS, 3))
                tags = [RARE_TAG] if rare else [f"t{i % 20}"]
                t = time.perf_counter()
                hits = await search.search(query, limit=10, tags=tags)
                times.append((time.perf_counter() - t) * 1000)
                found.append({h.key for h in hits})
            if not exact:
                exact = found  # brute force over the memories that pass: the exact answer
            overlap = [len(f & e) / len(e) for f, e in zip(found, exact, strict=True) if e]
            figures[policy] = {
                "filtered_p50_ms": round(statistics.median(times), 2),
                "filtered_p99_ms": percentile(times, 0.99),
                "share_of_brute_force_top10": round(statistics.fmean(overlap), 3) if overlap else 0,
            }
        if rare:
            out["one_in_1000"] = figures
        else:
            out.update(figures)
    return out


async def changes(agent: Aether, count: int, tag: str) -> None:
    """``count`` changed keys, ten per journal entry (list pushes and long-term documents)."""
    keys, store = agent.keys, agent.memory.store
    day = keys.daily(date(2026, 1, 2))
    for first in range(0, count, 10):
        m = Mutation()
        for i in range(first, min(first + 10, count)):
            if i % 2:
                m.rpush(day, f"{tag}{i}")
            else:
                doc = {"content": sentence(), "timestamp": 1_700_000_000.0 + i}
                m.json_set(keys.longterm(f"{tag}{i}"), doc)
        await store.apply(m, "bench")


def status_seconds(settings: Settings) -> float:
    """Median wall time of ``aether status --json`` as a process (no daemon: exit 1)."""
    env = {
        **os.environ,
        "AETHER_HOME": str(settings.home),
        "AETHER_NAMESPACE": settings.namespace,
    }
    times = []
    for _ in range(STATUS_RUNS):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "aether", "status", "--json"], env=env, capture_output=True
        )
        times.append(time.perf_counter() - t)
    return round(statistics.median(times), 3)


async def grow(agent: Aether, start: int, stop: int, subject: str) -> None:
    """Fill entries ``start`` to ``stop`` (vectors, tags, 6 days), ``subject`` in 60.

    Six days: within the daily log's retention, so that a maintenance run leaves them in
    place (older days become digests and their entries go, which would empty the
    namespace this bench grows).
    """
    layer = agent.memory
    daily = DailyLog(layer)
    base = time.time() - 6 * DAY_S
    every = max(1, (stop - start) // 60)
    for first in range(start, stop, FILL_BATCH):
        docs: list[dict[str, Any]] = [
            build_entry(
                layer,
                sentence() + (f" with {subject}" if (i - start) % every == 0 else ""),
                tags=[f"t{i % 20}", *([RARE_TAG] if i % 1000 == 7 else [])],
                timestamp=base + (i % 100_000) * 6 * DAY_S / 100_000,
            )
            for i in range(first, min(first + FILL_BATCH, stop))
        ]
        await layer.attach_embeddings(docs)
        await layer.store.apply(daily.mutation(docs), "bench.fill")


async def measure(
    agent: Aether, size: int, subject: str, queries: int, erase_only: bool = False
) -> dict[str, Any]:
    """Every figure of one size (see the module docs), or only the erasure's."""
    client = agent.client
    out: dict[str, Any] = {"used_memory_bytes": await used_memory(client)}
    if erase_only:
        return out | await erasure(agent, subject)
    await quiesce(client)
    settle_heap()
    out.update(await timed_search(agent.search, queries))
    out.update(await learned_search(agent, max(100, queries // 4)))
    out["filtered_by_policy"] = await filtered_policies(agent, max(50, queries // 4))
    times = []
    for _ in range(20):
        t = time.perf_counter()
        await agent.checkpoints.create(label="bench")
        times.append((time.perf_counter() - t) * 1000)
    out["checkpoint_ms"] = round(statistics.median(times), 3)
    target = await agent.checkpoints.create(label="before 10k changes")
    await changes(agent, 10_000, "rb")
    t = time.perf_counter()
    result = await agent.checkpoints.rollback_to(target.id, actor="bench")
    out["rollback_10k_changes_per_s"] = round(result.ops_applied / (time.perf_counter() - t))
    target = await agent.checkpoints.create(label="before 100k changes")
    await changes(agent, 100_000, "df")
    t = time.perf_counter()
    diff = await agent.checkpoints.diff(target.id)
    out["diff_100k_changes_s"] = round(time.perf_counter() - t, 2)
    out["diff_keys"] = len(diff.changes)
    await agent.checkpoints.rollback_to(target.id, actor="bench")
    engine = MaintenanceEngine(agent.memory, agent.checkpoints, None, actor="bench")
    t = time.perf_counter()
    await engine.run()
    out["maintenance_s"] = round(time.perf_counter() - t, 2)
    out.update(await erasure(agent, subject))
    out["status_s"] = status_seconds(agent.settings)
    return out


async def erasure(agent: Aether, subject: str) -> dict[str, Any]:
    """Erasing ``subject``: its time, phases, the time before the files, their state."""
    t = time.perf_counter()
    report = await agent.eraser("bench").erase(subject)
    return {
        "erase_s": round(time.perf_counter() - t, 2),
        "erased_items": sum(report.counts.values()),
        "erase_phase_s": {k: round(v, 2) for k, v in report.phase_s.items()},
        "erase_before_files_s": round(report.seconds, 2),  # the rest: the AOF, its check
        "erase_files": report.files,
    }


async def scale(
    sizes: list[int], queries: int, erase_only: bool = False
) -> dict[str, dict[str, Any]]:
    """One namespace in the default configuration, measured at each size as it grows."""
    home = Path(tempfile.mkdtemp(prefix="aether-bench-scale-"))
    settings = Settings(home=home, namespace="scale", embedding={"provider": "none"})
    client = await connect(settings)
    out: dict[str, dict[str, Any]] = {}
    try:
        agent = Aether(settings, client, actor="bench")
        agent.memory.embedder = PrecomputedEmbedder()  # type: ignore[assignment]
        agent.search = MemorySearch(agent.memory)
        await agent.search.ensure_index()
        empty = await used_memory(client)
        filled = 0
        for size in sizes:
            subject = f"Orvalline Kestrup {size}"
            t = time.perf_counter()
            await grow(agent, filled, size, subject)
            fill_s = time.perf_counter() - t
            filled = size
            figures = await measure(agent, size, subject, queries, erase_only)
            figures["fill_s"] = round(fill_s, 1)
            figures["bytes_per_entry_with_vectors"] = round(
                (figures["used_memory_bytes"] - empty) / size
            )
            figures["vector_datatype"] = settings.memory.vector_datatype
            out[str(size)] = figures
            print(json.dumps({str(size): figures}), file=sys.stderr, flush=True)
    finally:
        await client.aclose()
        EmbeddedRedis(settings).stop()
    return out


async def main(quick: bool, entries: int, erase_only: bool = False) -> None:
    if erase_only:
        sizes = sorted({min(entries, 100_000), entries})
        print(json.dumps({"entries": entries, "scale": await scale(sizes, 0, True)}, indent=2))
        return
    workdir = Path(tempfile.mkdtemp(prefix="aether-bench-mem-"))
    settings = Settings(home=workdir, embedding={"provider": "none"})
    client = await connect(settings)
    if quick:
        entries = min(entries, 20_000)
    n_entries = min(entries, 100_000)
    import_all_s: float | None = None
    try:
        log = await log_vs_raw(client, 2_000 if quick else 5_000)
        imported = await import_entries(client, n_entries, workdir)
        wider = await search_latency(client, n_entries, 500 if quick else 2_000, "float32")
        if entries > n_entries:  # the largest size's import, in a namespace of its own
            await command(client, "FLUSHALL")
            import_all_s = (await import_entries(client, entries, workdir))["seconds"]
            await command(client, "FLUSHALL")
    finally:
        await client.aclose()
        EmbeddedRedis(settings).stop()
    sizes = sorted({n_entries, entries})
    grown = await scale(sizes, 500 if quick else 2_000)
    first = grown[str(sizes[0])]  # the default configuration (float16) at the first size
    print(
        json.dumps(
            {
                "entries": entries,
                "checkpoint_ms": grown[str(sizes[0])]["checkpoint_ms"],
                "scale": grown,
                "log_vs_raw_ratio": log["ratio"],
                "log_per_s": log["log_per_s"],
                "raw_pipeline_per_s": log["raw_per_s"],
                "search_p50_ms": first["search_p50_ms"],
                "search_p99_ms": first["search_p99_ms"],
                "search_filtered_p50_ms": first["search_filtered_p50_ms"],
                "search_filtered_p99_ms": first["search_filtered_p99_ms"],
                "import_100k_s": imported["seconds"],
                "import_all_s": import_all_s,
                "bytes_per_entry": imported["bytes_per_entry"],
                "bytes_per_entry_with_vectors": first["bytes_per_entry_with_vectors"],
                "float16_search_p99_ms": first["search_p99_ms"],
                "float16_search_filtered_p99_ms": first["search_filtered_p99_ms"],
                "float16_bytes_per_entry_with_vectors": first["bytes_per_entry_with_vectors"],
                "float32_search_p99_ms": wider["p99_ms"],
                "float32_search_filtered_p99_ms": wider["filtered_p99_ms"],
                "float32_bytes_per_entry_with_vectors": wider["bytes_per_entry_with_vectors"],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(  # warnings to stderr: stdout is the JSON
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20k entries, fewer queries")
    parser.add_argument("--entries", type=int, default=100_000, help="the largest size")
    parser.add_argument("--erase-only", action="store_true", help="only the erasure, by size")
    options = parser.parse_args()
    asyncio.run(main(options.quick, options.entries, options.erase_only))

"""A fleet of agents on a local 3-primary Redis Cluster against one standalone Redis.

For each fleet size N (10, 100, 1,000 by default), N agents (namespaces ``{fleet-i}``,
one hash slot each) are opened as a fleet process opens them: each its own client and
search index (``open_agent_ms``, not in the other figures). Every agent logs
``--entries`` small daily entries (each a journaled write), then runs 3 searches;
agents run 32 at a time in one process. Printed per mode (``cluster``, ``standalone``):
the write throughput of the whole fleet (entries/s, wall clock), each agent's own write
rate (median), search p50/p99 over all agents' searches, and, for the cluster, how
evenly agents, keys and memory spread over the shards. Full-text search only
(``AETHER_EMBEDDING__PROVIDER=none``): the embedding model is shared by a fleet and is the
same cost on either topology.

Usage: python bench/fleet.py [--sizes 10,100,1000] [--entries 20]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from percentiles import percentile
from redis.crc import key_slot

from aether.app import Aether
from aether.config import Settings
from aether.memory.tiers.daily import DailyLog
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.testing.local_cluster import LocalCluster

CONCURRENCY = 32
QUERIES = ("deploy of the billing service", "orchard harvest notes", "what broke in staging")


async def open_fleet(settings: list[Settings]) -> tuple[list[Aether], list[float]]:
    """Every agent with its own client and ensured index; and how long each took (ms)."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(s: Settings) -> tuple[Aether, float]:
        async with gate:
            t = time.perf_counter()
            agent = Aether(s, await connect(s), actor="bench")
            await agent.ready()
            return agent, (time.perf_counter() - t) * 1000

    opened = await asyncio.gather(*(one(s) for s in settings))
    return [agent for agent, _ in opened], [ms for _, ms in opened]


async def each(agents: list[Aether], work: Callable[[Aether], Awaitable[Any]]) -> list[Any]:
    """Run ``work`` for every agent, ``CONCURRENCY`` at a time."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(agent: Aether) -> Any:
        async with gate:
            return await work(agent)

    return await asyncio.gather(*(one(agent) for agent in agents))


async def run_fleet(base: Settings, n: int, entries: int) -> dict[str, Any]:
    run = uuid.uuid4().hex[:6]
    fleet = [base.model_copy(update={"namespace": f"{{fleet-{run}-{i}}}"}) for i in range(n)]
    agents, open_ms = await open_fleet(fleet)

    async def write(agent: Aether) -> float:
        daily = DailyLog(agent.memory)
        t = time.perf_counter()
        for i in range(entries):
            await daily.log(
                f"entry {i}: deploy of the billing service {i % 7} went to staging", "agent"
            )
        return entries / (time.perf_counter() - t)

    async def search(agent: Aether) -> list[float]:
        latencies = []
        for query in QUERIES:
            t = time.perf_counter()
            await agent.search.search(query, limit=5)
            latencies.append((time.perf_counter() - t) * 1000)
        return latencies

    try:
        t = time.perf_counter()
        rates = await each(agents, write)
        wall = time.perf_counter() - t
        searched = [ms for agent in await each(agents, search) for ms in agent]
    finally:
        for agent in agents:
            await agent.client.aclose()
    return {
        "agents": n,
        "entries": n * entries,
        "open_agent_ms_median": round(statistics.median(open_ms), 1),
        "fleet_entries_per_s": round(n * entries / wall),
        "agent_entries_per_s_median": round(statistics.median(rates)),
        "search_p50_ms": round(statistics.median(searched), 2),
        "search_p99_ms": round(percentile(searched, 0.99), 2),
        "namespaces": [s.namespace for s in fleet],
    }


def spread(cluster: LocalCluster, namespaces: list[str]) -> list[dict[str, Any]]:
    """Agents, keys and memory per shard."""
    owners = [cluster.owner(int(key_slot(ns.encode()))) for ns in namespaces]
    out = []
    for port in cluster.ports:
        node = cluster.node(port)
        memory: Any = node.info("memory")
        out.append(
            {
                "port": port,
                "agents": owners.count(port),
                "keys": int(node.dbsize()),  # type: ignore[arg-type]
                "used_memory_mb": round(int(memory["used_memory"]) / 1e6, 1),
            }
        )
    return out


async def main(sizes: list[int], entries: int) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="aether-fleet-"))
    cluster = LocalCluster(home / "cluster").start()
    standalone = Settings(home=home / "standalone", embedding={"provider": "none"})
    clustered = Settings(
        home=home / "c",
        embedding={"provider": "none"},
        redis_url=cluster.url,  # type: ignore[arg-type]
        redis_cluster=True,
    )
    results: dict[str, Any] = {"entries_per_agent": entries, "concurrency": CONCURRENCY}
    try:
        for n in sizes:
            row: dict[str, Any] = {}
            for mode, base in (("cluster", clustered), ("standalone", standalone)):
                found = await run_fleet(base, n, entries)
                namespaces = found.pop("namespaces")
                if mode == "cluster":
                    found["shards"] = spread(cluster, namespaces)
                row[mode] = found
            results[f"n={n}"] = row
    finally:
        cluster.stop()
        EmbeddedRedis(standalone).stop()
    return results


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(  # warnings to stderr: stdout is the JSON
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    args = sys.argv[1:]
    sizes = [10, 100, 1000]
    entries = 20
    if "--sizes" in args:
        sizes = [int(x) for x in args[args.index("--sizes") + 1].split(",")]
    if "--entries" in args:
        entries = int(args[args.index("--entries") + 1])
    print(json.dumps(asyncio.run(main(sizes, entries)), indent=2))

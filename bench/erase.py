"""Erasing one subject from a namespace of 100k memories with an archive attached.

The namespace: 100k daily entries with 384-d vectors over 100 days (as bench/memory.py
fills them), followed from the start by a PostgreSQL archive (so every journal entry keeps
its values, and a base snapshot holds all of it), 50 checkpoints, and one subject (a
made-up name) in 60 of the entries, 3 long-term notes, a belief, a task, a chat
message and a chat session named after it. Then ``aether erase`` does its whole work:
scan, state, journal rebuild, the keys outside the state, the archive (rows, snapshots,
VACUUM FULL), the AOF rewrite and the wait until no file holds the name. Redis's SLOWLOG
(threshold 100 ms) shows any command over the step budget. Prints one JSON object.

Usage: python bench/erase.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import sys
import tempfile
import time
from typing import Any

import structlog
from memory import PrecomputedEmbedder, sentence

from aether.app import Aether
from aether.checkpoints.archive import Archive, open_archive
from aether.config import Settings
from aether.memory.retrieval.search import MemorySearch
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.memory.tiers.longterm import LongTermMemory
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect

DSN = os.environ.get("AETHER_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
SUBJECT = "Orvalline Kestrup"
DAY_S = 86_400.0


async def fill(agent: Aether, n: int) -> None:
    layer = agent.memory
    daily = DailyLog(layer)
    base = time.time() - 100 * DAY_S
    every = n // 60
    for start in range(0, n, 1000):
        docs: list[dict[str, Any]] = [
            build_entry(
                layer,
                sentence() + (f" with {SUBJECT}" if i % every == 0 else ""),
                tags=[f"t{i % 20}"],
                timestamp=base + i * 100 * DAY_S / n,
            )
            for i in range(start, min(start + 1000, n))
        ]
        await layer.attach_embeddings(docs)
        await layer.store.apply(daily.mutation(docs), "bench.fill")
        if start % 20_000 == 0:
            await agent.checkpoints.create(label=f"fill {start}")
    notes = LongTermMemory(layer)
    for i in range(3):
        await notes.add(f"{SUBJECT} note {i}: " + sentence())
    await agent.beliefs().remember(f"{SUBJECT} is the operator's physician")
    await agent.tasks.add(f"call {SUBJECT} back")
    chats = ChatSessions(layer)
    await chats.append("main", "user", f"please remember {SUBJECT}")
    await chats.append(SUBJECT.replace(" ", "-"), "user", "see you on Monday")  # named after
    for i in range(45):
        await agent.checkpoints.create(label=f"bench {i}")


async def main(quick: bool) -> None:
    random.seed(11)
    home = tempfile.mkdtemp(prefix="aether-bench-erase-")
    ns = f"erasebench{random.randrange(10**6)}"
    settings = Settings(
        home=home,
        namespace=ns,
        embedding={"provider": "none"},
        postgres_dsn=DSN,
        redis_appendfsync="always",  # a durable checkpoint then waits ~1 ms, not ~1 s
    )
    client = await connect(settings)
    agent = Aether(settings, client, actor="bench")
    agent.memory.embedder = PrecomputedEmbedder()  # type: ignore[assignment]
    agent.search = MemorySearch(agent.memory)
    await agent.search.ensure_index()
    n = 20_000 if quick else 100_000
    async with open_archive(DSN) as conn:
        archive = Archive(conn, client, agent.keys)
        await archive.sync()  # followed from the start
        started = time.perf_counter()
        await fill(agent, n)
        fill_s = time.perf_counter() - started
        started = time.perf_counter()
        await archive.sync()
        await archive.snapshot()  # a base snapshot holding every memory, the subject's too
        sync_s = time.perf_counter() - started
        archived = await conn.fetchval(
            "SELECT count(*) FROM aether_journal WHERE ns = $1", agent.keys.ns
        )
        snapshot_keys = await conn.fetchval(
            "SELECT count(*) FROM aether_snapshot_keys WHERE ns = $1", agent.keys.ns
        )
    await client.config_set("slowlog-log-slower-than", 100_000)
    await client.slowlog_reset()
    eraser = agent.eraser("bench")
    started = time.perf_counter()
    plan = await eraser.plan(SUBJECT)
    plan_s = time.perf_counter() - started
    started = time.perf_counter()
    report = await eraser.erase(SUBJECT)
    erase_s = time.perf_counter() - started
    slow = await client.slowlog_get(128)
    started = time.perf_counter()
    left = await eraser.verify(SUBJECT)
    verify_s = time.perf_counter() - started
    journal = await client.xlen(agent.keys.journal())
    await client.aclose()
    EmbeddedRedis(settings).stop()
    async with open_archive(DSN) as conn:  # leave the shared database as it was
        for table in ("aether_snapshots", "aether_journal", "aether_checkpoints"):
            await conn.execute(f"DELETE FROM {table} WHERE ns = $1", ns)
        for table in ("aether_snapshot_keys", "aether_journal"):
            await conn.execute(f"VACUUM FULL {table}")
    print(
        json.dumps(
            {
                "memories": n,
                "fill_s": round(fill_s, 1),
                "archive_sync_and_snapshot_s": round(sync_s, 1),
                "archived_entries": archived,
                "snapshot_keys": snapshot_keys,
                "journal_entries": journal,
                "dry_run_s": round(plan_s, 2),
                "dry_run_items": plan.total(),
                "erase_s": round(erase_s, 2),
                "phase_s": report.to_dict()["phase_s"],
                "counts": report.counts,
                "files": report.files,
                "verify_s": round(verify_s, 2),
                "found_after": [s.to_dict() for s in left],
                "redis_commands_over_100ms": [
                    {"ms": round(e["duration"] / 1000, 1), "command": str(e["command"])[:60]}
                    for e in slow
                ],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    structlog.configure(  # warnings to stderr: stdout is the JSON
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="20k memories")
    options = parser.parse_args()
    asyncio.run(main(options.quick))

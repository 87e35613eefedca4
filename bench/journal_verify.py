"""What the journal's hash chain costs to verify; prints one JSON object.

- verify_s: wall time of ``aether journal verify`` (the chain recomputed entry by entry
  and every live state key's digest compared) over a namespace of N journal entries, each
  a daily-log write (a document and its day list's append); the issue's bar is 10 s at
  100k entries.
- tamper_found: an out-of-band edit made before the last verify, found and named.

Usage: python bench/journal_verify.py [--entries 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from aether.checkpoints.chain import JournalChain
from aether.config import Settings
from aether.keys import Keyspace
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.store.state import Mutation, Store

BATCH = 200
"""Writes sent at once while filling (each is its own journal entry)."""


async def fill(store: Store, keys: Keyspace, entries: int) -> None:
    start = date(2026, 1, 1)
    for lo in range(0, entries, BATCH):
        writes = []
        for i in range(lo, min(lo + BATCH, entries)):
            day = keys.daily(start + timedelta(days=i // 200))  # 200 notes a day
            doc = {"content": f"note {i} about build feature-{i % 97}", "timestamp": i}
            m = Mutation().json_set(keys.daily_entry(f"n{i}"), doc).rpush(day, f"n{i}")
            writes.append(store.apply(m, "memory.log"))
        await asyncio.gather(*writes)


async def main(entries: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="aether-bench-"))
    settings = Settings(home=home, redis_appendfsync="everysec")
    client = await connect(settings)
    keys = Keyspace("bench-verify")
    try:
        t = time.perf_counter()
        await fill(Store(client, keys), keys, entries)
        fill_s = time.perf_counter() - t
        chain = JournalChain(client, keys)
        t = time.perf_counter()
        report = await chain.verify()
        verify_s = time.perf_counter() - t
        assert report.ok, report.breaks[:3]
        victim = keys.daily_entry(f"n{entries // 2}")
        await client.execute_command("JSON.SET", victim, "$.content", '"forged"')
        tampered = await chain.verify()
        found = [(b.kind, b.key) for b in tampered.breaks] == [("state-edited", victim)]
        result = {
            "entries": report.entries,
            "state_keys": report.keys,
            "fill_s": round(fill_s, 1),
            "verify_s": round(verify_s, 2),
            "entries_per_s": round(report.entries / verify_s),
            "tamper_found": found,
        }
    finally:
        await client.aclose()
        EmbeddedRedis(settings).stop()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(  # warnings to stderr: stdout is the JSON
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    asyncio.run(main(parser.parse_args().entries))

"""What a fork and an "as of" read cost at scale; prints one JSON object.

A namespace of N memories (daily-log entries written as the memory layer writes them,
with their day lists and index, no vectors) and a checkpoint; then M more writes, so the
copy rebuilds changed keys from the journal too. Measured:

- fork_s: ``checkpoint_fork`` into a new namespace (the copy, the chain's rebase, its
  indexes); the issue's bar is 30 s at 100k memories.
- as_of_s: ``belief_list`` as of the checkpoint's time (the state rebuilt into a scratch
  namespace, read, dropped).
- fork_verified: the fork's ``journal verify`` is clean and its key count is the source's
  at the checkpoint.

Usage: python bench/fork.py [--memories 100000] [--after 1000]
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

from aether.config import Settings
from aether.operations import REGISTRY, Caller, Parts
from aether.operations import beliefs as _beliefs  # noqa: F401  (registers the operations)
from aether.operations import checkpoints as _checkpoints  # noqa: F401
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.store.state import Mutation

BATCH = 200


async def fill(parts: Parts, start: int, count: int) -> None:
    keys, store = parts.keys, parts.memory.store
    first = date(2026, 1, 1)
    for lo in range(start, start + count, BATCH):
        writes = []
        for i in range(lo, min(lo + BATCH, start + count)):
            doc = {
                "id": f"n{i}",
                "kind": "daily",
                "content": f"note {i} about build feature-{i % 97} and host {i % 13}",
                "timestamp": 1_767_225_600 + i,
                "day": str(first + timedelta(days=i // 500)),
                "source": "agent",
                "tags": [],
                "session": "",
                "score": 0.5,
            }
            m = Mutation().json_set(keys.daily_entry(f"n{i}"), doc)
            m.rpush(keys.daily(first + timedelta(days=i // 500)), f"n{i}")
            writes.append(store.apply(m, "memory.log"))
        await asyncio.gather(*writes)


async def main(memories: int, after: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="aether-bench-"))
    settings = Settings(home=home, redis_appendfsync="everysec", embedding={"provider": "none"})  # type: ignore[arg-type]
    client = await connect(settings)
    parts = Parts(settings, client, actor="bench")
    caller = Caller("bench")
    try:
        await parts.ready()
        await fill(parts, 0, memories)
        checkpoint = await parts.checkpoints.create(label="bench")
        at = time.time()
        await asyncio.sleep(0.01)
        await fill(parts, memories, after)
        fork = REGISTRY["checkpoint_fork"]
        t = time.perf_counter()
        report = await fork.invoke(parts, caller, {"id": checkpoint.id, "to": "bench-fork"})
        fork_s = time.perf_counter() - t
        forked = Parts(settings.model_copy(update={"namespace": "bench-fork"}), client)
        verified = await forked.journal.verify()
        t = time.perf_counter()
        await REGISTRY["belief_list"].invoke(parts, caller, {"as_of": at})
        as_of_s = time.perf_counter() - t
        result = {
            "memories": memories,
            "written_after_checkpoint": after,
            "keys_copied": report["keys"],
            "fork_s": round(fork_s, 2),
            "as_of_s": round(as_of_s, 2),
            "fork_verified": verified.ok and verified.keys == report["keys"],
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
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--after", type=int, default=1_000)
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.after))

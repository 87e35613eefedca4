"""AetherCheckpointSaver beside langgraph-checkpoint-redis on one embedded Redis; prints JSON.

Both checkpointers run on the same embedded Redis (default settings: ``appendfsync
always``), in one process, one after the other:

- ``conformance``: LangGraph's own suite (``langgraph-checkpoint-conformance``) for each,
  per capability: passed and failed tests (``null`` when the saver does not implement it);
- ``latency_ms``: p50/p99 of ``aput`` (a checkpoint with a ``messages`` channel of 10
  messages of ~200 characters, the way a chat graph's state grows), ``aput_writes`` (two
  writes), ``aget_tuple`` of the newest checkpoint, and ``alist`` of the newest 10, over
  ``--ops`` operations on one thread.

aether journals every write (its inverse in the same atomic step) so that rollback,
undo and erasure reach the threads; Redis's saver writes JSON documents and indexes them
with RediSearch. Usage: python bench/langgraph.py [--ops 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import _paths  # noqa: F401  (first: this folder off the path; it would hide langgraph)
import structlog
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from redis.asyncio import Redis

from aether.app import Aether
from aether.config import Settings
from aether.integrations.langgraph import AetherCheckpointSaver
from aether.server.embedded import EmbeddedRedis


def report_of(report: Any) -> dict[str, Any]:
    return {
        name: (
            None
            if not result.detected
            else {
                "passed": result.tests_passed,
                "failed": result.tests_failed,
                "failures": [f.splitlines()[0][:120] for f in result.failures],
            }
        )
        for name, result in sorted(report.results.items())
    }


def checkpoint(step: int, parent_messages: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "v": 1,
        "id": str(uuid6(clock_seq=-1)),
        "ts": "2026-11-27T00:00:00+00:00",
        "channel_values": {"messages": parent_messages, "step": step},
        "channel_versions": {"messages": step + 1, "step": step + 1},
        "versions_seen": {"agent": {"messages": step}},
        "updated_channels": ["messages", "step"],
    }


async def timed(samples: list[float], call: Callable[[], Awaitable[Any]]) -> Any:
    start = time.perf_counter()
    result = await call()
    samples.append((time.perf_counter() - start) * 1000)
    return result


def summary(samples: list[float]) -> dict[str, float]:
    from bench.percentiles import percentile  # the one formula (bench/ is off the path)

    return {"p50": round(statistics.median(samples), 3), "p99": percentile(samples, 0.99, 3)}


async def latency(saver: BaseCheckpointSaver[Any], ops: int) -> dict[str, dict[str, float]]:
    thread = f"bench-{uuid.uuid4().hex[:8]}"
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    messages: list[dict[str, str]] = []
    puts: list[float] = []
    writes: list[float] = []
    gets: list[float] = []
    lists: list[float] = []
    for step in range(ops):
        messages = [*messages[-9:], {"role": "user", "content": f"message {step} " + "x" * 190}]
        cp = checkpoint(step, messages)
        versions = {"messages": step + 1, "step": step + 1}
        metadata = {"source": "loop", "step": step, "parents": {}}
        config = await timed(
            puts,
            lambda: saver.aput(config, cp, metadata, versions),  # noqa: B023
        )
        await timed(
            writes,
            lambda: saver.aput_writes(
                config,  # noqa: B023
                [("messages", {"role": "assistant", "content": "ok"}), ("step", step)],  # noqa: B023
                task_id=str(uuid.uuid4()),
            ),
        )
        latest = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        await timed(gets, lambda: saver.aget_tuple(latest))  # noqa: B023

        async def newest_ten() -> list[Any]:
            return [t async for t in saver.alist(latest, limit=10)]  # noqa: B023

        await timed(lists, newest_ten)
    return {
        "aput": summary(puts),
        "aput_writes": summary(writes),
        "aget_tuple": summary(gets),
        "alist_10": summary(lists),
    }


async def main(ops: int) -> None:
    structlog.configure(  # warnings to stderr: stdout is the JSON
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    home = Path(tempfile.mkdtemp(prefix="aether-bench-langgraph-"))
    base = Settings(home=home, embedding={"provider": "none"})
    server = EmbeddedRedis(base)
    server.start()
    endpoint = server.endpoint()
    out: dict[str, Any] = {"ops": ops, "conformance": {}, "latency_ms": {}}
    try:

        @checkpointer_test(name="AetherCheckpointSaver")
        async def aether_saver() -> AsyncIterator[AetherCheckpointSaver]:
            settings = base.model_copy(update={"namespace": f"lg{uuid.uuid4().hex[:8]}"})
            async with Aether.open(settings) as app:
                yield AetherCheckpointSaver(app)

        @checkpointer_test(name="AsyncRedisSaver")
        async def redis_saver() -> AsyncIterator[AsyncRedisSaver]:
            client = Redis(unix_socket_path=str(endpoint.unix_socket), password=endpoint.password)
            # every suite starts empty (list(None) reads every thread of the server)
            for key in [k async for k in client.scan_iter(match="checkpoint*")]:
                await client.delete(key)
            saver = AsyncRedisSaver(redis_client=client)
            await saver.asetup()
            try:
                yield saver
            finally:
                await client.aclose()

        for name, registered in (("aether", aether_saver), ("redis", redis_saver)):
            start = time.perf_counter()
            report = await validate(registered)
            out["conformance"][name] = {
                "capabilities": report_of(report),
                "seconds": round(time.perf_counter() - start, 1),
            }

        settings = base.model_copy(update={"namespace": "lgbench"})
        async with Aether.open(settings) as app:
            out["latency_ms"]["aether"] = await latency(AetherCheckpointSaver(app), ops)
        client = Redis(unix_socket_path=str(endpoint.unix_socket), password=endpoint.password)
        saver = AsyncRedisSaver(redis_client=client)
        await saver.asetup()
        try:
            out["latency_ms"]["redis"] = await latency(saver, ops)
        finally:
            await client.aclose()
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=300, help="operations of each kind")
    asyncio.run(main(parser.parse_args().ops))

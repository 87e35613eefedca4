"""The learned ranker's cost per search; prints one JSON object.

Loads one BEAM chat (long technical messages: the costliest features to read) as
``bench/beam.py`` does and asks every question with ``limit=10``, once with fusion's order
and once with the learned ranker, alternating, then once more with the learned ranker;
reports the search p50 / p99 of each without the query's embedding (cached by the first
ask). The ranker reads a memory's words once per process, as a daemon does: ``learned``
keeps what earlier questions read, ``learned_cold`` (the second pass) reads every candidate
afresh, as the first search over memories never ranked before does.

Usage: python bench/ranker_latency.py [DIR] [--chat N]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import beam
from locomo import with_fusion
from percentiles import percentile

from aether.config import Settings
from aether.memory.retrieval.ranker import _cached_memory_text
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage.layer import MemoryLayer
from aether.runtime.heap import settle_heap
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect


async def run(root: Path, chat: str) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="aether-ranker-latency-"))
    base = Settings(home=home)
    client = await connect(base)
    times: dict[str, list[float]] = {"fusion": [], "learned": [], "learned_cold": []}
    try:
        settings = base.model_copy(update={"namespace": f"rl{uuid.uuid4().hex[:8]}"})
        layer = MemoryLayer.open(settings, client)
        fused = MemorySearch(layer)
        await fused.ensure_index()
        learned_layer = MemoryLayer.open(with_fusion(settings, "ranker=learned"), client)
        learned_layer.embedder = layer.embedder
        learned = MemorySearch(learned_layer)
        msgs = beam.messages(root / chat)
        await beam.load(layer, msgs)
        asked_at = max(m.timestamp for m in msgs) + 60
        settle_heap()
        questions = [q for q in beam.questions(root / chat) if q.ability != "abstention"]
        for q in questions:
            await fused.search(q.text, limit=10, now=asked_at)  # the embedding, cached
            for name, search in (("fusion", fused), ("learned", learned)):
                t = time.perf_counter()
                await search.search(q.text, limit=10, now=asked_at)
                times[name].append((time.perf_counter() - t) * 1000)
        for q in questions:  # after: the first pass kept what it read
            _cached_memory_text.cache_clear()
            t = time.perf_counter()
            await learned.search(q.text, limit=10, now=asked_at)
            times["learned_cold"].append((time.perf_counter() - t) * 1000)
    finally:
        await client.aclose()
        EmbeddedRedis(base).stop()
    return {
        "data": str(root / chat),
        "messages": len(msgs),
        "questions": len(questions),
        **{
            f"{name}_p50_p99_ms_excl_embedding": [
                percentile(values, 0.5),
                percentile(values, 0.99),
            ]
            for name, values in times.items()
        },
    }


def main() -> None:
    import logging

    import structlog

    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    args = sys.argv[1:]
    chat = "1"
    if "--chat" in args:
        chat = args.pop(args.index("--chat") + 1)
        args.remove("--chat")
    root = Path(args[0]) if args else beam.DEFAULT
    print(json.dumps(asyncio.run(run(root, chat)), indent=2))


if __name__ == "__main__":
    main()

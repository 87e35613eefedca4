"""The learned ranker's training data: each dev question's candidates and their features.

Loads a dev split as its bench does (``bench/locomo.py``, ``bench/beam.py``), asks each
question with evidence once (``limit=10``, fusion ranking, the default settings) and writes
one JSON line per question: its conversation (the cross-validation group), ability, the
evidence count, and per candidate (fusion's order) its feature row
(:data:`aether.memory.retrieval.ranker.FEATURES`, captured by the search itself through
``MemorySearch.feature_observer``, so training reads the rows the ranker will read) and
whether it is evidence. ``bench/train_ranker.py`` trains on these files.

``--adapter MAPS`` (a probe, decision 0008): each conversation's questions are embedded,
then moved by the linear map ``bench/query_adapter.py --maps`` kept for it (trained without
that conversation), before the search reads them; nothing in the product reads a map.
``--move F`` applies only that share of each map's move (``I + F (W - I)``; default 1).

Usage:
    python bench/ranker_data.py locomo OUT.jsonl [PATH] [--adapter MAPS [--move F]]
    python bench/ranker_data.py beam OUT.jsonl [DIR] [--chats 1,2,...] [--adapter MAPS [--move F]]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import beam
import locomo
import numpy as np
from query_adapter import BEAM_SPLITS, map_key
from redis.asyncio import Redis

from aether.config import Settings
from aether.memory.retrieval.ranker import rows_to_json
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage.layer import MemoryLayer
from aether.runtime.heap import settle_heap
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect

LIMIT = 10
Maps = dict[str, np.ndarray]


class Capture:
    """The feature rows of the last ``LIMIT`` search (``MemorySearch.feature_observer``)."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.rows: np.ndarray = np.zeros((0, 0))

    def __call__(self, query: str, limit: int, keys: list[str], rows: np.ndarray) -> None:
        if limit == LIMIT:
            self.keys, self.rows = list(keys), rows


async def _ask(
    search: MemorySearch,
    capture: Capture,
    text: str,
    asked_at: float,
    to_id: dict[str, Any],
    evidence: set[Any],
) -> dict[str, Any]:
    # a search that ranks nothing observes nothing: no row may stay from the last question
    capture.keys, capture.rows = [], np.zeros((0, 0))
    await search.search(text, limit=LIMIT, now=asked_at)
    return {
        "evidence": len(evidence),
        "ids": [str(to_id.get(k)) for k in capture.keys],
        "labels": [int(to_id.get(k) in evidence) for k in capture.keys],
        "rows": rows_to_json(capture.rows),
    }


async def _observed(settings: Settings, client: Redis) -> tuple[MemoryLayer, MemorySearch, Capture]:
    """A new namespace's memory layer and a search whose feature rows are captured."""
    named = settings.model_copy(update={"namespace": f"rd{uuid.uuid4().hex[:8]}"})
    layer = MemoryLayer.open(named, client)
    search, capture = MemorySearch(layer), Capture()
    search.feature_observer = capture
    await search.ensure_index()
    return layer, search, capture


def _adapt(layer: MemoryLayer, maps: Maps | None, conversation: str) -> None:
    """Move every query vector ``layer`` makes from now on by ``conversation``'s map."""
    if maps is None:
        return
    w = maps[conversation]
    plain = layer.embed

    async def adapted(text: str) -> list[float] | None:
        vector = await plain(text)
        if vector is None:
            return None
        moved = w @ np.asarray(vector, dtype=np.float32)
        return [float(v) for v in moved / np.linalg.norm(moved)]

    layer.embed = adapted  # type: ignore[method-assign]


async def _locomo(path: Path, out: Any, settings: Settings, maps: Maps | None) -> int:
    client = await connect(settings)
    written = 0
    try:
        for n, sample in enumerate(json.loads(path.read_text())):
            layer, search, capture = await _observed(settings, client)
            to_id = await locomo.load(layer, sample)
            _adapt(layer, maps, map_key("locomo", sample["sample_id"]))
            asked_at = max(ts for _, _, ts in locomo.turns(sample)) + 60
            settle_heap()
            for text, evidence, category in locomo.questions(sample):
                row = await _ask(search, capture, text, asked_at, to_id, evidence)
                row |= {"split": "locomo", "group": f"locomo-{n}", "ability": str(category)}
                out.write(json.dumps(row) + "\n")
                written += 1
    finally:
        await client.aclose()
    return written


async def _beam(
    root: Path, chats: list[str], out: Any, settings: Settings, maps: Maps | None
) -> int:
    client = await connect(settings)
    written = 0
    try:
        for chat in chats:
            msgs = beam.messages(root / chat)
            layer, search, capture = await _observed(settings, client)
            to_id = await beam.load(layer, msgs)
            _adapt(layer, maps, map_key(BEAM_SPLITS.get(root.name, root.name), chat))
            asked_at = max(m.timestamp for m in msgs) + 60
            settle_heap()
            for q in beam.questions(root / chat):
                if q.ability == "abstention":
                    continue
                row = await _ask(search, capture, q.text, asked_at, to_id, q.evidence)
                row |= {"split": root.name, "group": f"{root.name}-{chat}", "ability": q.ability}
                out.write(json.dumps(row) + "\n")
                written += 1
    finally:
        await client.aclose()
    return written


def main() -> None:
    import logging

    import structlog

    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    args = sys.argv[1:]
    chats = [str(n) for n in range(1, 11)]
    if "--chats" in args:
        chats = args.pop(args.index("--chats") + 1).split(",")
        args.remove("--chats")
    move = 1.0
    if "--move" in args:
        move = float(args.pop(args.index("--move") + 1))
        args.remove("--move")
    maps: Maps | None = None
    if "--adapter" in args:
        kept = np.load(args.pop(args.index("--adapter") + 1))
        args.remove("--adapter")
        eye = np.eye(kept[kept.files[0]].shape[0], dtype=np.float32)
        maps = {name: eye + move * (kept[name] - eye) for name in kept.files}
    which, target = args[0], Path(args[1])
    home = Path(tempfile.mkdtemp(prefix="aether-ranker-data-"))
    settings = Settings(home=home)
    try:
        with target.open("w") as out:
            if which == "locomo":
                n = asyncio.run(
                    _locomo(Path(args[2]) if len(args) > 2 else locomo.DEFAULT, out, settings, maps)
                )
            else:
                root = Path(args[2]) if len(args) > 2 else beam.DEFAULT
                n = asyncio.run(_beam(root, chats, out, settings, maps))
    finally:
        EmbeddedRedis(settings).stop()
    print(json.dumps({"questions": n, "file": str(target)}))


if __name__ == "__main__":
    main()

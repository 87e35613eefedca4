"""Retrieval quality on LoCoMo (or any file in its format); prints one JSON object.

Each turn is logged as a daily entry (``speaker: text``, the session's date and time as
its timestamp, the speaker as a tag); each question of categories 1-4 with evidence is a
search. recall@k = fraction of the question's evidence turns among the top k results.

Usage: python bench/locomo.py [PATH] [--embeddings local|none]
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from aether.config import Settings
from aether.memory.daily import DailyLog, build_entry
from aether.memory.layer import MemoryLayer
from aether.memory.search import MemorySearch
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.tokens import count_tokens

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo-dev.json"
KS = (5, 10, 25)
_DIA = re.compile(r"^D\d+:\d+$")


def turns(sample: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(dia_id, content, timestamp) of every turn of a conversation."""
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        for i, turn in enumerate(conv[f"session_{n}"]):
            out.append((turn["dia_id"], f"{turn['speaker']}: {turn['text']}", when.timestamp() + i))
        n += 1
    return out


def questions(sample: dict[str, Any]) -> list[tuple[str, set[str]]]:
    """(question, evidence dia_ids) for categories 1-4 with well-formed evidence."""
    out = []
    for qa in sample["qa"]:
        if qa.get("category") not in (1, 2, 3, 4):
            continue
        evidence = {e.strip() for e in qa.get("evidence", []) if _DIA.match(e.strip())}
        if evidence:
            out.append((qa["question"], evidence))
    return out


async def load(layer: MemoryLayer, sample: dict[str, Any]) -> dict[str, str]:
    """Log every turn; returns entry key -> dia_id."""
    daily = DailyLog(layer)
    key_to_dia: dict[str, str] = {}
    rows = turns(sample)
    for start in range(0, len(rows), 200):
        batch = rows[start : start + 200]
        docs = []
        for _dia, content, ts in batch:
            speaker = content.split(":", 1)[0]
            docs.append(build_entry(layer, content, source="user", tags=[speaker], timestamp=ts))
        await layer.attach_embeddings(docs)
        await layer.store.apply(daily.mutation(docs), "bench.load")
        for doc, (dia, _, _) in zip(docs, batch, strict=True):
            key_to_dia[layer.keys.daily_entry(doc["id"])] = dia
    return key_to_dia


async def run(path: Path, embeddings: str) -> dict[str, Any]:
    data = json.loads(path.read_text())
    home = Path(tempfile.mkdtemp(prefix="aether-locomo-"))
    base = Settings(home=home, embeddings=embeddings)  # type: ignore[arg-type]
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    top10_tokens: list[int] = []
    latencies: list[float] = []
    client = await connect(base)
    try:
        for sample in data:
            settings = base.model_copy(update={"namespace": f"locomo{uuid.uuid4().hex[:8]}"})
            layer = MemoryLayer.open(settings, client)
            search = MemorySearch(layer)
            await search.ensure_index()
            key_to_dia = await load(layer, sample)
            for question, evidence in questions(sample):
                for k in KS:  # each k asked for as a caller would: limit=k
                    t = time.perf_counter()
                    hits = await search.search(question, limit=k)
                    latencies.append((time.perf_counter() - t) * 1000)
                    found = {key_to_dia.get(h.key) for h in hits}
                    recalls[k].append(len(evidence & found) / len(evidence))
                    if k == 10:
                        top10_tokens.append(sum(count_tokens(h.content) for h in hits))
    finally:
        await client.aclose()
        EmbeddedRedis(base).stop()
    return {
        "file": str(path),
        "embeddings": embeddings,
        "questions": len(recalls[5]),
        **{f"recall@{k}": round(statistics.fmean(v), 3) for k, v in recalls.items()},
        "top10_tokens": round(statistics.fmean(top10_tokens), 1),
        "search_p50_ms_incl_embedding": round(statistics.median(latencies), 2),
    }


def main() -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    embeddings = "local"
    if "--embeddings" in sys.argv:
        embeddings = sys.argv[sys.argv.index("--embeddings") + 1]
        args = [a for a in args if a != embeddings]
    path = Path(args[0]) if args else DEFAULT
    print(json.dumps(asyncio.run(run(path, embeddings)), indent=2))


if __name__ == "__main__":
    main()

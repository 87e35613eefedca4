"""The console's server time per page on a namespace of 100k memories; prints one JSON object.

The namespace: 100k daily entries with 384-d vectors over 100 days (as bench/memory.py
fills them), 300 beliefs of which 100 superseded, a small entity graph, 50 checkpoints
with the last one 200 changes back, 2,000 chat messages in one session and 5,000 ledger
entries over 14 days. Each page is requested through the ASGI app in process (auth,
templates, operations, Redis; no network), 5 warm-up requests then ``--runs`` timed ones;
the search page's query embedding is precomputed (the model's time is not the page's).

Usage: python bench/console.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from typing import Any

import httpx
from memory import PrecomputedEmbedder, quiesce, sentence
from percentiles import percentile

from aether.app import Aether
from aether.config import Settings
from aether.identity.bootstrap import default_identity_dir
from aether.interfaces.console import build_app
from aether.memory.knowledge.graph import EntityIn, RelationIn, entity_id
from aether.memory.retrieval.search import MemorySearch
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.registry.model import new_entry
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect

TOKEN = "bench-token"
DAY_S = 86_400.0


async def fill(agent: Aether, n: int) -> dict[str, Any]:
    """The namespace the pages are timed on; returns ids the pages need."""
    layer = agent.memory
    daily = DailyLog(layer)
    now = time.time()
    base = now - 100 * DAY_S
    for start in range(0, n, 1000):
        docs: list[dict[str, Any]] = [
            build_entry(
                layer, sentence(), tags=[f"t{i % 20}"], timestamp=base + i * 100 * DAY_S / n
            )
            for i in range(start, min(start + 1000, n))
        ]
        await layer.attach_embeddings(docs)
        await layer.store.apply(daily.mutation(docs), "bench.fill")
    beliefs = agent.beliefs()
    for i in range(100):
        await beliefs.remember(f"project p{i} runs on server s{i}")
        await beliefs.remember(f"project p{i} runs on server s{i + 1000}")
        await beliefs.remember(f"the operator likes tool t{i}")
    for i in range(40):
        person, place = f"Person{i}", f"Place{i % 8}"
        entities = [EntityIn("person", person), EntityIn("place", place)]
        source, target = entity_id("person", person), entity_id("place", place)
        relations = [RelationIn("lives_in", source, target)]
        await agent.graph.record(entities, relations)
    chats = ChatSessions(layer)
    for i in range(2000):
        role = "user" if i % 2 == 0 else "assistant"
        await chats.append("main", role, sentence(), timestamp=now - (2000 - i) * 60)
    ledger = agent.ledger()
    for i in range(5000):
        kind = "llm_call" if i % 2 == 0 else "tool_call"
        await ledger.append(
            new_entry(
                kind,
                summary="bench",
                prompt_tokens=500 if kind == "llm_call" else 0,
                completion_tokens=80 if kind == "llm_call" else 0,
                cost_usd=0.001 if kind == "llm_call" else 0.0,
                detail={"outcome": "ok", "tool": "grep"} if kind == "tool_call" else {},
            )
        )
    for i in range(50):
        last = await agent.checkpoints.create(label=f"bench {i}")
    for _ in range(200):
        entry = await daily.log(sentence(), "agent", ["after"])
    belief = (await beliefs.select("active"))[0]
    day = time.strftime("%Y-%m-%d", time.gmtime(now - 50 * DAY_S))
    return {"checkpoint": last.id, "belief": belief["id"], "day": day, "entry": entry["id"]}


async def main(quick: bool, runs: int) -> None:
    random.seed(7)
    home = tempfile.mkdtemp(prefix="aether-bench-console-")
    settings = Settings(home=home, embedding={"provider": "none"})
    client = await connect(settings)
    agent = Aether(settings, client, actor="bench")
    agent.memory.embedder = PrecomputedEmbedder()  # type: ignore[assignment]
    agent.search = MemorySearch(agent.memory)
    await agent.search.ensure_index()
    await agent.identity.ensure(default_identity_dir())
    n = 20_000 if quick else 100_000
    started = time.perf_counter()
    ids = await fill(agent, n)
    fill_s = time.perf_counter() - started
    await quiesce(client)
    pages = {
        "overview": "/",
        "conversation": "/conversation?session=main",
        "memory_search": "/memory?q=deploy+redis+timeout&day=" + ids["day"],
        "beliefs": "/beliefs",
        "belief": f"/beliefs/{ids['belief']}",
        "graph": "/graph?q=Person3",
        "checkpoints": "/checkpoints",
        "checkpoint_diff": f"/checkpoints/{ids['checkpoint']}/diff",
        "ledger": "/ledger",
        "identity_context": "/identity?q=what+did+we+deploy",
        "approvals": "/approvals",
        "erasures": "/erasures",
        "memory_item": f"/memory/{ids['entry']}",
    }
    transport = httpx.ASGITransport(app=build_app(agent, TOKEN))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    timings: dict[str, dict[str, float]] = {}
    async with httpx.AsyncClient(transport=transport, base_url="http://b", headers=headers) as http:
        for name, path in pages.items():
            for _ in range(5):
                assert (await http.get(path)).status_code == 200, name
            ms = []
            for _ in range(runs):
                t = time.perf_counter()
                response = await http.get(path)
                ms.append((time.perf_counter() - t) * 1000)
                assert response.status_code == 200, (name, response.text[:200])
            timings[name] = {
                "p50_ms": round(statistics.median(ms), 1),
                "p99_ms": percentile(ms, 0.99),
                "bytes": len(response.content),
            }
    await client.aclose()
    EmbeddedRedis(settings).stop()  # the bench's own server, in its temporary home
    shutil.rmtree(home, ignore_errors=True)
    worst = max(t["p99_ms"] for t in timings.values())
    print(
        json.dumps(
            {
                "memories": n,
                "fill_s": round(fill_s, 1),
                "runs": runs,
                "pages": timings,
                "worst_p99_ms": worst,
                "under_300_ms": worst < 300,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="20k memories")
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    asyncio.run(main(options.quick, options.runs))

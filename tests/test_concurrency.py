"""One app under many concurrent calls: the client's pool waits instead of refusing."""

from __future__ import annotations

import asyncio
import operator
import uuid
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from aether.app import Aether
from aether.config import EmbeddingSettings, Settings
from aether.errors import PoolExhaustedError, UnavailableError
from aether.integrations.langgraph import AetherCheckpointSaver, AetherStore


def _settings(home: Path, **overrides: object) -> Settings:
    return Settings(
        home=home,
        namespace=f"cc{uuid.uuid4().hex[:10]}",
        embedding=EmbeddingSettings(provider="none"),
        **overrides,  # type: ignore[arg-type]
    )


class Counter(TypedDict):
    steps: Annotated[list[str], operator.add]


def _graph(saver: AetherCheckpointSaver):  # type: ignore[no-untyped-def]
    def first(state: Counter) -> dict[str, object]:
        return {"steps": ["first"]}

    def second(state: Counter) -> dict[str, object]:
        return {"steps": ["second"]}

    builder = StateGraph(Counter)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder.compile(checkpointer=saver)


async def test_two_hundred_graph_runs_and_five_hundred_store_reads_at_once(
    redis_home: Path,
) -> None:
    async with Aether.open(_settings(redis_home)) as app:
        graph = _graph(AetherCheckpointSaver(app))

        async def one_run(n: int) -> list[str]:
            config = {"configurable": {"thread_id": f"t{n}"}}
            result = await graph.ainvoke({"steps": [f"start {n}"]}, config)
            return list(result["steps"])

        runs = await asyncio.gather(*(one_run(n) for n in range(200)))
        assert all(steps == [f"start {n}", "first", "second"] for n, steps in enumerate(runs))

        store = AetherStore(app)
        for n in range(20):
            await store.aput(("users", f"u{n}"), "prefs", {"n": n}, index=False)
        reads = await asyncio.gather(
            *(store.aget(("users", f"u{n % 20}"), "prefs") for n in range(500))
        )
        assert [r.value["n"] for r in reads if r is not None] == [n % 20 for n in range(500)]


async def test_a_small_pool_makes_calls_wait_then_names_itself_when_full(
    redis_home: Path,
) -> None:
    settings = _settings(redis_home, redis_pool_size=3, redis_pool_timeout_s=5.0)
    async with Aether.open(settings) as app:
        client = app.client
        # more calls than connections: they wait their turn and all succeed
        values = await asyncio.gather(*(client.incr(f"{settings.namespace}:n") for _ in range(60)))
        assert sorted(int(v) for v in values) == list(range(1, 61))
        assert len(client.connection_pool._in_use_connections) == 0  # type: ignore[attr-defined]

    settings = _settings(redis_home, redis_pool_size=2, redis_pool_timeout_s=0.3)
    async with Aether.open(settings) as app:
        client = app.client
        waiting = f"{settings.namespace}:never"
        held = [asyncio.create_task(client.blpop([waiting], timeout=2)) for _ in range(2)]
        await asyncio.sleep(0.2)  # both connections are now blocked in BLPOP
        with pytest.raises(PoolExhaustedError, match="connections of this process's Redis pool"):
            await client.ping()
        with pytest.raises(PoolExhaustedError) as caught:
            await client.ping()
        assert not isinstance(caught.value, UnavailableError), "Redis itself is not blamed"
        assert await asyncio.gather(*held) == [None, None]
        assert await client.ping()  # free again once the holders are done

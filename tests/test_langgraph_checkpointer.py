"""AetherCheckpointSaver: LangGraph's own conformance suite, a real graph, rollback and erasure."""

from __future__ import annotations

import asyncio
import operator
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import ProgressCallbacks
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from aether.app import Aether
from aether.config import EmbeddingSettings, Settings
from aether.errors import InvalidOperationError
from aether.integrations.langgraph import AetherCheckpointSaver


def _settings(home: Path, namespace: str | None = None) -> Settings:
    return Settings(
        home=home,
        namespace=namespace or f"lg{uuid.uuid4().hex[:10]}",
        embedding=EmbeddingSettings(provider="none"),
    )


async def test_conformance_suite_passes_every_capability(redis_home: Path) -> None:
    @checkpointer_test(name="AetherCheckpointSaver")
    async def aether_saver() -> AsyncIterator[AetherCheckpointSaver]:
        async with Aether.open(_settings(redis_home)) as app:  # a fresh namespace each
            yield AetherCheckpointSaver(app)

    report = await validate(aether_saver, progress=ProgressCallbacks.verbose())
    report.print_report()
    assert report.passed_all_base()
    for name, result in report.results.items():
        assert result.detected, f"{name} not implemented"
        assert result.passed, f"{name}: {result.failures}"


class Ticket(TypedDict):
    notes: Annotated[list[str], operator.add]
    approved: bool


def _ticket_graph(saver: AetherCheckpointSaver):  # type: ignore[no-untyped-def]
    def triage(state: Ticket) -> dict[str, object]:
        return {"notes": [f"triaged {len(state['notes'])}"]}

    def approve(state: Ticket) -> dict[str, object]:
        answer = interrupt({"question": "approve the refund?"})
        return {"approved": answer == "yes", "notes": [f"operator said {answer}"]}

    def close(state: Ticket) -> dict[str, object]:
        return {"notes": ["closed" if state["approved"] else "refused"]}

    builder = StateGraph(Ticket)
    builder.add_node("triage", triage)
    builder.add_node("approve", approve)
    builder.add_node("close", close)
    builder.add_edge(START, "triage")
    builder.add_edge("triage", "approve")
    builder.add_edge("approve", "close")
    builder.add_edge("close", END)
    return builder.compile(checkpointer=saver)


async def test_a_graph_interrupts_resumes_and_rolls_back_with_the_namespace(
    redis_home: Path,
) -> None:
    async with Aether.open(_settings(redis_home)) as app:
        saver = AetherCheckpointSaver(app)
        graph = _ticket_graph(saver)
        config = {"configurable": {"thread_id": "ticket-42"}}

        first = await graph.ainvoke({"notes": ["refund for Ada Lovelace"]}, config)
        assert "__interrupt__" in first
        paused = await graph.aget_state(config)
        assert paused.next == ("approve",)

        # the operator checkpoints the agent while the graph waits for an answer
        before = await app.checkpoints.create(label="ticket waiting", actor="test")

        done = await graph.ainvoke(Command(resume="yes"), config)
        assert done["notes"][-1] == "closed"
        assert (await graph.aget_state(config)).next == ()

        # a restart: a new process, a new saver over the same namespace, sees the thread
        async with Aether.open(app.settings) as again:
            state = await _ticket_graph(AetherCheckpointSaver(again)).aget_state(config)
            assert state.values["notes"][-1] == "closed"

        await app.checkpoints.rollback_to(before.id, actor="test")
        rewound = await graph.aget_state(config)
        assert rewound.next == ("approve",), "the rollback reached the graph's thread"
        assert rewound.values["notes"] == ["refund for Ada Lovelace", "triaged 1"]

        # undoing the rollback brings the first outcome back; rolling back again rewinds
        await app.checkpoints.undo(actor="test")
        assert (await graph.aget_state(config)).values["notes"][-1] == "closed"
        await app.checkpoints.rollback_to(before.id, actor="test")

        # the graph resumes from the earlier state and takes the other branch
        redone = await graph.ainvoke(Command(resume="no"), config)
        assert redone["notes"][-2:] == ["operator said no", "refused"]
        history = [s.values.get("notes", []) async for s in graph.aget_state_history(config)]
        assert not any("closed" in notes for notes in history), "the undone branch is gone"


async def test_sync_invoke_runs_in_a_thread_and_refuses_the_loop(redis_home: Path) -> None:
    async with Aether.open(_settings(redis_home)) as app:
        graph = _ticket_graph(AetherCheckpointSaver(app))
        config = {"configurable": {"thread_id": "sync"}}
        result = await asyncio.to_thread(graph.invoke, {"notes": ["x"]}, config)
        assert "__interrupt__" in result
        assert (await graph.aget_state(config)).next == ("approve",)
        with pytest.raises(InvalidOperationError, match="async ones"):
            graph.get_state(config)


async def test_an_erasure_reaches_the_thread(redis_home: Path) -> None:
    async with Aether.open(_settings(redis_home)) as app:
        saver = AetherCheckpointSaver(app)
        graph = _ticket_graph(saver)
        config = {"configurable": {"thread_id": "ticket-7"}}
        await graph.ainvoke({"notes": ["refund for Zephyrine Quox"]}, config)
        await graph.ainvoke(Command(resume="yes"), config)
        other = {"configurable": {"thread_id": "ticket-8"}}
        await graph.ainvoke({"notes": ["refund for Grace Hopper"]}, other)

        report = await app.eraser().erase(subject="Zephyrine Quox")
        assert report.counts

        async for snapshot in graph.aget_state_history(config):
            assert "Zephyrine" not in repr(snapshot.values)
            for task in snapshot.tasks:
                assert "Zephyrine" not in repr(task)
        assert await app.eraser().verify("Zephyrine Quox") == []
        # and not in any checkpoint: a rollback to before the erasure cannot bring it back
        oldest = (await app.checkpoints.list())[-1]
        await app.checkpoints.rollback_to(oldest.id, actor="test")
        async for snapshot in graph.aget_state_history(config):
            assert "Zephyrine" not in repr(snapshot.values)
        kept = await graph.aget_state(other)
        assert kept.values["notes"][0] == "refund for Grace Hopper"
        # the state left is still a graph LangGraph can run
        assert (await graph.aget_state(other)).next == ("approve",)


async def test_bad_configs_are_refused_and_change_nothing(redis_home: Path) -> None:
    async with Aether.open(_settings(redis_home)) as app:
        saver = AetherCheckpointSaver(app)
        with pytest.raises(InvalidOperationError, match="thread_id"):
            await saver.aget_tuple({"configurable": {}})
        with pytest.raises(InvalidOperationError, match="checkpoint_id"):
            await saver.aput_writes({"configurable": {"thread_id": "t"}}, [("a", 1)], "task")
        with pytest.raises(InvalidOperationError, match="longer"):
            await saver.aget_tuple({"configurable": {"thread_id": "t" * 5000}})
        with pytest.raises(InvalidOperationError, match="strategy"):
            await saver.aprune(["t"], strategy="everything")
        assert await saver.threads.threads() == []
        assert [t async for t in saver.alist(None)] == []


def test_made_outside_a_loop_is_refused(settings: Settings) -> None:
    class Bare:
        memory = None

    with pytest.raises(InvalidOperationError, match="async with"):
        AetherCheckpointSaver(Bare())  # type: ignore[arg-type]


async def test_the_cli_diffs_rolls_back_and_erases_a_thread(redis_home: Path) -> None:
    """What an operator types reaches a LangGraph thread: diff, rollback, erase."""
    import json
    import os

    from tests.conftest import run_cli

    settings = _settings(redis_home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AETHER_")}
    env.update(
        {
            "AETHER_HOME": str(redis_home),
            "AETHER_NAMESPACE": settings.namespace,
            "AETHER_EMBEDDING__PROVIDER": "none",
        }
    )
    async with Aether.open(settings) as app:
        graph = _ticket_graph(AetherCheckpointSaver(app))
        config = {"configurable": {"thread_id": "cli-thread"}}
        await graph.ainvoke({"notes": ["refund for Brunhilde Okafor"]}, config)
        made = run_cli(env, "checkpoint", "create", "--label", "waiting", "--json")
        assert made.returncode == 0, made.stderr
        checkpoint_id = json.loads(made.stdout)["id"]
        await graph.ainvoke(Command(resume="yes"), config)

        diff = run_cli(env, "checkpoint", "diff", checkpoint_id, "--json")
        assert diff.returncode == 0, diff.stderr
        assert "threads" in diff.stdout, "the diff names the threads tier"

        back = run_cli(env, "checkpoint", "rollback", checkpoint_id, "--yes")
        assert back.returncode == 0, back.stderr
        assert (await graph.aget_state(config)).next == ("approve",)

        erased = run_cli(env, "erase", "Brunhilde Okafor", "--yes")
        assert erased.returncode == 0, erased.stderr
        async for snapshot in graph.aget_state_history(config):
            assert "Brunhilde" not in repr(snapshot.values)

"""The three adapters in one agent's life: exported, imported elsewhere, rolled back."""

from __future__ import annotations

import uuid
from pathlib import Path

from langgraph.types import Command

from aether.app import Aether
from aether.config import EmbeddingSettings, Settings
from aether.integrations.langgraph import AetherCheckpointSaver, AetherStore
from aether.integrations.openai_agents import AetherSession
from aether.memory.portable import export_memory, import_memory, read_portable
from tests.test_langgraph_checkpointer import _ticket_graph


def _settings(home: Path) -> Settings:
    return Settings(
        home=home,
        namespace=f"ig{uuid.uuid4().hex[:10]}",
        embedding=EmbeddingSettings(provider="none"),
    )


async def test_an_agent_using_all_three_moves_to_another_namespace(
    redis_home: Path, tmp_path: Path
) -> None:
    config = {"configurable": {"thread_id": "ticket-1"}}
    dump = tmp_path / "agent.jsonl"
    async with Aether.open(_settings(redis_home)) as app:
        graph = _ticket_graph(AetherCheckpointSaver(app))
        await graph.ainvoke({"notes": ["refund for order 77"]}, config)
        store = AetherStore(app)
        await store.aput(("users", "u1"), "pref", {"text": "prefers email over phone"})
        session = AetherSession("chat-1", app)
        await session.add_items(
            [
                {"role": "user", "content": "is order 77 refunded?"},
                {"type": "function_call", "call_id": "c1", "name": "refund", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "pending"},
            ]
        )
        items = await session.get_items()
        written = await export_memory(app.memory, dump)
        assert written > 0

    async with Aether.open(_settings(redis_home)) as moved:
        report = await import_memory(
            moved.memory, moved.checkpoints, read_portable(moved.memory, dump)
        )
        assert report.read == written
        graph = _ticket_graph(AetherCheckpointSaver(moved))
        assert (await graph.aget_state(config)).next == ("approve",)
        done = await graph.ainvoke(Command(resume="yes"), config)
        assert done["notes"][-1] == "closed"
        assert await AetherSession("chat-1", moved).get_items() == items
        store = AetherStore(moved)
        assert (await store.aget(("users", "u1"), "pref")).value == {  # type: ignore[union-attr]
            "text": "prefers email over phone"
        }
        hits = await store.asearch(("users",), query="prefers email over phone")
        assert [h.key for h in hits] == ["pref"]
        # a second import adds nothing
        again = await import_memory(
            moved.memory, moved.checkpoints, read_portable(moved.memory, dump)
        )
        assert again.read == written
        assert len(await AetherSession("chat-1", moved).get_items()) == len(items)

"""AetherSession: the OpenAI Agents SDK's runner over an aether chat session."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from agents.memory import Session
from openai import AsyncOpenAI

from aether.app import Aether
from aether.config import EmbeddingSettings, Settings
from aether.errors import InvalidOperationError
from aether.integrations.openai_agents import AetherSession, item_message, message_items
from aether.memory.tiers.chat import ChatSessions
from aether.testing.model import ScriptedOpenAI, completion

set_tracing_disabled(True)


@function_tool
def order_status(order: str) -> str:
    """The shipping status of an order."""
    return f"order {order} shipped on Tuesday"


@pytest.fixture
async def app(redis_home: Path) -> AsyncIterator[Aether]:
    settings = Settings(
        home=redis_home,
        namespace=f"oa{uuid.uuid4().hex[:10]}",
        embedding=EmbeddingSettings(provider="none"),
    )
    async with Aether.open(settings) as opened:
        yield opened


def _agent(server: ScriptedOpenAI) -> Agent[Any]:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    model = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
    return Agent(
        name="support", instructions="Help with orders.", model=model, tools=[order_status]
    )


async def test_the_runner_keeps_its_history_in_aether(app: Aether) -> None:
    replies = [
        completion(tool_calls=[("call_1", "order_status", {"order": "A17"})]),
        completion("Your order A17 shipped on Tuesday."),
        completion("You asked about order A17."),
    ]
    session = AetherSession("customer-42", app)
    assert isinstance(session, Session)
    with ScriptedOpenAI(replies=replies) as server:
        agent = _agent(server)
        first = await Runner.run(agent, "Where is my order A17, says Wilhelmina?", session=session)
        assert first.final_output == "Your order A17 shipped on Tuesday."
        second = await Runner.run(agent, "What did I ask about?", session=session)
        assert second.final_output == "You asked about order A17."
        # the second run's request carried the first run's history, read from aether
        last = server.chat_requests()[-1]["messages"]
        said = [m.get("content") for m in last]
        assert "Where is my order A17, says Wilhelmina?" in said
        assert any(m.get("role") == "tool" and "shipped" in str(m.get("content")) for m in last)

    items = await session.get_items()
    kinds = [i.get("type") or i.get("role") for i in items]
    assert kinds == [
        "user",
        "function_call",
        "function_call_output",
        "message",
        "user",
        "message",
    ], kinds
    assert await session.get_items(limit=2) == items[-2:]

    # aether sees the same conversation as its own: messages, a tool call and its result
    stored = await ChatSessions(app.memory).messages("customer-42")
    assert [m["role"] for m in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert stored[1]["tool_calls"][0]["function"]["name"] == "order_status"
    assert stored[2]["tool_call_id"] == "call_1"

    # the texts are memory: search finds them, tagged with the session
    hits = await app.search.search("Wilhelmina order", session="customer-42")
    assert hits and "Wilhelmina" in hits[0].doc["content"]


async def test_pop_clear_and_rollback(app: Aether) -> None:
    session = AetherSession("s-1", app)
    await session.add_items([{"role": "user", "content": "remember the blue vase"}])
    before = await app.checkpoints.create(label="one item", actor="test")
    await session.add_items(
        [
            {"role": "user", "content": "and the red kettle"},
            {"type": "function_call", "call_id": "c9", "name": "noop", "arguments": "{}"},
        ]
    )
    assert len(await session.get_items()) == 3

    popped = await session.pop_item()
    assert popped == {"type": "function_call", "call_id": "c9", "name": "noop", "arguments": "{}"}
    popped = await session.pop_item()
    assert popped == {"role": "user", "content": "and the red kettle"}
    assert not await app.search.search("red kettle"), "the popped message's memory went too"
    assert await session.get_items() == [{"role": "user", "content": "remember the blue vase"}]

    await session.add_items([{"role": "user", "content": "a green lamp"}])
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None

    await app.checkpoints.rollback_to(before.id, actor="test")
    assert await session.get_items() == [{"role": "user", "content": "remember the blue vase"}]
    await app.checkpoints.undo(actor="test")
    assert await session.get_items() == []


async def test_an_erasure_reaches_the_session(app: Aether) -> None:
    session = AetherSession("s-2", app)
    await session.add_items(
        [
            {"role": "user", "content": "My neighbour Quillon Varga has the spare key"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Noted."}]},
            {"role": "user", "content": "the gate code is 4411"},
        ]
    )
    await app.eraser().erase(subject="Quillon Varga")
    items = await session.get_items()
    assert "Quillon" not in repr(items)
    assert {"role": "user", "content": "the gate code is 4411"} in items
    assert not await app.search.search("Quillon Varga")
    assert await app.eraser().verify("Quillon Varga") == []


async def test_bad_items_and_ids_change_nothing(app: Aether) -> None:
    with pytest.raises(InvalidOperationError):
        AetherSession("bad id with spaces", app)
    session = AetherSession("s-3", app)
    with pytest.raises(InvalidOperationError, match="mapping"):
        await session.add_items([{"role": "user", "content": "ok"}, "not an item"])  # type: ignore[list-item]
    with pytest.raises(InvalidOperationError):
        await session.add_items([{"role": "user", "content": "x" * 10_000_000}])
    assert await session.get_items() == []


def test_messages_of_aethers_runtime_read_as_sdk_items() -> None:
    assistant = {
        "role": "assistant",
        "content": "checking",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    assert message_items(assistant) == [  # type: ignore[arg-type]
        {"role": "assistant", "content": "checking"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    ]
    assert message_items({"role": "tool", "content": "ok", "tool_call_id": "c1"}) == [
        {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    ]
    reasoning = item_message({"type": "reasoning", "id": "r1", "summary": []})  # type: ignore[arg-type]
    assert reasoning["role"] == "assistant" and reasoning["item"]["type"] == "reasoning"


async def test_used_from_another_thread_and_loop(app: Aether) -> None:
    """The SDK's runner or a worker may run on its own loop: calls go to the app's loop."""
    import asyncio

    session = AetherSession("worker-7", app, session_settings={"limit": 2})
    assert session.session_settings.limit == 2

    def elsewhere() -> list[Any]:
        async def work() -> list[Any]:
            await session.add_items([{"role": "user", "content": f"line {n}"} for n in range(3)])
            popped = await session.pop_item()
            assert popped == {"role": "user", "content": "line 2"}
            return await session.get_items()

        return asyncio.run(work())  # a new loop in another thread

    items = await asyncio.to_thread(elsewhere)
    assert items == [{"role": "user", "content": "line 0"}, {"role": "user", "content": "line 1"}]
    assert await session.get_items(limit=1) == [{"role": "user", "content": "line 1"}]
    with pytest.raises(InvalidOperationError, match="session_settings"):
        AetherSession("s-4", app, session_settings={"limit": "many"})


def test_a_session_whose_loop_has_ended_says_so(redis_home: Path) -> None:
    import asyncio

    settings = Settings(
        home=redis_home,
        namespace=f"oa{uuid.uuid4().hex[:10]}",
        embedding=EmbeddingSettings(provider="none"),
    )

    async def made() -> AetherSession:
        async with Aether.open(settings) as opened:
            return AetherSession("late", opened)

    session = asyncio.run(made())
    with pytest.raises(InvalidOperationError, match="no longer running"):
        asyncio.run(session.get_items())


class _DaemonModel:
    """What the namespace's daemon embeds with: the local model's name, its own vectors."""

    model_name = "all-MiniLM-L6-v2"
    dims = 384

    async def embed_many(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * 383 for _ in texts]


async def test_the_integrations_embed_through_a_running_daemon(redis_home: Path) -> None:
    """With a daemon, the first write does not load the model in the caller's process."""
    import asyncio

    from aether.integrations.langgraph import AetherStore
    from aether.runtime.embedding_service import DaemonEmbedder, serve
    from aether.runtime.health import Health
    from aether.runtime.lease import DaemonLease, Holder, keep_alive

    settings = Settings(home=redis_home, namespace=f"oa{uuid.uuid4().hex[:10]}")
    async with Aether.open(settings) as app:
        assert app.memory.embedder is not None
        asker = app.memory.embedder.inner
        assert isinstance(asker, DaemonEmbedder)
        stop = asyncio.Event()
        lease = DaemonLease(app.client, app.keys, Holder.this_process())
        await lease.acquire()
        tasks = [
            asyncio.create_task(keep_alive(lease, Health(ready=True), stop)),
            asyncio.create_task(serve(app.client, app.keys, _DaemonModel(), stop)),
        ]
        try:
            while not await app.client.exists(app.keys.daemon_health()):
                await asyncio.sleep(0.05)
            await AetherSession("sdk", app).add_items([{"role": "user", "content": "hi there"}])
            await AetherStore(app).aput(("users",), "u1", {"text": "likes green tea"})
        finally:
            stop.set()
            await asyncio.gather(*tasks)
            await lease.release()
        assert asker.served_by_daemon >= 2  # the session's memory and the store's item

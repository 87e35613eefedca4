"""Memory tiers: daily logs, long-term, scratchpads, episodes, tool cache, chat sessions."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, date, datetime

import pytest
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import MemorySettings, Settings
from aether.errors import InvalidOperationError, NotFoundError
from aether.keys import Keyspace
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.episodes import Episodes
from aether.memory.tiers.longterm import LongTermMemory
from aether.memory.tiers.scratchpad import Scratchpads
from aether.memory.tiers.toolcache import ToolSchemaCache
from aether.store.client import connect
from aether.store.state import Store
from tests.conftest import dump_state, run_cli

WHEN = datetime(2026, 3, 4, 10, 0, tzinfo=UTC)


@pytest.fixture
def layer(store: Store) -> MemoryLayer:
    return MemoryLayer(store, MemorySettings(max_content_bytes=1000))


async def test_daily_log_writes_entry_and_day_list(
    layer: MemoryLayer, client: Redis, keys: Keyspace
) -> None:
    daily = DailyLog(layer)
    first = await daily.log("built the index", "agent", ["build"], 0.7, "s1", WHEN)
    second = await daily.log("tests pass", timestamp=WHEN.timestamp() + 5)
    assert await client.lrange(keys.daily(date(2026, 3, 4)), 0, -1) == [
        first["id"].encode(),
        second["id"].encode(),
    ]
    stored = json.loads(await client.execute_command("JSON.GET", keys.daily_entry(first["id"])))
    assert stored["content"] == "built the index" and stored["session"] == "s1"
    assert stored["tags"] == ["build"] and stored["day"] == "2026-03-04"
    assert [d["id"] for d in await daily.list_day(date(2026, 3, 4))] == [first["id"], second["id"]]
    assert await daily.days() == [date(2026, 3, 4)]
    assert await client.xlen(keys.journal()) == 2  # one journaled change per log


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": ""}, "empty"),
        ({"content": "   \n"}, "empty"),
        ({"content": "x" * 1001}, "over the limit"),
        ({"content": "ok", "session": "bad session!"}, "invalid session id"),
        ({"content": "ok", "session": "x" * 200}, "invalid session id"),
        ({"content": "ok", "source": "robot"}, "unknown source"),
        ({"content": "ok", "tags": ["\x00bad"]}, "invalid tag"),
        ({"content": "ok", "tags": "notalist"}, "list of strings"),
        ({"content": "ok", "score": 2.0}, "between 0 and 1"),
        ({"content": "ok", "score": float("nan")}, "between 0 and 1"),
        ({"content": "ok", "timestamp": -5}, "invalid timestamp"),
    ],
)
async def test_daily_log_bad_input_writes_nothing(
    layer: MemoryLayer, client: Redis, keys: Keyspace, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidOperationError, match=message):
        await DailyLog(layer).log(**kwargs)  # type: ignore[arg-type]
    assert await dump_state(client, keys) == {}
    assert await client.exists(keys.journal()) == 0


async def test_longterm_add_get_delete_and_flush(
    layer: MemoryLayer, client: Redis, keys: Keyspace, checkpoints: Checkpoints
) -> None:
    lt = LongTermMemory(layer)
    a = await lt.add("the operator prefers short answers", tags=["preference"], sources=["e1"])
    b = await lt.add("deploys happen on Tuesdays")
    assert (await lt.get(a["id"]))["sources"] == ["e1"]
    assert await lt.ids() == sorted([a["id"], b["id"]])
    with pytest.raises(NotFoundError):
        await lt.get("nope")
    with pytest.raises(InvalidOperationError, match="confirmation"):
        await lt.flush(confirm=False, checkpoints=checkpoints)
    assert len(await lt.ids()) == 2
    before = await dump_state(client, keys)
    assert await lt.flush(confirm=True, checkpoints=checkpoints) == 2
    assert await lt.ids() == []
    # the flush was preceded by a checkpoint: roll back to it and everything is back
    pre = (await checkpoints.list())[0]
    assert pre.reason == "pre-flush"
    await checkpoints.rollback_to(pre.id)
    assert await dump_state(client, keys) == before


async def test_scratchpads_have_ttls(layer: MemoryLayer, client: Redis, keys: Keyspace) -> None:
    pads = Scratchpads(layer)
    await pads.set("plan", "step 1")
    await pads.set("short", "x", ttl_s=5)
    assert await pads.get("plan") == "step 1"
    assert 3590 <= await client.ttl(keys.scratchpad("plan")) <= 3600
    assert 0 < await client.ttl(keys.scratchpad("short")) <= 5
    assert await pads.delete("plan") and await pads.get("plan") is None
    with pytest.raises(InvalidOperationError):
        await pads.set("bad id!", "x")
    with pytest.raises(InvalidOperationError):
        await pads.set("zero", "x", ttl_s=0)
    async for key in client.scan_iter(match=keys.scratchpad("*")):
        assert await client.ttl(key) > 0  # no scratchpad without a TTL


async def test_episodes_capped_in_one_round_trip(
    layer: MemoryLayer, client: Redis, keys: Keyspace, checkpoints: Checkpoints
) -> None:
    episodes = Episodes(layer)
    await episodes.record("s1", "search", {"q": "a"}, "x" * 5000, True, 12.5)
    entry = await client.xrevrange(keys.journal(), count=1)
    assert len((await episodes.list("s1"))[0]["output"]) == 2000
    assert (await episodes.list("s1"))[0]["truncated"] is True
    assert entry  # journaled
    cp = await checkpoints.create()
    for i in range(60):
        await episodes.record("s1", f"tool{i}", {"i": i}, "ok", i % 2 == 0, 1.0)
    rows = await episodes.list("s1")
    assert len(rows) == 50
    assert [r["tool"] for r in rows] == [f"tool{i}" for i in range(10, 60)]
    assert await client.xlen(keys.journal()) == 61  # one entry per record: one round trip
    await checkpoints.rollback_to(cp.id)
    assert [r["tool"] for r in await episodes.list("s1")] == ["search"]
    with pytest.raises(InvalidOperationError):
        await episodes.record("bad id!", "t", {}, "", True, 1)


async def test_tool_schema_cache_builds_once_with_ttl(
    layer: MemoryLayer, client: Redis, keys: Keyspace
) -> None:
    cache = ToolSchemaCache(layer)
    calls = 0

    async def build() -> list[dict[str, object]]:
        nonlocal calls
        calls += 1
        return [{"name": "search", "parameters": {"type": "object"}}]

    first = await cache.get_or_build("s1", build)
    second = await cache.get_or_build("s1", build)
    assert first == second and calls == 1
    assert 86_390 <= await client.ttl(keys.tools("s1")) <= 86_400


async def test_chat_sessions(
    layer: MemoryLayer, client: Redis, keys: Keyspace, checkpoints: Checkpoints
) -> None:
    chats = ChatSessions(layer)
    t0 = WHEN.timestamp()
    await chats.append("a", "user", "hello", timestamp=t0, title="First")
    await chats.append("b", "user", "other", timestamp=t0 + 10)
    await chats.append("a", "assistant", "hi!", timestamp=t0 + 20)
    calls = [
        {
            "id": "call1",
            "type": "function",
            "function": {"name": "search", "arguments": '{"q": "x"}'},
        }
    ]
    await chats.append_tool_exchange(
        "a", "", calls, [{"tool_call_id": "call1", "content": "found", "name": "search"}], t0 + 30
    )
    msgs = await chats.messages("a")
    assert [m["role"] for m in msgs] == ["user", "assistant", "assistant", "tool"]
    assert msgs[2]["tool_calls"] == calls and msgs[3]["tool_call_id"] == "call1"
    assert [s["id"] for s in await chats.list()] == ["a", "b"]  # most recent first
    meta = await chats.get("a")
    assert meta["title"] == "First" and meta["messages"] == 4
    with pytest.raises(InvalidOperationError, match="exactly one result"):
        await chats.append_tool_exchange("a", "", calls, [], t0 + 40)
    with pytest.raises(InvalidOperationError, match="unknown role"):
        await chats.append("a", "robot", "x")
    with pytest.raises(InvalidOperationError, match="session id"):
        await chats.append("bad id!", "user", "x")
    cp = await checkpoints.create()
    before = await dump_state(client, keys)
    await chats.delete("a")
    with pytest.raises(NotFoundError):
        await chats.get("a")
    assert [s["id"] for s in await chats.list()] == ["b"]
    await checkpoints.rollback_to(cp.id)
    assert await dump_state(client, keys) == before


async def test_chat_list_shows_when_each_session_last_spoke(
    settings: Settings, cli_env: dict[str, str]
) -> None:
    client = await connect(settings)
    try:
        chats = ChatSessions(
            MemoryLayer(Store(client, Keyspace(settings.namespace)), MemorySettings())
        )
        await chats.append("work", "user", "hello", timestamp=WHEN.timestamp())
        await chats.append("work", "assistant", "hi", timestamp=WHEN.timestamp() + 90)
    finally:
        await client.aclose()
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    listed = json.loads(
        (await asyncio.to_thread(run_cli, env, "memory", "chat", "list", "--json")).stdout
    )
    assert listed[0]["last_message_at"] == WHEN.timestamp() + 90  # epoch seconds, a number
    assert isinstance(listed[0]["created_at"], float) and listed[0]["messages"] == 2
    human = (await asyncio.to_thread(run_cli, env, "memory", "chat", "list")).stdout
    row = next(line for line in human.splitlines() if line.startswith("work"))
    assert WHEN.strftime("%Y-%m-%d") in row  # a time, not "-"


def test_one_status_vocabulary_decides_what_holds() -> None:
    """Absent means active; the legacy ``invalidated`` reads as superseded (never active)."""
    from aether.memory.storage.status import Status, belief_status, is_active

    assert is_active(None) and is_active("") and is_active(Status.ACTIVE)
    assert not is_active("superseded") and not is_active("invalidated")
    assert belief_status("invalidated") == Status.SUPERSEDED

"""The chain module (aether_chain.c): the Lua library's chain, byte for byte, in C.

Every other test runs on the module: the session's server loads it. Here a second server
runs without it, so the two paths are compared write for write, and the module's own
edges are held: the files it leaves load without it, a module that does not load leaves
the server on Lua, a malformed call changes nothing, a missing compiler builds nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

import aether.checkpoints.manager as manager
import aether.server.embedded as embedded
from aether.checkpoints.chain import JournalChain
from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.keys import Keyspace
from aether.server.chain_module import chain_module
from aether.server.embedded import EmbeddedRedis
from aether.store.chain_head import HEAD_FIELD
from aether.store.client import connect
from aether.store.state import Mutation, Store

DAY = date(2026, 5, 1)


@pytest.fixture(scope="module")
def lua_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A second embedded server, without the module."""
    home = tmp_path_factory.mktemp("aether-lua-chain")
    server = EmbeddedRedis(Settings(home=home, redis_chain_module=False))
    server.start()
    yield home
    server.stop()


@pytest.fixture
async def lua_client(lua_home: Path, namespace: str) -> AsyncIterator[Redis]:
    c = await connect(Settings(home=lua_home, namespace=namespace))
    yield c
    await c.aclose()


async def _module_calls(client: Redis, command: str = "aether.chain") -> tuple[int, int]:
    """A module command's calls and failed calls (declined ones) since the server started."""
    stats: dict[str, Any] = (await client.info("commandstats")).get(f"cmdstat_{command}", {})
    return int(stats.get("calls", 0)), int(stats.get("failed_calls", 0))


async def _history(client: Redis, keys: Keyspace) -> int:
    """Writes of every kind the module digests, and one past its argument limit."""
    store = Store(client, keys, actor="test")
    day = keys.daily(DAY)
    # a list created outside the journal, then appended to: no digest kept for it
    await client.rpush(keys.daily(date(2026, 5, 2)), "before")
    writes = [
        Mutation().json_set(keys.daily_entry("a"), {"content": "first", "score": 0.5}),
        Mutation().rpush(day, "a").hset(keys.identity_profile(), {"name": "Ada"}),
        Mutation().rpush(day, "b", "c").json_set(keys.daily_entry("b"), {"content": "é ✓"}),
        Mutation().sadd(keys.identity_profile() + ":tags", "x", "y"),
        Mutation().zadd(keys.daily_entry("z"), {"m": 1.5}).rpush(keys.daily(date(2026, 5, 2)), "x"),
        Mutation().delete(keys.daily_entry("a")).rpush(day, "d"),
        Mutation().set(keys.daily_entry("s"), "v" * 3000),  # a long value: framed by its sha1
        Mutation().json_set(keys.daily_entry("long"), {"content": "w" * 5000}),
        Mutation().hdel(keys.identity_profile(), "name").rpush_capped(day, 3, "e"),
    ]
    bulk = Mutation()
    for i in range(2_400):  # three arguments a key: past the module's limit, so Lua
        bulk.json_set(keys.daily_entry(f"bulk{i}"), {"content": f"n{i}"})
    writes.append(bulk)
    for m in writes:
        await store.apply(m, "test")
    # a rollback whose long list is settled after its steps (AETHER.LISTDIGEST's pages)
    long_list = keys.daily(date(2026, 5, 3))
    await store.apply(Mutation().rpush(long_list, *[f"i{i}" for i in range(1_500)]), "test")
    checkpoint = await Checkpoints(client, keys).create(label="before the tail")
    for i in range(3):
        await store.apply(Mutation().rpush(long_list, f"t{i}").rpush(day, f"t{i}"), "test")
    await Checkpoints(client, keys).rollback_to(checkpoint.id)
    return len(writes) + 4


async def _chain(client: Redis, keys: Keyspace) -> tuple[list[dict[bytes, bytes]], dict[Any, Any]]:
    entries = [dict(fields) for _, fields in await client.xrange(keys.journal())]
    digests = await client.hgetall(keys.journal() + ":digests")
    head = digests.pop(HEAD_FIELD.encode())
    digests["head hash"] = head.split(b" ")[1]  # the id is the server's clock
    return entries, digests


async def test_the_module_writes_the_chain_the_lua_library_writes(
    client: Redis, lua_client: Redis, keys: Keyspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert chain_module() is not None, "the module must build here (make module-tool)"

    def same_ids() -> None:  # the rollback's entry names its checkpoint: the same on both
        counter = itertools.count()
        monkeypatch.setattr(manager, "new_id", lambda: f"01JCHECKPOINT{next(counter):013d}")

    calls, failed = await _module_calls(client)
    packed, packed_failed = await _module_calls(client, "aether.chaind")
    same_ids()
    writes = await _history(client, keys)
    same_ids()
    await _history(lua_client, keys)
    now_calls, now_failed = await _module_calls(client)
    # the first write starts the chain in Lua (no head yet: both commands decline); the
    # bulk write is too large for AETHER.CHAIN's arguments: Lua digests it, AETHER.CHAIND
    # appends it
    assert now_calls - calls == writes - 1 and now_failed - failed == 1
    # ... and the rollback's step and its settling entry
    now_packed, now_packed_failed = await _module_calls(client, "aether.chaind")
    assert now_packed - packed == 4 and now_packed_failed - packed_failed == 1
    assert (await _module_calls(client, "aether.listdigest"))[0] >= 2  # 1,500 items, 2 pages
    assert await _module_calls(lua_client) == (0, 0)
    with_module, with_lua = await _chain(client, keys), await _chain(lua_client, keys)
    assert len(with_module[0]) == writes + 2
    assert b"settled" in with_module[0][-1]
    assert with_module == with_lua
    for c in (client, lua_client):
        report = await JournalChain(c, keys).verify()
        assert report.ok, report.breaks


async def test_rollback_and_undo_after_module_writes_keep_the_chain(
    client: Redis, keys: Keyspace
) -> None:
    store = Store(client, keys, actor="test")
    cps = Checkpoints(client, keys)
    await store.apply(Mutation().json_set(keys.daily_entry("a"), {"content": "a"}), "t")
    cp = await cps.create(label="before")
    for i in range(20):
        m = Mutation().json_set(keys.daily_entry(f"e{i}"), {"content": f"e{i}"})
        await store.apply(m.rpush(keys.daily(DAY), f"e{i}"), "t")
    packed = await _module_calls(client, "aether.chaind")
    await cps.rollback_to(cp.id)
    # the rollback's step is chained by AETHER.CHAIND ('d' digested in Lua)
    assert (await _module_calls(client, "aether.chaind"))[0] > packed[0]
    await store.apply(Mutation().rpush(keys.daily(DAY), "after"), "t")
    report = await JournalChain(client, keys).verify()
    assert report.ok, report.breaks
    assert await client.lrange(keys.daily(DAY), 0, -1) == [b"after"]


async def test_the_files_the_module_leaves_load_without_it(tmp_path: Path) -> None:
    keys = Keyspace("files")
    settings = Settings(home=tmp_path, namespace="files")
    EmbeddedRedis(settings).start()
    client = await connect(settings)
    try:
        store = Store(client, keys, actor="test")
        for i in range(5):
            m = Mutation().json_set(keys.daily_entry(f"e{i}"), {"content": f"e{i}"})
            await store.apply(m.rpush(keys.daily(DAY), f"e{i}"), "t")
        assert (await _module_calls(client))[0] == 5
        before = await _chain(client, keys)
    finally:
        await client.aclose()
        EmbeddedRedis(settings).stop()
    without = settings.model_copy(update={"redis_chain_module": False})
    EmbeddedRedis(without).start()
    client = await connect(without)
    try:
        assert await _module_calls(client) == (0, 0)
        assert await _chain(client, keys) == before  # replayed from the AOF, plain commands
        report = await JournalChain(client, keys).verify()
        assert report.ok, report.breaks
        await Store(client, keys, actor="test").apply(Mutation().rpush(keys.daily(DAY), "x"), "t")
        assert (await JournalChain(client, keys).verify()).ok
    finally:
        await client.aclose()
        EmbeddedRedis(without).stop()


async def test_a_module_that_does_not_load_leaves_the_server_on_lua(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bogus = tmp_path / "not-a-module.so"
    bogus.write_text("not a shared object")
    monkeypatch.setattr(embedded, "chain_module", lambda: bogus)
    settings = Settings(home=tmp_path / "home", namespace="bogus")
    EmbeddedRedis(settings).start()
    client = await connect(settings)
    try:
        keys = Keyspace("bogus")
        store = Store(client, keys, actor="test")
        for i in range(3):
            await store.apply(Mutation().rpush(keys.daily(DAY), f"e{i}"), "t")
        assert await _module_calls(client) == (0, 0)
        assert (await JournalChain(client, keys).verify()).ok
        assert "loadmodule " + str(bogus) not in (settings.redis_dir / "redis.conf").read_text()
    finally:
        await client.aclose()
        EmbeddedRedis(settings).stop()


@pytest.mark.parametrize(
    "args",
    [
        ["*", "3", "a", "b", "c"],  # fields unpaired
        ["*", "9", "a", "b"],  # more fields than given
        ["*", "2", "a", "b"],  # no key
        ["*", "2", "a", "b", "k", "Q", "x"],  # unknown mode
        ["*", "2", "a", "b", "k", "N", "0"],  # an append of nothing
        ["*", "2", "a", "b", "k", "N", "5", "x"],  # fewer items than counted
        ["*", "2", "a", "b", "k", "P", "not-a-digest"],
        ["*", "2", "a", "b", "k", "T"],  # no text
        ["1-1", "2", "a", "b", "k", "G"],  # an id of its own
        ["*", "-2", "a", "b", "k", "G"],
    ],
)
async def test_a_malformed_call_is_refused_and_changes_nothing(
    client: Redis, keys: Keyspace, args: list[str]
) -> None:
    store = Store(client, keys, actor="test")
    await store.apply(Mutation().rpush(keys.daily(DAY), "a"), "t")
    await store.apply(Mutation().rpush(keys.daily(DAY), "b"), "t")
    before = await _chain(client, keys)
    journal = keys.journal()
    with pytest.raises(ResponseError, match="AETHERCHAIN"):
        await client.execute_command("AETHER.CHAIN", journal, journal + ":digests", *args)
    assert await _chain(client, keys) == before


@pytest.mark.parametrize(
    "d",
    [
        b"",
        b"\x91\xa1k",  # unpaired
        b"\x92\xa1k\xa5abc",  # a string longer than the bytes left
        b"\x92\xa1k\x01",  # not a string
        b"\x92\xa1k\xa0extra",  # bytes after the array
        b"\x82\xa1k\xa0",  # a map
    ],
)
async def test_a_malformed_packed_d_is_refused_and_changes_nothing(
    client: Redis, keys: Keyspace, d: bytes
) -> None:
    store = Store(client, keys, actor="test")
    await store.apply(Mutation().rpush(keys.daily(DAY), "a"), "t")
    before = await _chain(client, keys)
    journal = keys.journal()
    with pytest.raises(ResponseError, match="AETHERCHAIN"):
        await client.execute_command(
            "AETHER.CHAIND", journal, journal + ":digests", "*", "2", "a", "b", d
        )
    assert await _chain(client, keys) == before


@pytest.mark.parametrize("command", ["AETHER.CHAIN", "AETHER.CHAIND"])
async def test_a_journal_without_a_head_is_declined(
    client: Redis, keys: Keyspace, command: str
) -> None:
    journal = keys.journal()
    await client.hset(journal + ":digests", "k", "0" * 40)
    last = ["k", "G"] if command == "AETHER.CHAIN" else [b"\x92\xa1k\xa0"]
    with pytest.raises(ResponseError, match="AETHERCHAIN no head"):
        await client.execute_command(
            command, journal, journal + ":digests", "*", "2", "a", "b", *last
        )
    assert await client.exists(journal) == 0


def test_no_compiler_builds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    chain_module.cache_clear()
    try:
        monkeypatch.setenv("CC", "/nonexistent/cc")
        assert chain_module() is None
        chain_module.cache_clear()
        monkeypatch.setenv("CC", "false")  # a compiler that fails
        assert chain_module() is None
    finally:
        chain_module.cache_clear()
        monkeypatch.delenv("CC")
        assert chain_module() is not None

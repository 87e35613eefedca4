"""Bounded atomic work: rollback in steps under a write hold, paged snapshots, checked
ops and replay, driver errors at the boundary, one lock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from typing import cast

import asyncpg
import msgpack
import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from aether.checkpoints.archive import Archive, open_archive
from aether.checkpoints.chain import JournalChain
from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.errors import (
    BusyError,
    CapacityError,
    CheckpointError,
    ConcurrentAdminError,
    InvalidOperationError,
    UnavailableError,
    error_code,
)
from aether.keys import Keyspace
from aether.store.boundary import AetherRedis
from aether.store.client import connect
from aether.store.journal import last_position
from aether.store.lock import StateLock
from aether.store.state import Mutation, Store
from tests.conftest import PG_DSN, dump_state, embedded_server

LISTS = 50


async def _fill(store: Store, keys: Keyspace, entries: int, ops_per_entry: int) -> None:
    """``entries`` journal entries of ``ops_per_entry`` RPUSHes over a few lists."""
    for e in range(entries):
        m = Mutation()
        for i in range(ops_per_entry):
            m.rpush(f"{keys.daily(date(2026, 1, 1))}:{i % LISTS}", f"{e}.{i}")
        await store.apply(m, "fill")


async def _read_forever(
    client: Redis, key: str, stop: asyncio.Event
) -> tuple[int, float, list[str]]:
    """Read until stopped: how many reads, the slowest (s), and every error."""
    reads, slowest, errors = 0, 0.0, []
    while not stop.is_set():
        began = time.perf_counter()
        try:
            await client.llen(key)
        except Exception as e:  # noqa: BLE001 - a BUSY reply is what the test looks for
            errors.append(f"{type(e).__name__}: {e}")
        slowest = max(slowest, time.perf_counter() - began)
        reads += 1
        await asyncio.sleep(0)
    return reads, slowest, errors


@pytest.mark.soak
@pytest.mark.timeout(600)
async def test_rollback_of_500k_changes_never_makes_a_reader_busy(
    store: Store, client: Redis, keys: Keyspace, settings: Settings
) -> None:
    cps = Checkpoints(client, keys, budget_ms=100)
    await _fill(store, keys, 10, 100)
    cp = await cps.create(label="start")
    at_checkpoint = await dump_state(client, keys)
    await _fill(store, keys, 500, 1000)  # 500,000 changes after the checkpoint
    before = await dump_state(client, keys)
    # a script running past this threshold makes every other client get BUSY
    old = await client.config_get("busy-reply-threshold")
    await client.config_set("busy-reply-threshold", 500)
    reader = await connect(settings)
    writer = Store(await connect(settings), keys, "writer")
    stop = asyncio.Event()
    try:
        reading = asyncio.create_task(
            _read_forever(reader, f"{keys.daily(date(2026, 1, 1))}:0", stop)
        )
        rolling = asyncio.create_task(cps.rollback_to(cp.id))
        await asyncio.sleep(0.3)  # the rollback is running in steps now
        assert await client.exists(keys.write_hold()) == 1
        written = asyncio.create_task(
            writer.apply(Mutation().hset(keys.identity_profile(), {"name": "late"}), "late")
        )
        result = await rolling
        late_entry = await written  # the write waited for the hold, then went through
        stop.set()
        reads, slowest, errors = await reading
    finally:
        await client.config_set("busy-reply-threshold", old["busy-reply-threshold"])
        await reader.aclose()
        await writer.client.aclose()
    assert errors == [], errors[:3]
    assert reads > 10 and slowest < 2.0
    assert result.ops_applied >= 500_000 and result.entries_undone == 500
    assert result.journal_entry is not None and late_entry > result.journal_entry
    after = await dump_state(client, keys)
    profile = keys.identity_profile().encode()
    assert {k: v for k, v in after.items() if k != profile} == at_checkpoint
    # undo is refused (state changed since), then works once the late write is rolled back
    with pytest.raises(CheckpointError, match="state changed"):
        await cps.undo()
    await cps.rollback_to(result.pre_checkpoint.id, reason="undo")
    assert await dump_state(client, keys) == before


async def test_writes_wait_for_an_interrupted_rollback_until_it_is_finished(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    cps = Checkpoints(client, keys, budget_ms=5)
    cp = await cps.create(label="start")
    at_checkpoint = await dump_state(client, keys)
    await _fill(store, keys, 300, 200)
    before = await dump_state(client, keys)
    # a rollback that made one step, then its process died (the lock expired)
    lock = cps._admin_lock()
    assert await lock.acquire()
    pre = await cps.create(label="pre", prune=False)
    target = await cps.resolve(cp.id)
    assert await cps._begin(lock, target, pre, "cli", "rollback")
    reply = await cps._step(lock, 0)  # no budget: one op, never the whole rollback
    assert reply[0] == b"more"
    await lock.release()
    # writes wait, then fail with a retryable error; nothing is written meanwhile
    impatient = Store(client, keys, write_wait_s=0.3)
    with pytest.raises(BusyError, match="rollback is in progress") as caught:
        await impatient.apply(Mutation().hset(keys.identity_profile(), {"n": "1"}), "t")
    assert error_code(caught.value) == ("busy", True)
    with pytest.raises(BusyError, match="rollback is in progress"):
        await Checkpoints(client, keys, write_wait_s=0.3).create(label="half rolled back")
    assert await client.exists(keys.identity_profile()) == 0
    finished = await cps.finish_interrupted()
    assert finished is not None and finished.entries_undone == 300
    assert await client.exists(keys.write_hold()) == 0
    assert await dump_state(client, keys) == at_checkpoint
    assert await cps.finish_interrupted() is None
    await cps.undo()  # the finished run was recorded: undo returns to the pre-checkpoint
    assert await dump_state(client, keys) == before
    await store.apply(Mutation().hset(keys.identity_profile(), {"n": "1"}), "t")


async def test_a_failing_step_reverses_the_steps_before_it(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    cps = Checkpoints(client, keys, budget_ms=5)
    victim = keys.longterm("victim")
    await store.apply(Mutation().rpush(victim, "z"), "before the checkpoint")
    cp = await cps.create(label="start")
    await store.apply(Mutation().rpush(victim, "a", "b"), "oldest change")
    await _fill(store, keys, 300, 200)
    # outside the journal, the oldest change's list becomes a string: its inverse (RPOP 2)
    # fails in the last step, after many steps were made
    await client.delete(victim)
    await client.set(victim, "not a list")
    before = await dump_state(client, keys)
    journal_top = await last_position(client, keys.journal())
    with pytest.raises(CheckpointError, match="nothing changed") as caught:
        await cps.rollback_to(cp.id)
    assert "WRONGTYPE" in str(caught.value)
    assert await dump_state(client, keys) == before
    assert await client.exists(keys.write_hold()) == 0
    # the steps and their reversal are in the journal, so the history stays honest
    assert await last_position(client, keys.journal()) != journal_top
    await store.apply(Mutation().hset(keys.identity_profile(), {"n": "1"}), "t")


async def test_ops_that_would_fail_part_way_are_refused_before_changing_anything(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    zset, hash_ = keys.memory_topics(), keys.identity_profile()
    await store.apply(Mutation().hset(hash_, {"name": "Ada"}), "t")
    before = await dump_state(client, keys)
    top = await last_position(client, keys.journal())
    flat: list[str | float] = [x for i in range(1200) for x in (float(i), f"m{i}")]
    flat[-2] = "not-a-number"  # the last pair, in the third chunk of 500
    bad = Mutation().add("ZADD", zset, *flat)
    with pytest.raises(InvalidOperationError, match="not a number"):
        await store.apply(bad, "t")
    with pytest.raises(InvalidOperationError, match="WRONGTYPE"):
        await store.apply(Mutation().rpush(keys.longterm("x"), "1").rpush(hash_, "x"), "t")
    assert await dump_state(client, keys) == before
    assert await last_position(client, keys.journal()) == top


async def test_a_key_whose_encoding_names_its_type_still_refuses_other_families(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    """quicklist, skiplist and intset say the type without asking (library 25): same refusals."""
    long_list, big_zset, int_set = (keys.longterm(n) for n in ("list", "zset", "ints"))
    many = [str(i) for i in range(300)]
    await store.apply(
        Mutation()
        .rpush(long_list, *(i.ljust(100, "-") for i in many))  # past 8 kB: a quicklist
        .add("ZADD", big_zset, *[x for i in many for x in (i, f"m{i}")])
        .add("SADD", int_set, "1", "2", "3"),
        "t",
    )
    encodings = [await client.object("encoding", k) for k in (long_list, big_zset, int_set)]
    assert encodings == [b"quicklist", b"skiplist", b"intset"]
    before = await dump_state(client, keys)
    top = await last_position(client, keys.journal())
    for wrong, holds in (
        (Mutation().hset(long_list, {"f": "v"}), "list"),
        (Mutation().add("ZADD", long_list, "1", "m"), "list"),
        (Mutation().rpush(big_zset, "x"), "zset"),
        (Mutation().add("SADD", big_zset, "x"), "zset"),
        (Mutation().rpush(int_set, "x"), "set"),
        (Mutation().add("ZREM", int_set, "1"), "set"),
    ):
        with pytest.raises(InvalidOperationError, match=f"WRONGTYPE aether: .* holds a {holds}$"):
            first = Mutation().rpush(keys.longterm("new"), "y")
            await store.apply(Mutation(first.ops + wrong.ops), "t")
    assert await dump_state(client, keys) == before
    assert await last_position(client, keys.journal()) == top
    fitting = Mutation().rpush(long_list, "x").add("ZADD", big_zset, "1", "n")
    await store.apply(fitting.add("SADD", int_set, "4"), "t")
    assert await client.llen(long_list) == 301
    assert (await JournalChain(client, keys).verify()).ok


async def test_replay_validates_ops_and_declares_keys(client: Redis, keys: Keyspace) -> None:
    outside = msgpack.packb([[b"SET", b"elsewhere:k", b"v"]], use_bin_type=False)
    fields = [b"a", b"x", b"r", b"t", b"f", outside, b"i", msgpack.packb([])]
    with pytest.raises(ResponseError, match="outside the namespace"):
        await client.fcall(
            "aether_replay", 2, keys.journal(), "elsewhere:k", keys.prefix, "1-1", 0, *fields
        )
    fields[5] = b"\xc1junk"
    with pytest.raises(ResponseError, match="unreadable"):
        await client.fcall("aether_replay", 1, keys.journal(), keys.prefix, "1-1", 0, *fields)
    assert await client.exists("elsewhere:k", keys.journal()) == 0


@pytest.fixture
async def pg() -> AsyncIterator[asyncpg.Connection]:
    async with open_archive(PG_DSN) as conn:
        yield conn


@pytest.fixture(scope="module")
def restore_home(tmp_path_factory: pytest.TempPathFactory) -> object:
    yield from embedded_server(tmp_path_factory, "aether-paged-restore")


async def test_a_paged_snapshot_taken_during_writes_restores_exactly(
    store: Store,
    client: Redis,
    keys: Keyspace,
    pg: asyncpg.Connection,
    restore_home: Path,
    namespace: str,
) -> None:
    await _fill(store, keys, 40, 100)
    for i in range(600):  # many small keys, so the snapshot takes many pages
        await store.apply(Mutation().hset(keys.longterm(f"m{i}"), {"v": i}), "t")
    written = 0

    class WritesBetweenPages:
        """The test's client, which makes a journaled write before every snapshot page."""

        def __getattr__(self, name: str) -> object:
            return getattr(client, name)

        async def fcall_ro(self, *args: object) -> object:
            nonlocal written
            m = Mutation().hset(keys.longterm(f"m{written % 600}"), {"v": f"w{written}"})
            m.rpush(keys.longterm(f"new{written % 7}"), str(written))
            await store.apply(m, "during snapshot")
            written += 1
            return await client.fcall_ro(*args)

    paging = cast(Redis, WritesBetweenPages())
    archive = Archive(pg, paging, keys, budget_ms=0)  # 0: one SCAN batch per page
    snapshot_id = await archive.snapshot()
    assert written > 2
    row = await pg.fetchrow(
        "SELECT ms, seq, start_ms, start_seq FROM aether_snapshots WHERE snapshot_id = $1",
        snapshot_id,
    )
    assert (row["start_ms"], row["start_seq"]) < (row["ms"], row["seq"])  # writes interleaved
    cp = await Checkpoints(client, keys).create(label="after the snapshot")
    expected = await dump_state(client, keys)
    await archive.sync()
    target = await connect(Settings(home=restore_home, namespace=namespace))
    try:
        report = await Archive(pg, target, keys).restore(cp.id)
        assert report.snapshot == snapshot_id
        assert await dump_state(target, keys) == expected
    finally:
        await target.aclose()


async def test_driver_errors_become_aether_errors(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    info = await client.info("memory")
    old = await client.config_get("maxmemory")
    await client.config_set("maxmemory", max(1, int(info["used_memory"]) - 1024 * 1024))
    try:
        with pytest.raises(CapacityError, match="out of memory") as caught:
            await store.apply(Mutation().hset(keys.identity_profile(), {"n": "x"}), "t")
    finally:
        await client.config_set("maxmemory", old["maxmemory"])
    assert error_code(caught.value) == ("capacity", False)
    gone = AetherRedis(unix_socket_path="/nonexistent/redis.sock")
    with pytest.raises(UnavailableError, match="unreachable") as unreachable:
        await Store(gone, keys).apply(Mutation().hset(keys.identity_profile(), {"n": "x"}), "t")
    assert error_code(unreachable.value) == ("unavailable", True)
    await gone.aclose()


async def test_the_lock_never_releases_someone_elses(client: Redis, keys: Keyspace) -> None:
    first = StateLock(client, keys.admin_lock(), ttl_s=0.1, busy="held")
    assert await first.acquire()
    await asyncio.sleep(0.2)  # it expired: a second holder takes it
    second = StateLock(client, keys.admin_lock(), ttl_s=5, busy="held")
    async with second:
        await first.release()  # too late: must not free the second holder's lock
        assert await client.get(keys.admin_lock()) == second.token.encode()
        with pytest.raises(ConcurrentAdminError, match="held"):
            async with StateLock(client, keys.admin_lock(), ttl_s=5, busy="held"):
                pass
    assert await client.exists(keys.admin_lock()) == 0

"""The journaled store: every mutation applied and journaled atomically, bad input refused."""

from __future__ import annotations

import json
from datetime import date

import pytest
from redis.asyncio import Redis

from aether.errors import InvalidOperationError
from aether.keys import Keyspace
from aether.store.journal import entries_after
from aether.store.state import Mutation, Store
from tests.conftest import dump_state


async def test_apply_journals_forward_and_small_inverse(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    day = keys.daily(date(2026, 1, 2))
    await store.apply(Mutation().json_set(keys.daily_entry("e1"), {"content": "hi"}), "t")
    await store.apply(Mutation().rpush(day, "e1"), "t")
    await store.apply(Mutation().rpush(day, "e2"), "t")
    entries = [e async for e in entries_after(client, keys.journal(), "0-0")]
    assert [e.reason for e in entries] == ["t", "t", "t"]
    assert entries[0].inverse() == [[b"DEL", keys.daily_entry("e1").encode()]]
    assert entries[1].inverse() == [[b"DEL", day.encode()]]
    # an append's inverse is a trim of what was appended, not a copy of the list
    assert entries[2].inverse() == [[b"RPOP", day.encode(), b"1"]]
    assert entries[2].actor == "test"


async def test_update_inverse_is_old_value(store: Store, client: Redis, keys: Keyspace) -> None:
    key = keys.identity_profile()
    await store.apply(Mutation().hset(key, {"name": "Ada"}), "t")
    before = await client.dump(key)
    await store.apply(Mutation().hset(key, {"name": "Bea"}), "t")
    last = [e async for e in entries_after(client, keys.journal(), "0-0")][-1]
    assert last.inverse() == [[b"RESTORE", key.encode(), before, b"listpack"]]


async def test_failing_op_changes_nothing(store: Store, client: Redis, keys: Keyspace) -> None:
    await store.apply(Mutation().hset(keys.identity_profile(), {"name": "Ada"}), "t")
    before_state = await dump_state(client, keys)
    before_len = await client.xlen(keys.journal())
    bad = (
        Mutation()
        .hset(keys.identity_profile(), {"name": "Changed"})
        .rpush(keys.daily(date(2026, 1, 1)), "x")
        .json_set(keys.identity_profile(), {"oops": 1})  # wrong type: the batch fails
    )
    with pytest.raises(InvalidOperationError, match="refused"):
        await store.apply(bad, "bad")
    assert await dump_state(client, keys) == before_state
    assert await client.xlen(keys.journal()) == before_len


@pytest.mark.parametrize(
    "key_of",
    [
        lambda k: "other:identity:profile",  # another namespace
        lambda k: k.scratchpad("x"),  # ephemeral, not journaled state
        lambda k: k.journal(),
        lambda k: k.checkpoint("01ABC"),
    ],
)
async def test_keys_outside_state_are_refused(
    store: Store, client: Redis, keys: Keyspace, key_of: object
) -> None:
    key = key_of(keys)  # type: ignore[operator]
    with pytest.raises(InvalidOperationError, match="not journaled agent state"):
        await store.apply(Mutation().set(key, "v"), "t")
    assert await client.exists(key) == 0


def test_unsupported_command_is_refused() -> None:
    with pytest.raises(InvalidOperationError, match="unsupported"):
        Mutation().add("FLUSHALL", "x")
    with pytest.raises(InvalidOperationError, match="empty"):
        import asyncio

        asyncio.run(Store(None, Keyspace("x")).apply(Mutation(), "t"))  # type: ignore[arg-type]


async def test_malformed_payload_is_refused_by_the_library(client: Redis, keys: Keyspace) -> None:
    import msgpack
    from redis.exceptions import ResponseError

    async def apply_raw(payload: bytes) -> object:
        journal, hold, cursor = keys.journal(), keys.write_hold(), keys.archive_cursor()
        return await client.fcall(
            "aether_apply", 3, journal, hold, cursor, keys.prefix, "a", "r", payload
        )

    with pytest.raises(ResponseError, match=r"not msgpack|malformed|no operations"):
        await apply_raw(b"\xc1j")
    with pytest.raises(ResponseError, match="outside the namespace"):
        await apply_raw(msgpack.packb([[b"SET", b"elsewhere:k", b"v"]], use_bin_type=False))
    assert await client.exists("elsewhere:k") == 0


async def test_special_characters_and_binary_values_round_trip(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    key = keys.longterm('weird id ✓ "quotes" * [x]')
    doc = {"content": 'naïve ✓ \u0000 "q" \\ emoji 🧠', "n": 1}
    await store.apply(Mutation().json_set(key, doc), "t")
    raw = await client.execute_command("JSON.GET", key)
    assert json.loads(raw) == doc
    await store.apply(Mutation().set(keys.user_profile() + ":blob", bytes(range(256))), "t")
    assert await client.get(keys.user_profile() + ":blob") == bytes(range(256))


async def test_huge_mutation_is_refused(store: Store, client: Redis, keys: Keyspace) -> None:
    huge = "x" * (17 * 1024 * 1024)
    with pytest.raises(InvalidOperationError, match="too large"):
        await store.apply(Mutation().set(keys.longterm("big"), huge), "t")
    assert await client.exists(keys.longterm("big")) == 0


async def test_mutation_context_manager_applies_on_exit(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    async with store.mutation("ctx") as m:
        m.hset(keys.system_flags(), {"bootstrapped": "1"})
        m.zadd(keys.chat_session_index(), {"s1": 10.0})
    assert await client.hget(keys.system_flags(), "bootstrapped") == b"1"
    with pytest.raises(RuntimeError):
        async with store.mutation("ctx") as m:
            m.hset(keys.system_flags(), {"bootstrapped": "0"})
            raise RuntimeError("abandon")
    assert await client.hget(keys.system_flags(), "bootstrapped") == b"1"


async def test_an_absent_guard_refuses_the_whole_batch_when_its_key_exists(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    from aether.errors import ConflictError

    doc = keys.longterm("m1")
    created = Mutation().absent(doc).json_set(doc, {"content": "first"})
    created.zincrby(keys.memory_counts(), 1, "longterm")
    await store.apply(created, "t")
    before_state = await dump_state(client, keys)
    before_len = await client.xlen(keys.journal())
    again = Mutation().zincrby(keys.memory_counts(), 1, "longterm")
    again.absent(doc).json_set(doc, {"content": "second"})
    with pytest.raises(ConflictError, match="exists"):
        await store.apply(again, "t")
    # the counter op before the guard was undone with the rest; nothing was journaled
    assert await dump_state(client, keys) == before_state
    assert await client.xlen(keys.journal()) == before_len
    assert await client.zscore(keys.memory_counts(), "longterm") == 1


async def test_a_guarded_change_rolls_back_and_replays(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    from aether.checkpoints.manager import Checkpoints

    checkpoints = Checkpoints(client, keys)
    await client.set(keys.archive_cursor(), "0-0")  # an archive follows: entries keep values
    empty = await dump_state(client, keys)
    cp = await checkpoints.create(label="before")
    doc = keys.longterm("m2")
    await store.apply(Mutation().absent(doc).json_set(doc, {"content": "x"}), "t")
    entry = [e async for e in entries_after(client, keys.journal(), "0-0")][-1]
    assert entry.forward()[0] == [b"ABSENT", doc.encode()]
    assert entry.inverse() == [[b"DEL", doc.encode()]]  # the guard itself has no inverse
    await checkpoints.rollback_to(cp.id)
    assert await dump_state(client, keys) == empty
    # the archive's replay applies forward ops: a replayed guard changes nothing
    fields = [v for pair in entry.fields.items() for v in pair]
    await client.fcall(
        "aether_replay", 2, keys.journal(), doc, keys.prefix, "9999999999999-0", 0, *fields
    )
    assert json.loads(await client.execute_command("JSON.GET", doc)) == {"content": "x"}

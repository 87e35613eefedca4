"""Checkpoints: O(1) create, resolve by prefix, diff by tier, rollback, undo, retention."""

from __future__ import annotations

import asyncio
import json
from datetime import date

import pytest
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.errors import (
    AmbiguousIdError,
    CheckpointError,
    ConcurrentAdminError,
    InvalidOperationError,
    NotFoundError,
)
from aether.keys import Keyspace
from aether.store.state import Mutation, Store
from tests.conftest import dump_state, next_event


async def _log(store: Store, keys: Keyspace, eid: str, text: str) -> None:
    day = keys.daily(date(2026, 3, 1))
    await store.apply(
        Mutation().json_set(keys.daily_entry(eid), {"content": text}).rpush(day, eid), "memory.log"
    )


async def test_checkpoint_records_position_and_metadata(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    empty = await checkpoints.create(label="empty")
    assert empty.journal_pos == "0-0"
    await _log(store, keys, "e1", "hello")
    cp = await checkpoints.create(label="after one", reason="manual", actor="me")
    last = await client.xrevrange(keys.journal(), count=1)
    assert cp.journal_pos == last[0][0].decode()
    stored = await client.hgetall(keys.checkpoint(cp.id))
    assert stored[b"label"] == b"after one" and stored[b"actor"] == b"me"
    assert [c.id for c in await checkpoints.list()] == [cp.id, empty.id]  # newest first
    assert cp.id > empty.id  # ULIDs sort by time


async def test_rollback_restores_state_and_undo_reverses_it(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    await _log(store, keys, "e1", "kept")
    cp = await checkpoints.create(label="one entry")
    at_cp = await dump_state(client, keys)
    await _log(store, keys, "e2", "discarded")
    await store.apply(Mutation().hset(keys.identity_profile(), {"name": "Changed"}), "identity")
    await store.apply(Mutation().delete(keys.daily_entry("e1")), "forget")
    after = await dump_state(client, keys)

    result = await checkpoints.rollback_to(cp.id[:8])
    assert result.entries_undone == 3
    assert await dump_state(client, keys) == at_cp
    assert await client.exists(keys.daily_entry("e2")) == 0

    await checkpoints.undo()
    assert await dump_state(client, keys) == after
    # a second undo in a row is refused, changing nothing, unless it is asked to redo
    with pytest.raises(NotFoundError, match="already an undo"):
        await checkpoints.undo()
    assert await dump_state(client, keys) == after
    await checkpoints.undo(redo=True)
    assert await dump_state(client, keys) == at_cp


async def test_rollback_is_announced_and_recorded(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    cp = await checkpoints.create()
    await _log(store, keys, "e1", "x")
    pubsub = client.pubsub()
    await pubsub.subscribe(keys.events())
    await pubsub.get_message(timeout=1)
    result = await checkpoints.rollback_to(cp.id)
    message = await next_event(pubsub)
    await pubsub.aclose()
    assert message is not None
    assert json.loads(message["data"])["target"] == cp.id
    record = json.loads(await client.lindex(keys.rollbacks(), 0))
    assert record["pre_checkpoint"] == result.pre_checkpoint.id


async def test_undo_refuses_when_state_changed_since(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    with pytest.raises(NotFoundError, match="nothing to undo"):
        await checkpoints.undo()
    cp = await checkpoints.create()
    await _log(store, keys, "e1", "x")
    await checkpoints.rollback_to(cp.id)
    await _log(store, keys, "e2", "new work")
    before = await dump_state(client, keys)
    with pytest.raises(CheckpointError, match="state changed since the last rollback"):
        await checkpoints.undo()
    assert await dump_state(client, keys) == before


async def test_prefix_resolution_errors(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    cps = []
    for i in range(3):
        cps.append(await checkpoints.create(label=str(i)))
        await asyncio.sleep(0.003)  # ULIDs of one millisecond differ only in their tail
    assert (await checkpoints.resolve(cps[1].id[:10].lower())).id == cps[1].id
    assert (await checkpoints.resolve(cps[1].id)).id == cps[1].id
    with pytest.raises(InvalidOperationError, match="at least 6"):
        await checkpoints.resolve(cps[0].id[:5])
    with pytest.raises(NotFoundError, match="no checkpoint matches"):
        await checkpoints.resolve("ZZZZZZZZ")
    with pytest.raises(InvalidOperationError, match="not a checkpoint id"):
        await checkpoints.resolve("01*?[]\\x'\"")
    # checkpoints made in the same millisecond-ish window share their time prefix
    with pytest.raises(AmbiguousIdError, match="matches 3"):
        await checkpoints.resolve(cps[0].id[:6])


async def test_rollback_bad_input_changes_nothing(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    await _log(store, keys, "e1", "x")
    before, journal_len = await dump_state(client, keys), await client.xlen(keys.journal())
    for bad in ("nope12", "0000000000", "01"):
        with pytest.raises((NotFoundError, AmbiguousIdError, InvalidOperationError)):
            await checkpoints.rollback_to(bad)
    assert await dump_state(client, keys) == before
    assert await client.xlen(keys.journal()) == journal_len
    assert await client.zcard(keys.checkpoints()) == 0


async def test_rollback_to_pruned_checkpoint_is_refused(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    cps = Checkpoints(client, keys, keep=2)
    old = await cps.create(label="old")
    await _log(store, keys, "e1", "a")
    await cps.create(label="mid")
    await _log(store, keys, "e2", "b")
    await cps.create(label="new")  # prunes "old"
    before = await dump_state(client, keys)
    with pytest.raises(NotFoundError, match="was pruned"):
        await cps.rollback_to(old.id)
    assert await dump_state(client, keys) == before


async def test_prune_keeps_last_n_and_trims_journal(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    cps = Checkpoints(client, keys, keep=3)
    made = []
    for i in range(6):
        await _log(store, keys, f"e{i}", str(i))
        made.append(await cps.create(label=str(i)))
    kept = await cps.list()
    assert [c.id for c in kept] == [c.id for c in reversed(made[-3:])]
    oldest_kept = made[-3]
    first = (await client.xrange(keys.journal(), count=1))[0][0].decode()
    assert first == oldest_kept.journal_pos  # everything before it is trimmed
    assert await client.xlen(keys.journal()) == 3
    # the oldest kept checkpoint still rolls back exactly
    await _log(store, keys, "late", "late")
    await cps.rollback_to(oldest_kept.id)
    assert await client.exists(keys.daily_entry("e4")) == 0
    assert await client.exists(keys.daily_entry("e3")) == 1


async def test_rollback_while_another_runs_is_refused(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    cp = await checkpoints.create(label="a")
    await _log(store, keys, "e1", "x")
    other_admin = Checkpoints(client, keys)._admin_lock()
    assert await other_admin.acquire()  # another rollback/undo/restore is in progress
    before = await dump_state(client, keys)
    n_checkpoints = await client.zcard(keys.checkpoints())
    try:
        with pytest.raises(ConcurrentAdminError, match="nothing changed"):
            await checkpoints.rollback_to(cp.id)
    finally:
        await other_admin.release()
    assert await dump_state(client, keys) == before
    assert await client.zcard(keys.checkpoints()) == n_checkpoints  # no pre-checkpoint either
    await checkpoints.rollback_to(cp.id)  # the lock is free again
    assert await client.exists(keys.daily_entry("e1")) == 0


async def test_concurrent_rollbacks_leave_exactly_one_target(
    store: Store, client: Redis, keys: Keyspace, settings: object
) -> None:
    from aether.config import Settings
    from aether.store.client import connect

    assert isinstance(settings, Settings)
    cps = Checkpoints(client, keys)
    cp_a = await cps.create(label="a")
    await _log(store, keys, "a0", "x")
    cp_b = await cps.create(label="b")
    image_b = await dump_state(client, keys)
    await _log(store, keys, "b0", "y")
    image_a = {k: v for k, v in image_b.items() if b"a0" not in k and not k.endswith(b"03-01")}
    clients = [await connect(settings) for _ in range(4)]
    try:
        targets = [cp_a.id, cp_b.id, cp_a.id, cp_b.id]
        results = await asyncio.gather(
            *(Checkpoints(c, keys).rollback_to(t) for c, t in zip(clients, targets, strict=True)),
            return_exceptions=True,
        )
    finally:
        for c in clients:
            await c.aclose()
    wins = [r for r in results if not isinstance(r, BaseException)]
    assert wins, results
    assert all(isinstance(r, ConcurrentAdminError) for r in results if isinstance(r, BaseException))
    last = json.loads(await client.lindex(keys.rollbacks(), 0))
    expected = image_a if last["target"] == cp_a.id else image_b
    assert await dump_state(client, keys) == expected
    assert await client.exists(keys.admin_lock()) == 0


async def test_diff_groups_changes_by_tier(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    await store.apply(Mutation().hset(keys.identity_profile(), {"name": "Ada"}), "identity")
    await store.apply(Mutation().json_set(keys.longterm("old"), {"c": 1}), "lt")
    cp = await checkpoints.create()
    await store.apply(Mutation().hset(keys.identity_profile(), {"name": "Bea"}), "identity")
    await _log(store, keys, "e1", "new")
    await store.apply(Mutation().delete(keys.longterm("old")), "flush")
    diff = await checkpoints.diff(cp.id)
    assert diff.entries == 3
    assert diff.tiers["identity"].modified == [keys.identity_profile()]
    assert sorted(diff.tiers["daily"].created) == sorted(
        [keys.daily(date(2026, 3, 1)), keys.daily_entry("e1")]
    )
    assert diff.tiers["longterm"].deleted == [keys.longterm("old")]


async def test_diff_compares_values_and_drops_what_changed_back(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    profile, tags = keys.identity_profile(), keys.belief("b") + ":tags"
    await store.apply(Mutation().hset(profile, {"name": "Ada", "tz": "UTC"}), "identity")
    await store.apply(Mutation().sadd(tags, "a", "b"), "tags")
    cp = await checkpoints.create()
    await store.apply(Mutation().hset(profile, {"name": "Bea"}), "identity")
    await store.apply(Mutation().hset(profile, {"name": "Ada"}), "identity")  # and back
    await store.apply(Mutation().sadd(tags, "c").srem(tags, "a"), "tags")
    await store.apply(Mutation().json_set(keys.longterm("n"), {"c": 1, "v": [0.5] * 9}), "lt")
    diff = await checkpoints.diff(cp.id)
    assert diff.entries == 4
    by_key = {c.key: c for c in diff.changes}
    assert profile not in by_key and diff.tiers["identity"].modified == []
    assert by_key[tags].added == ["c"] and by_key[tags].removed == ["a"]
    created = by_key[keys.longterm("n")]
    assert created.change == "created" and created.type == "json"
    assert [(f.field, f.before, f.after) for f in created.fields] == [
        ("c", None, "1"),
        ("v", None, "<9 numbers>"),
    ]
    assert await client.keys(keys.prefix + "tmp:*") == []  # the scratch keys are gone


async def test_diff_prints_sorted_set_scores_exactly(
    store: Store, checkpoints: Checkpoints, keys: Keyspace
) -> None:
    days = keys.prefix + "memory:counts"
    await store.apply(Mutation().zadd(days, {"a": 1795552110.25, "b": 3}), "counts")
    cp = await checkpoints.create()
    await store.apply(Mutation().zadd(days, {"a": 1795552110.75, "b": 4}), "counts")
    change = {c.key: c for c in (await checkpoints.diff(cp.id)).changes}[days]
    assert [(f.field, f.before, f.after) for f in change.fields] == [
        ("a", "1795552110.25", "1795552110.75"),  # with %g both read 1.79555e+09
        ("b", "3", "4"),
    ]


async def test_search_index_follows_rollback(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    from redisvl.index import AsyncSearchIndex
    from redisvl.query import FilterQuery
    from redisvl.query.filter import Text

    index = AsyncSearchIndex.from_dict(
        {
            "index": {
                "name": keys.memory_index(),
                "prefix": keys.longterm(""),
                "storage_type": "json",
            },
            "fields": [{"name": "content", "type": "text"}],
        },
        redis_client=client,
    )
    await index.create(overwrite=True)
    try:
        cp = await checkpoints.create()
        await store.apply(
            Mutation().json_set(keys.longterm("m1"), {"content": "zebra stripes"}), "lt"
        )

        async def hits() -> int:
            q = FilterQuery(filter_expression=Text("content") == "zebra", return_fields=["content"])
            for _ in range(50):  # indexing is asynchronous only for large docs; allow a moment
                found = await index.query(q)
                if found or not expect:
                    return len(found)
                await asyncio.sleep(0.05)
            return 0

        expect = True
        assert await hits() == 1
        await checkpoints.rollback_to(cp.id)
        expect = False
        assert await hits() == 0
    finally:
        await index.delete(drop=False)


async def test_checkpoint_writes_only_its_own_keys(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    # O(1) whatever the state holds: a checkpoint copies nothing, it adds its hash and
    # a member of the checkpoints zset, and leaves every state key untouched
    for i in range(300):
        await _log(store, keys, f"e{i}", "x")
    names_before = {k async for k in client.scan_iter(match=f"{keys.prefix}*")}
    state_before = await dump_state(client, keys)
    cp = await checkpoints.create()
    names_after = {k async for k in client.scan_iter(match=f"{keys.prefix}*")}
    assert names_after - names_before == {
        keys.checkpoint(cp.id).encode(),
        keys.checkpoints().encode(),
    }
    assert await dump_state(client, keys) == state_before
    assert await client.hlen(keys.checkpoint(cp.id)) == 7  # and the chain head at its position

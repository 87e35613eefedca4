"""Property tests of the journal (hypothesis): rollback and undo restore DUMP-identical state.

Operations are drawn over a handful of keys of every state type, with value sizes that
push lists and sorted sets across Redis's compact-encoding thresholds, so the
encoding-change path of the Functions library is exercised too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.keys import Keyspace
from aether.memory.storage import vectors
from aether.store.client import connect
from aether.store.state import Mutation, Store
from aether.testing.local_cluster import LocalCluster
from tests.conftest import dump_state

NAMES = ["a", "b", "c"]
small = st.text(alphabet="abcxyz ✓", min_size=0, max_size=12)
value = st.one_of(small, st.text(alphabet="pq", min_size=60, max_size=700))
score = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda f: round(f, 3))
vector = st.lists(
    st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, width=32), min_size=8, max_size=8
)


def _op(
    keys: Keyspace, value: st.SearchStrategy[str] = value, small: st.SearchStrategy[str] = small
) -> st.SearchStrategy[tuple[str, Any]]:
    name = st.sampled_from(NAMES)
    fields = st.dictionaries(small, value, min_size=1, max_size=4)
    kinds = st.sampled_from(["json", "hash", "list", "zset", "set", "str"])
    return st.one_of(
        st.tuples(st.just("json"), st.tuples(name, st.dictionaries(small, value, max_size=3))),
        st.tuples(st.just("hset"), st.tuples(name, fields)),
        st.tuples(st.just("hdel"), st.tuples(name, small)),
        st.tuples(st.just("rpush"), st.tuples(name, st.lists(value, min_size=1, max_size=40))),
        st.tuples(
            st.just("rpushcap"),
            st.tuples(name, st.integers(1, 30), st.lists(value, min_size=1, max_size=8)),
        ),
        st.tuples(
            st.just("zadd"), st.tuples(name, st.dictionaries(value, score, min_size=1, max_size=40))
        ),
        st.tuples(st.just("zrem"), st.tuples(name, st.lists(value, min_size=1, max_size=3))),
        st.tuples(st.just("zincrby"), st.tuples(name, st.integers(-3, 5), value)),
        st.tuples(
            st.just("zaddgt"),
            st.tuples(name, st.dictionaries(value, score, min_size=1, max_size=5)),
        ),
        st.tuples(st.just("sadd"), st.tuples(name, st.lists(value, min_size=1, max_size=20))),
        st.tuples(st.just("set"), st.tuples(name, value)),
        st.tuples(st.just("del"), st.tuples(kinds, name)),
        # a memory with a binary vector in its hash (any byte may occur), its status, removal
        st.tuples(
            st.just("memory"),
            st.tuples(name, small, vector, st.sampled_from(["float32", "float16"])),
        ),
        st.tuples(st.just("status"), st.tuples(name, st.sampled_from(["active", "forgotten"]))),
        st.tuples(st.just("forget"), st.tuples(name)),
    )


def _mutation(keys: Keyspace, kind: str, args: Any) -> Mutation:
    m = Mutation()
    key = {
        "json": keys.longterm,
        "hash": lambda n: keys.chat_session(n),
        "list": lambda n: keys.daily_entry(n) + ":list",
        "zset": keys.chat_messages,
        "set": lambda n: keys.belief(n) + ":set",
        "str": lambda n: keys.user_profile() + ":" + n,
    }
    if kind == "json":
        return m.json_set(key["json"](args[0]), args[1])
    if kind == "memory":
        name, content, floats, datatype = args
        doc = {"id": name, "kind": "belief", "content": content, "tags": ["t 1", "t,2"]}
        doc |= {"status": "active", "timestamp": 1.5, "embedding": floats}
        return vectors.put(m, keys, keys.belief(name), doc, datatype)
    if kind == "status":
        return vectors.refilter(m, keys, keys.belief(args[0]), status=args[1])
    if kind == "forget":
        return vectors.remove(m, keys, keys.belief(args[0]))
    if kind == "hset":
        return m.hset(key["hash"](args[0]), args[1])
    if kind == "hdel":
        return m.hdel(key["hash"](args[0]), args[1])
    if kind == "rpush":
        return m.rpush(key["list"](args[0]), *args[1])
    if kind == "rpushcap":
        return m.rpush_capped(key["list"](args[0]), args[1], *args[2])
    if kind == "zadd":
        return m.zadd(key["zset"](args[0]), args[1])
    if kind == "zrem":
        return m.zrem(key["zset"](args[0]), *args[1])
    if kind == "zaddgt":
        return m.zadd(key["zset"](args[0]), args[1], gt=True)
    if kind == "zincrby":
        return m.zincrby(key["zset"](args[0]), args[1], args[2])
    if kind == "sadd":
        return m.sadd(key["set"](args[0]), *args[1])
    if kind == "set":
        return m.set(key["str"](args[0]), args[1])
    return m.delete(key[args[0]](args[1]))


async def _apply_all(store: Store, keys: Keyspace, ops: list[tuple[str, Any]]) -> None:
    from aether.errors import InvalidOperationError

    for kind, args in ops:
        # a refused op (e.g. one on a key of another type) changes nothing
        with contextlib.suppress(InvalidOperationError):
            await store.apply(_mutation(keys, kind, args), kind)


def _ops() -> st.SearchStrategy[list[tuple[str, Any]]]:
    return st.lists(_op(Keyspace("x")), min_size=0, max_size=25)


async def _rollback_then_undo(
    settings: Settings,
    before: list[tuple[str, Any]],
    after: list[tuple[str, Any]],
    later: list[tuple[str, Any]],
    archived: bool = False,
) -> None:
    keys = Keyspace(settings.namespace)
    client = await connect(settings)
    try:
        store, cps = Store(client, keys), Checkpoints(client, keys, durable=False)
        if archived:  # entries keep their forward values too
            await client.set(keys.archive_cursor(), "0-0")
        await _apply_all(store, keys, before)
        at_checkpoint = await dump_state(client, keys)
        cp = await cps.create(label="prop")
        await _apply_all(store, keys, after)
        before_rollback = await dump_state(client, keys)
        await cps.rollback_to(cp.id)
        assert await dump_state(client, keys) == at_checkpoint
        await cps.undo()
        assert await dump_state(client, keys) == before_rollback
        # and a rollback through an earlier rollback and undo still lands exactly
        await _apply_all(store, keys, later)
        await cps.rollback_to(cp.id)
        assert await dump_state(client, keys) == at_checkpoint
    finally:
        await client.aclose()


@settings(
    max_examples=int(os.environ.get("AETHER_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(before=_ops(), after=_ops(), later=_ops(), archived=st.booleans())
def test_rollback_then_undo_is_byte_identical(
    redis_home: Path,
    before: list[tuple[str, Any]],
    after: list[tuple[str, Any]],
    later: list[tuple[str, Any]],
    archived: bool,
) -> None:
    ns = f"p{uuid.uuid4().hex[:10]}"
    settings = Settings(home=redis_home, namespace=ns)
    asyncio.run(_rollback_then_undo(settings, before, after, later, archived))


@settings(
    max_examples=int(os.environ.get("AETHER_PROPERTY_EXAMPLES", "60")) // 3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(before=_ops(), after=_ops(), later=_ops())
def test_rollback_then_undo_is_byte_identical_on_a_cluster(
    cluster: LocalCluster,
    tmp_path: Path,
    before: list[tuple[str, Any]],
    after: list[tuple[str, Any]],
    later: list[tuple[str, Any]],
) -> None:
    settings = Settings(
        home=tmp_path,
        namespace=f"{{p{uuid.uuid4().hex[:10]}}}",  # a fresh slot, on any of the shards
        redis_url=cluster.url,  # type: ignore[arg-type]
        redis_cluster=True,
    )
    asyncio.run(_rollback_then_undo(settings, before, after, later))


async def _values(client: Any, keys: Keyspace) -> dict[str, Any]:
    from aether.store.values import read_value

    found = [k.decode() async for k in client.scan_iter(match=keys.prefix + "*")]
    return {k: await read_value(client, k) for k in found if keys.is_state(k)}


@settings(
    max_examples=int(os.environ.get("AETHER_PROPERTY_EXAMPLES", "60")) // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(before=_ops(), after=_ops())
def test_diff_rebuilds_each_value_as_it_was_at_the_checkpoint(
    redis_home: Path, before: list[tuple[str, Any]], after: list[tuple[str, Any]]
) -> None:
    """Every key the diff reports differs exactly as its value then and now differ."""
    from aether.checkpoints.diff import compare
    from aether.store.values import ABSENT

    async def scenario() -> None:
        ns = f"p{uuid.uuid4().hex[:10]}"
        keys = Keyspace(ns)
        client = await connect(Settings(home=redis_home, namespace=ns))
        try:
            store, cps = Store(client, keys), Checkpoints(client, keys, durable=False)
            await _apply_all(store, keys, before)
            then = await _values(client, keys)
            cp = await cps.create(label="prop")
            await _apply_all(store, keys, after)
            now = await _values(client, keys)
            diff = await cps.diff(cp.id)
            expected = {}
            for key in sorted(set(then) | set(now)):
                change = compare(then.get(key, ABSENT), now.get(key, ABSENT))
                if change is not None:
                    change.key, change.tier = key, keys.tier(key)
                    expected[key] = change
            assert {c.key: c for c in diff.changes} == expected
            assert [k async for k in client.scan_iter(match=keys.prefix + "tmp:*")] == []
        finally:
            await client.aclose()

    asyncio.run(scenario())

"""Property test of erasure (hypothesis): random ops, some values marked; erase the mark.

Every rollback target then restores the unmarked state exactly. The expected state at a
checkpoint is worked out here, independently of the redactor, from the values observed
after every op: a whole item (string, JSON document, item hash) that ever held the mark is
absent at every point; a collection loses exactly the fields and members that hold it; a
list keeps its length with the marked elements tombstoned.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from aether.checkpoints.erasure import Eraser
from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.errors import InvalidOperationError
from aether.keys import Keyspace
from aether.memory.storage import vectors
from aether.store.client import connect
from aether.store.redaction import TOMBSTONE
from aether.store.state import Mutation, Store
from tests.test_journal_property import NAMES, _mutation, _op, small, value, vector

MARK = "ZEPHYRQ"
marked = st.tuples(small, small).map(lambda p: f"{p[0]} {MARK} {p[1]}")
maybe_marked = st.one_of(value, marked)
field_name = st.one_of(small, small.map(lambda s: f"{s} {MARK}"))
step = st.one_of(
    _op(Keyspace("x"), maybe_marked, field_name).map(lambda op: ("op", op)),
    # an item with keys of its own: a belief's passages and history, an entity's relations
    st.tuples(st.sampled_from(NAMES), maybe_marked, maybe_marked, vector).map(
        lambda args: ("owned", args)
    ),
    st.just(("checkpoint", None)),
)


def _owned(keys: Keyspace, name: str, content: str, note: str, floats: list[float]) -> Mutation:
    """A belief with two passages and a history entry, an entity with a relation."""
    doc = {"id": name, "kind": "belief", "content": content, "status": "active"}
    doc |= {"timestamp": 1.5, "embedding": floats, "passage_embeddings": [floats, floats]}
    m = vectors.put(Mutation(), keys, keys.belief(name), doc)
    m.rpush(keys.belief_history(name), json.dumps({"event": "create", "note": note}))
    m.hset(keys.entity(name), {"name": note, "type": "person"})
    return m.zadd(keys.relations_out(name), {f"knows,US,{content[:8]}": 1.0})


async def values(client: Redis, keys: Keyspace) -> dict[str, tuple[str, Any]]:
    """Every state key's value, by type (hash and set contents sorted)."""
    out: dict[str, tuple[str, Any]] = {}
    async for raw in client.scan_iter(match=keys.every_key, count=1000):
        key = raw.decode()
        if not keys.is_state(key):
            continue
        kind = (await client.type(key)).decode()
        content: Any
        if kind == "string":
            content = await client.get(key)
        elif kind == "ReJSON-RL":
            content = json.loads(await client.execute_command("JSON.GET", key))
        elif kind == "hash":
            content = sorted((await client.hgetall(key)).items())
        elif kind == "list":
            content = await client.lrange(key, 0, -1)
        elif kind == "zset":
            content = await client.zrange(key, 0, -1, withscores=True)
        else:
            content = sorted(await client.smembers(key))
        out[key] = (kind, content)
    return out


def holds(value: Any) -> bool:
    if isinstance(value, bytes):
        return MARK.lower().encode() in value.lower()
    if isinstance(value, str):
        return MARK.lower() in value.lower()
    if isinstance(value, dict):
        return any(holds(k) or holds(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(holds(v) for v in value)
    return False


def whole(keys: Keyspace, key: str, kind: str) -> bool:
    return kind in ("string", "ReJSON-RL") or (kind == "hash" and keys.is_item_hash(key))


def expected(
    keys: Keyspace, image: dict[str, tuple[str, Any]], ever: set[str]
) -> dict[str, tuple[str, Any]]:
    out: dict[str, tuple[str, Any]] = {}
    for key, (kind, content) in image.items():
        if key in ever or keys.owner(key) in ever:
            continue
        if kind == "hash":
            content = [(f, v) for f, v in content if not holds(f) and not holds(v)]
        elif kind == "list":
            content = [TOMBSTONE if holds(v) else v for v in content]
        elif kind == "zset":
            content = [(m, s) for m, s in content if not holds(m)]
        elif kind == "set":
            content = [m for m in content if not holds(m)]
        if content or kind in ("string", "ReJSON-RL"):
            out[key] = (kind, content)
    return out


async def scenario(settings_: Settings, steps: list[tuple[str, Any]]) -> None:
    keys = Keyspace(settings_.namespace)
    client = await connect(settings_)
    try:
        store, cps = Store(client, keys), Checkpoints(client, keys, durable=False)
        ever: set[str] = set()
        taken: list[tuple[str, dict[str, tuple[str, Any]]]] = []
        for kind, op in [*steps, ("checkpoint", None)]:
            if kind == "checkpoint":
                cp = await cps.create(label="prop", prune=False)
                taken.append((cp.id, await values(client, keys)))
                continue
            try:
                mutation = _owned(keys, *op) if kind == "owned" else _mutation(keys, *op)
                await store.apply(mutation, kind if kind == "owned" else op[0])
            except InvalidOperationError:
                continue  # refused (another type): nothing changed
            for key, (k, content) in (await values(client, keys)).items():
                if whole(keys, key, k) and holds(content):
                    ever.add(key)
        await Eraser(client, keys, cps, actor="prop").erase(MARK.lower())
        now = await values(client, keys)
        assert now == expected(keys, taken[-1][1], ever)
        for cp_id, image in taken:
            await cps.rollback_to(cp_id)
            assert await values(client, keys) == expected(keys, image, ever), cp_id
        await cps.undo()  # back to before the last rollback
        before_last = taken[-2][1] if len(taken) > 1 else taken[-1][1]
        assert await values(client, keys) == expected(keys, before_last, ever)
    finally:
        await client.aclose()


@settings(
    max_examples=int(os.environ.get("AETHER_PROPERTY_EXAMPLES", "60")) // 3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=1, max_size=30))
def test_every_rollback_target_restores_the_unmarked_state_exactly(
    redis_home: Path, steps: list[tuple[str, Any]]
) -> None:
    ns = f"e{uuid.uuid4().hex[:10]}"
    asyncio.run(scenario(Settings(home=redis_home, namespace=ns), steps))

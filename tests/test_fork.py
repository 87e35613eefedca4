"""Forks: a namespace whose state is a checkpoint's, that then lives its own life."""

from __future__ import annotations

import json
from datetime import date

import pytest
from redis.asyncio import Redis

from aether.checkpoints.chain import JournalChain
from aether.checkpoints.fork import fork_namespace, forks_of
from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.errors import ConflictError, InvalidOperationError, NotFoundError
from aether.keys import Keyspace
from aether.memory.tiers.daily import DailyLog
from aether.operations import Caller, Parts
from aether.operations.checkpoints import ForkArgs, checkpoint_fork
from aether.store.functions import Functions
from aether.store.state import Mutation, Store
from tests.conftest import invoke_cli

DAY = date(2026, 3, 1)


async def _contents(client: Redis, keys: Keyspace) -> dict[str, str]:
    """Each state key (without its namespace) and its content digest, encoding aside."""
    found = [k.decode() async for k in client.scan_iter(match=keys.every_key)]
    names = sorted(k for k in found if keys.is_state(k))
    digests = await Functions(client, keys).digests(names)
    return {n[len(keys.prefix) :]: d for n, d in zip(names, digests, strict=True)}


async def _write(store: Store, keys: Keyspace, n: int, word: str) -> None:
    await store.apply(
        Mutation()
        .json_set(keys.daily_entry(f"{word}{n}"), {"content": f"{word} {n}"})
        .rpush(keys.daily(DAY), f"{word}{n}")
        .hset(keys.identity_profile(), {"mood": f"{word}-{n}"})
        .zadd(keys.memory_counts(), {word: n}),
        "memory.log",
    )


async def test_a_fork_holds_its_checkpoints_state_and_then_diverges(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    for n in range(120):  # the day's list outgrows the compact encoding
        await _write(store, keys, n, "before")
    checkpoint = await checkpoints.create(label="the branch point")
    at_checkpoint = await _contents(client, keys)
    for n in range(5):  # changed, created and deleted after it
        await _write(store, keys, n, "after")
    await store.apply(Mutation().delete(keys.daily_entry("before3")), "forget")
    source_now = await _contents(client, keys)

    target = Keyspace(keys.ns + "-fork")
    report, copied = await fork_namespace(client, checkpoints, checkpoint.id[:10], target)
    assert report.keys == len(copied) == len(at_checkpoint)
    assert await _contents(client, target) == at_checkpoint  # the checkpoint's, exactly
    assert await _contents(client, keys) == source_now  # the source is untouched
    fork_chain = await JournalChain(client, target).verify()
    assert fork_chain.ok and fork_chain.entries == 0, fork_chain.breaks

    # each lives its own life: a write to one is not seen by the other
    await _write(Store(client, target), target, 1, "fork-only")
    await _write(store, keys, 9, "source-only")
    fork_days = await client.lrange(target.daily(DAY), 0, -1)
    source_days = await client.lrange(keys.daily(DAY), 0, -1)
    assert b"fork-only1" in fork_days and b"source-only9" not in fork_days
    assert b"source-only9" in source_days and b"fork-only1" not in source_days
    verified = await JournalChain(client, target).verify()
    assert verified.ok and verified.start == "fork" and verified.entries == 1
    assert (await JournalChain(client, keys).verify()).ok
    # the fork's own checkpoints and rollbacks stay in the fork
    fork_cps = Checkpoints(client, target)
    mark = await fork_cps.create()
    await _write(Store(client, target), target, 2, "fork-only")
    await fork_cps.rollback_to(mark.id)
    assert (await JournalChain(client, target).verify()).ok
    assert await _contents(client, keys) == await _contents(client, keys)  # unchanged source

    # both record the fork
    seen = await forks_of(client, keys)
    assert [f["namespace"] for f in seen["forks"]] == [target.ns] and seen["source"] is None
    assert (await forks_of(client, target))["source"]["checkpoint"] == checkpoint.id


async def test_bad_forks_are_refused_and_change_nothing(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    await _write(store, keys, 1, "x")
    checkpoint = await checkpoints.create()
    before = await _contents(client, keys)
    occupied = Keyspace(keys.ns + "-busy")
    await client.set(occupied.longterm("someone"), "here")
    with pytest.raises(ConflictError, match="not empty"):
        await fork_namespace(client, checkpoints, checkpoint.id, occupied)
    assert await client.get(occupied.longterm("someone")) == b"here"
    with pytest.raises(InvalidOperationError, match="of its own"):
        await fork_namespace(client, checkpoints, checkpoint.id, keys)
    with pytest.raises(NotFoundError):
        await fork_namespace(client, checkpoints, "ZZZZZZZZZZ", Keyspace(keys.ns + "-new"))
    assert [k async for k in client.scan_iter(match=f"{keys.ns}-new:*")] == []
    assert await _contents(client, keys) == before
    assert await client.hlen(keys.forks()) == 0
    with pytest.raises(ValueError, match="pattern"):
        ForkArgs(id=checkpoint.id, to="bad name:with colon")


async def test_a_forked_agent_finds_its_memories(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    parts = Parts(settings.model_copy(update={"embedding": {"provider": "none"}}), client)
    await parts.ready()
    await DailyLog(parts.memory).log("the quarterly report goes to Ilse")
    checkpoint = await parts.checkpoints.create()
    await DailyLog(parts.memory).log("the quarterly report moved to Bruno")
    to = keys.ns + "-trial"
    report = await checkpoint_fork(parts, Caller("operator"), ForkArgs(id=checkpoint.id, to=to))
    forked = Parts(
        settings.model_copy(update={"namespace": to, "embedding": {"provider": "none"}}), client
    )
    await forked.ready()
    found = [h.content for h in await forked.search.search("quarterly report", limit=5)]
    assert found == ["the quarterly report goes to Ilse"]
    assert report["keys"] > 0 and report["seconds"] >= 0


def test_the_cli_forks_and_lists_forks(cli_env: dict[str, str], namespace: str) -> None:
    assert invoke_cli(cli_env, "memory", "log", "a note to branch from").returncode == 0
    checkpoint = json.loads(invoke_cli(cli_env, "checkpoint", "create", "--json").stdout)["id"]
    to = namespace + "-cli"
    made = invoke_cli(cli_env, "checkpoint", "fork", checkpoint, "--to", to, "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    report = json.loads(made.stdout)
    assert report["namespace"] == to and report["keys"] >= 2 and "seconds" in report
    again = invoke_cli(cli_env, "checkpoint", "fork", checkpoint, "--to", to)
    assert again.returncode == 1 and "not empty" in again.stdout + again.stderr
    listed = json.loads(invoke_cli(cli_env, "checkpoint", "forks", "--json").stdout)
    assert [f["namespace"] for f in listed["forks"]] == [to]
    forked = {**cli_env, "AETHER_NAMESPACE": to}
    day = json.loads(invoke_cli(forked, "memory", "day", "--json").stdout)
    assert [m["content"] for m in day] == ["a note to branch from"]
    assert invoke_cli(forked, "journal", "verify").returncode == 0

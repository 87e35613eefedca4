"""The PostgreSQL archive: journal + base snapshots, restore into an empty Redis."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from redis.asyncio import Redis

from aether.checkpoints.archive import Archive, open_archive
from aether.checkpoints.archive_schema import MIGRATIONS, migrate
from aether.checkpoints.chain import JournalChain
from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.errors import AmbiguousIdError, ArchiveError, NotFoundError
from aether.keys import Keyspace
from aether.store.client import connect
from aether.store.state import Mutation, Store
from tests.conftest import PG_DSN, dump_state, embedded_server
from tests.test_journal_property import _apply_all, _ops


@pytest.fixture(scope="module")
def second_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A second, empty embedded Redis: the machine a namespace is restored onto."""
    yield from embedded_server(tmp_path_factory, "aether-restore")


@pytest.fixture
async def pg() -> AsyncIterator[asyncpg.Connection]:
    async with open_archive(PG_DSN) as conn:
        yield conn


@pytest.fixture
async def target(second_home: Path, namespace: str) -> AsyncIterator[Redis]:
    c = await connect(Settings(home=second_home, namespace=namespace))
    yield c
    await c.aclose()


async def _log(store: Store, keys: Keyspace, eid: str, text: str) -> None:
    await store.apply(
        Mutation()
        .json_set(keys.daily_entry(eid), {"content": text})
        .rpush(keys.daily(date(2026, 3, 1)), eid),
        "memory.log",
    )


async def _empty(client: Redis, keys: Keyspace) -> None:
    """Delete every key of the namespace, for the next restore into it."""
    for key in [k async for k in client.scan_iter(match=f"{keys.prefix}*")]:
        await client.delete(key)


async def test_migrations_are_idempotent(pg: asyncpg.Connection) -> None:
    assert await migrate(pg) == []
    versions = [
        r["version"] for r in await pg.fetch("SELECT version FROM aether_schema_migrations")
    ]
    assert sorted(versions) == [v for v, _ in MIGRATIONS]


async def test_restore_to_checkpoint_and_time_from_postgres_alone(
    store: Store,
    client: Redis,
    keys: Keyspace,
    pg: asyncpg.Connection,
    target: Redis,
    second_home: Path,
) -> None:
    cps = Checkpoints(client, keys)
    archive = Archive(pg, client, keys, snapshot_every=5)
    await _log(store, keys, "e0", "before the base snapshot")
    await store.apply(Mutation().hset(keys.identity_profile(), {"name": "Ada"}), "identity")
    first = await archive.sync()
    assert first.snapshot is None and first.entries == 2  # the first sync took a base snapshot
    for i in range(1, 4):
        await _log(store, keys, f"e{i}", f"entry {i}")
    cp = await cps.create(label="three more")
    at_cp = await dump_state(client, keys)
    await asyncio.sleep(0.01)
    between = datetime.now(UTC)
    await asyncio.sleep(0.01)
    await _log(store, keys, "late", "after the checkpoint")
    await store.apply(Mutation().delete(keys.daily_entry("e0")), "forget")
    now_state = await dump_state(client, keys)
    report = await archive.sync()
    assert report.entries == 5 and report.checkpoints == 1
    assert await client.get(keys.archive_cursor()) == report.cursor.encode()  # type: ignore[union-attr]

    restored = await Archive(pg, target, keys).restore(cp.id[:10])
    assert restored.keys_restored == 3  # profile, e0, the day list at the first snapshot
    assert await dump_state(target, keys) == at_cp
    # the checkpoint and its journal came back too: it can be rolled back to there
    assert [c.id for c in await Checkpoints(target, keys).list()] == [cp.id]
    # and the journal's chain goes on from the snapshot: the rebuilt namespace verifies
    assert (await Checkpoints(target, keys).resolve(cp.id)).chain == cp.chain or cp.chain == ""
    verified = await JournalChain(target, keys).verify()
    assert verified.ok and verified.start == "trim", verified.breaks

    # by time, into another empty namespace of the same archive
    await _empty(target, keys)
    await Archive(pg, target, keys).restore(between.isoformat())
    assert await dump_state(target, keys) == at_cp
    await _empty(target, keys)
    await Archive(pg, target, keys).restore(datetime.now(UTC).isoformat())
    assert await dump_state(target, keys) == now_state
    assert (await JournalChain(target, keys).verify()).ok


async def test_entries_written_while_no_archive_followed_are_never_replayed(
    store: Store, client: Redis, keys: Keyspace, pg: asyncpg.Connection, target: Redis
) -> None:
    archive = Archive(pg, client, keys)
    await _log(store, keys, "e0", "before any archive")
    assert b"f" not in (await client.xrevrange(keys.journal(), count=1))[0][1]  # keys only
    await archive.sync()
    await _log(store, keys, "e1", "followed")
    assert b"f" in (await client.xrevrange(keys.journal(), count=1))[0][1]  # values kept
    await archive.sync()
    followed_state = await dump_state(client, keys)
    await asyncio.sleep(0.01)
    followed = datetime.now(UTC)
    await asyncio.sleep(0.01)  # the next entry must not share the target's millisecond
    await client.delete(keys.archive_cursor())  # lost, e.g. deleted by hand
    await _log(store, keys, "e2", "while nothing followed")
    await asyncio.sleep(0.01)
    blind = datetime.now(UTC)  # between two entries that keep no values
    await asyncio.sleep(0.01)
    await _log(store, keys, "e3", "still nothing followed")
    report = await archive.sync()
    assert report.snapshot is not None  # a new base snapshot covers what cannot be replayed
    now_state = await dump_state(client, keys)
    with pytest.raises(ArchiveError, match="no archive followed"):
        await Archive(pg, target, keys).restore(blind.isoformat())
    assert [k async for k in target.scan_iter(match=f"{keys.prefix}*")] == []  # nothing done
    await Archive(pg, target, keys).restore(followed.isoformat())
    assert await dump_state(target, keys) == followed_state
    await _empty(target, keys)
    await Archive(pg, target, keys).restore(datetime.now(UTC).isoformat())
    assert await dump_state(target, keys) == now_state


async def test_restore_bad_input_changes_nothing(
    store: Store, client: Redis, keys: Keyspace, pg: asyncpg.Connection, target: Redis
) -> None:
    archive = Archive(pg, client, keys)
    await _log(store, keys, "e0", "x")
    cp = await Checkpoints(client, keys).create()
    await archive.sync()
    before = await dump_state(client, keys)
    with pytest.raises(ArchiveError, match="not empty"):
        await archive.restore(cp.id)  # the source namespace is not empty
    assert await dump_state(client, keys) == before
    with pytest.raises(NotFoundError):
        await Archive(pg, target, keys).restore("ZZZZZZZZZZ")
    with pytest.raises(ArchiveError, match="neither"):
        await Archive(pg, target, keys).restore("'; DROP TABLE x; --")
    with pytest.raises(ArchiveError, match="no base snapshot"):
        await Archive(pg, target, keys).restore("1999-01-01T00:00:00")
    assert [k async for k in target.scan_iter(match=f"{keys.prefix}*")] == []


async def test_ambiguous_archived_prefix(
    store: Store, client: Redis, keys: Keyspace, pg: asyncpg.Connection, target: Redis
) -> None:
    cps = Checkpoints(client, keys)
    a = await cps.create()
    await cps.create()
    await Archive(pg, client, keys).sync()
    with pytest.raises(AmbiguousIdError):
        await Archive(pg, target, keys).restore(a.id[:6])


async def test_prune_never_trims_what_the_archive_lacks(
    store: Store, client: Redis, keys: Keyspace, pg: asyncpg.Connection
) -> None:
    archive = Archive(pg, client, keys)
    await _log(store, keys, "e0", "x")
    await archive.sync()
    cursor = (await client.get(keys.archive_cursor())).decode()  # type: ignore[union-attr]
    cps = Checkpoints(client, keys, keep=1)
    for i in range(3):
        await _log(store, keys, f"e{i + 1}", "y")
        await cps.create()
    first = (await client.xrange(keys.journal(), count=1))[0][0].decode()
    assert first == cursor  # entries after the archive cursor are all still there


async def test_unreachable_postgres_is_a_clear_error() -> None:
    with pytest.raises(ArchiveError, match="cannot reach"):
        async with open_archive("postgresql://postgres@127.0.0.1:1/test"):
            pass


@settings(
    max_examples=int(os.environ.get("AETHER_RESTORE_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(before=_ops(), after=_ops(), later=_ops())
def test_restore_is_identical_property(
    redis_home: Path,
    second_home: Path,
    before: list[tuple[str, Any]],
    after: list[tuple[str, Any]],
    later: list[tuple[str, Any]],
) -> None:
    async def scenario() -> None:
        ns = f"r{uuid.uuid4().hex[:10]}"
        keys = Keyspace(ns)
        source = await connect(Settings(home=redis_home, namespace=ns))
        dest = await connect(Settings(home=second_home, namespace=ns))
        try:
            async with open_archive(PG_DSN) as conn:
                store = Store(source, keys)
                archive = Archive(conn, source, keys, snapshot_every=7)
                await _apply_all(store, keys, before)
                await archive.sync()
                await _apply_all(store, keys, after)
                cp = await Checkpoints(source, keys, durable=False).create()
                image = await dump_state(source, keys)
                await _apply_all(store, keys, later)
                await archive.sync()
                await Archive(conn, dest, keys).restore(cp.id)
                assert await dump_state(dest, keys) == image
        finally:
            with contextlib.suppress(Exception):
                await source.aclose()
            await dest.aclose()

    asyncio.run(scenario())


async def test_a_restore_replays_a_rollback_that_settled_a_long_list(
    store: Store,
    client: Redis,
    keys: Keyspace,
    pg: asyncpg.Connection,
    target: Redis,
) -> None:
    """The rollback's unsettled list and its settling entry replay to the same digests."""
    archive = Archive(pg, client, keys, snapshot_every=1000)
    await archive.sync()  # the base snapshot: everything after it is replayed
    day = keys.daily(date(2026, 3, 2))
    await store.apply(Mutation().rpush(day, *(f"kept {i}" for i in range(1500))), "kept")
    cp = await Checkpoints(client, keys).create(label="long list")
    await store.apply(Mutation().rpush(day, *(f"late {i}" for i in range(700))), "late")
    await Checkpoints(client, keys, budget_ms=1).rollback_to(cp.id)
    journal = await client.xrange(keys.journal())
    assert any(b"settled" in fields for _, fields in journal)  # the list was settled
    await archive.sync()
    now_state = await dump_state(client, keys)
    await Archive(pg, target, keys).restore(datetime.now(UTC).isoformat())
    assert await dump_state(target, keys) == now_state
    verified = await JournalChain(target, keys).verify()
    assert verified.ok, verified.breaks
    assert await target.hget(keys.journal_digests(), day) == await client.hget(
        keys.journal_digests(), day
    )

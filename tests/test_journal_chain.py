"""The journal's hash chain: every tampering named, every legitimate change kept valid."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from datetime import date
from pathlib import Path

import pytest
from redis.asyncio import Redis

from aether.checkpoints.chain import (
    GENESIS,
    LONG_VALUE,
    JournalChain,
    Rechainer,
    entry_hash,
    entry_hash_holds,
)
from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.errors import ConfigError
from aether.keys import Keyspace
from aether.store.chain_head import HEAD_FIELD, head_of
from aether.store.signing import Signer
from aether.store.state import Mutation, Store
from aether.testing.model import ScriptedOpenAI
from tests.test_daemon import SlowModel, _cli, _env, _redis_cli, _start, model

__all__ = ["model"]  # the daemon's scripted model, a fixture shared with its tests

DAY = date(2026, 3, 1)


async def _log(store: Store, keys: Keyspace, eid: str, text: str) -> None:
    await store.apply(
        Mutation()
        .json_set(keys.daily_entry(eid), {"content": text})
        .rpush(keys.daily(DAY), eid)
        .hset(keys.identity_profile(), {"last": eid}),
        "memory.log",
    )


async def _history(store: Store, keys: Keyspace, n: int = 6) -> None:
    for i in range(n):
        await _log(store, keys, f"e{i}", f"observation {i}")


def _key_file(where: Path) -> Path:
    """A signing key, random, readable by its owner only."""
    key_file = where / "journal.key"
    key_file.write_bytes(os.urandom(32))
    key_file.chmod(0o600)
    return key_file


def _kinds(report: object) -> list[tuple[str, str | None, str | None]]:
    return [(b.kind, b.entry, b.key) for b in report.breaks]  # type: ignore[attr-defined]


async def _entries(client: Redis, keys: Keyspace) -> list[tuple[str, dict[bytes, bytes]]]:
    return [(i.decode(), dict(f)) for i, f in await client.xrange(keys.journal())]


async def test_a_clean_journal_verifies_and_each_entry_links_to_the_last(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    await _history(store, keys)
    report = await JournalChain(client, keys).verify()
    assert report.ok, report.breaks
    assert report.entries == 6 and report.keys == 8  # 6 entries, the day's list, the profile
    entries = await _entries(client, keys)
    assert entries[0][1][b"p"].decode() == GENESIS
    for (_, before), (_, after) in itertools.pairwise(entries):
        assert after[b"p"] == before[b"h"]
    for _, fields in entries:
        assert entry_hash(fields[b"p"].decode(), fields) == fields[b"h"].decode()
    head = await client.hget(keys.journal_digests(), HEAD_FIELD)
    assert head == f"{entries[-1][0]} {entries[-1][1][b'h'].decode()}".encode()
    assert not await client.exists(keys.journal_legacy_head())


async def test_a_head_kept_by_an_older_library_is_read_then_moved_by_the_next_write(
    client: Redis, keys: Keyspace, tmp_path: Path
) -> None:
    signer = Signer.from_file(_key_file(tmp_path))
    store = Store(client, keys, "agent", signer=signer)
    await _history(store, keys, 3)
    head = await client.hget(keys.journal_digests(), HEAD_FIELD)
    assert head is not None
    await client.hdel(keys.journal_digests(), HEAD_FIELD)
    await client.set(keys.journal_legacy_head(), head)  # as library 24 left it
    chain = JournalChain(client, keys, signer)
    assert (await chain.verify()).ok  # the signature names the head the old key holds
    assert await chain.head() == head_of(head)
    await chain.sign()  # signing reads the old key too
    assert (await chain.verify()).ok
    await _log(store, keys, "e9", "written after the upgrade")
    assert not await client.exists(keys.journal_legacy_head())
    report = await chain.verify()
    assert report.ok, report.breaks
    assert report.signed
    entries = await _entries(client, keys)
    assert entries[-1][1][b"p"] == head_of(head)[1].encode()  # type: ignore[index]
    assert await chain.head() == (entries[-1][0], entries[-1][1][b"h"].decode())


async def test_an_out_of_band_edit_of_a_state_key_is_named(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    await _history(store, keys)
    await client.execute_command("JSON.SET", keys.daily_entry("e2"), "$.content", '"forged memory"')
    await client.hset(keys.identity_profile(), "name", "Mallory")
    await client.set(keys.longterm("planted"), "x")
    await client.delete(keys.daily_entry("e4"))
    report = await JournalChain(client, keys).verify()
    assert sorted((k, key) for k, _, key in _kinds(report)) == sorted(
        [
            ("state-edited", keys.daily_entry("e2")),
            ("state-edited", keys.identity_profile()),
            ("state-unjournaled", keys.longterm("planted")),
            ("state-deleted", keys.daily_entry("e4")),
        ]
    )


async def test_a_deleted_entry_in_the_middle_breaks_the_chain_at_its_successor(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    await _history(store, keys)
    entries = await _entries(client, keys)
    await client.xdel(keys.journal(), entries[2][0])
    report = await JournalChain(client, keys).verify()
    assert ("chain-broken", entries[3][0], None) in _kinds(report)


async def test_a_truncated_journal_is_found_at_its_end_and_at_its_start(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    await _history(store, keys)
    entries = await _entries(client, keys)
    await client.xdel(keys.journal(), entries[-1][0])
    tail = await JournalChain(client, keys).verify()
    assert next(k for k, _, _ in _kinds(tail)) == "truncated"
    await client.xdel(keys.journal(), entries[0][0])
    head = await JournalChain(client, keys).verify()
    assert ("truncated", entries[1][0], None) in _kinds(head)


async def test_reordered_entries_break_the_chain(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    await _history(store, keys, 4)
    entries = await _entries(client, keys)
    await client.delete(keys.journal())
    order = [entries[0], entries[2], entries[1], entries[3]]
    for n, (_, fields) in enumerate(order, start=1):  # the ids in order, the entries not
        await client.xadd(keys.journal(), fields, id=f"{n}-0")  # type: ignore[arg-type]
    await client.hset(keys.journal_digests(), HEAD_FIELD, f"4-0 {entries[3][1][b'h'].decode()}")
    report = await JournalChain(client, keys).verify()
    assert {k for k, _, _ in _kinds(report)} == {"chain-broken"}
    assert [e for _, e, _ in _kinds(report)] == ["2-0", "3-0", "4-0"]


async def test_a_forged_entry_is_found_and_a_recomputed_one_only_with_a_key(
    store: Store, client: Redis, keys: Keyspace, tmp_path: Path
) -> None:
    signer = Signer.from_file(_key_file(tmp_path))
    signed = Store(client, keys, "agent", signer=signer)
    await _history(signed, keys, 4)
    assert (await JournalChain(client, keys, signer).verify()).ok
    entries = await _entries(client, keys)
    victim_id, victim = entries[1]
    forged = {**victim, b"a": b"mallory"}
    await client.delete(keys.journal())
    for entry_id, fields in entries:
        await client.xadd(  # type: ignore[arg-type]
            keys.journal(), forged if entry_id == victim_id else fields, id=entry_id
        )
    found = await JournalChain(client, keys).verify()
    assert ("entry-forged", victim_id, None) in _kinds(found)
    # the forger recomputes every later hash and the head: only the key tells
    await client.delete(keys.journal())
    prev = GENESIS
    for entry_id, fields in entries:
        fields = forged if entry_id == victim_id else fields
        h = entry_hash(prev, fields)
        fields = {**fields, b"p": prev.encode(), b"h": h.encode()}
        await client.xadd(keys.journal(), fields, id=entry_id)  # type: ignore[arg-type]
        prev = h
    await client.hset(keys.journal_digests(), HEAD_FIELD, f"{entries[-1][0]} {prev}")
    assert (await JournalChain(client, keys).verify()).ok  # hashes alone cannot tell
    keyed = await JournalChain(client, keys, signer).verify()
    assert [k for k, _, _ in _kinds(keyed)] == ["unsigned-tail"]
    await client.hset(keys.journal_signature(), mapping={"id": entries[-1][0], "h": prev})
    assert [k for k, _, _ in _kinds(await JournalChain(client, keys, signer).verify())] == [
        "bad-signature"
    ]


async def test_rollback_undo_and_pruning_keep_the_chain_valid(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    await _history(store, keys, 3)
    cp = await checkpoints.create(label="three")
    assert cp.journal_pos and (await checkpoints.resolve(cp.id)).chain
    await _history(store, keys, 6)
    await checkpoints.rollback_to(cp.id)
    chain = JournalChain(client, keys)
    assert (await chain.verify()).ok
    await checkpoints.undo()
    assert (await chain.verify()).ok
    for n in range(3):
        await _log(store, keys, f"late{n}", "after the undo")
        await checkpoints.create(label=f"late {n}")
    await checkpoints.prune(keep=1)
    trimmed = await chain.verify()
    assert trimmed.ok and trimmed.start == "trim", trimmed.breaks
    latest = (await checkpoints.list())[0]
    since = await chain.verify(latest.journal_pos, latest.chain, latest.id)
    assert since.ok and since.entries == 0


async def test_long_values_are_hashed_by_their_digest_and_still_bind_the_entry(
    store: Store, checkpoints: Checkpoints, client: Redis, keys: Keyspace
) -> None:
    """An entry's long values (a big document's pre-image, a rollback step's inverses) are
    framed by their sha1 in its hash: the hash still covers every byte of them."""
    long_text = "x" * (LONG_VALUE * 3)
    cp = await checkpoints.create(label="before the long ones")
    for i in range(2):  # the second write's inverse is the first's long document
        await _log(store, keys, "big", f"{long_text} {i}")
    await _history(store, keys, 3)
    await checkpoints.rollback_to(cp.id)  # one entry with every inverse, far past LONG_VALUE
    entries = await _entries(client, keys)
    long_ones = [
        (i, f) for i, f in entries if any(len(v) > LONG_VALUE for n, v in f.items() if n != b"h")
    ]
    assert len(long_ones) >= 2
    for _, fields in entries:
        assert entry_hash(fields[b"p"].decode(), fields) == fields[b"h"].decode()
    assert (await JournalChain(client, keys).verify()).ok
    victim, fields = long_ones[-1]
    name = next(n for n, v in fields.items() if n != b"h" and len(v) > LONG_VALUE)
    edited = bytearray(fields[name])
    edited[len(edited) // 2] ^= 1  # one bit, deep inside the long value
    await client.delete(keys.journal())
    for entry_id, kept in entries:
        forged = {**kept, name: bytes(edited)} if entry_id == victim else kept
        await client.xadd(keys.journal(), forged, id=entry_id)  # type: ignore[arg-type]
    assert ("entry-forged", victim, None) in _kinds(await JournalChain(client, keys).verify())


def test_entries_hashed_before_long_values_were_digested_still_verify() -> None:
    """Library 22 hashed long values whole: those entries hold, their forgeries do not,
    and an erasure's re-chaining keeps them as they are."""
    prev = GENESIS
    fields = {b"a": b"agent", b"i": b"y" * (LONG_VALUE + 1), b"d": b"\x90"}
    framed = b"".join(b"%d:%s" % (len(v), v) for k, v in fields.items() for v in (k, v))
    legacy = hashlib.sha1(prev.encode() + framed, usedforsecurity=False).hexdigest()
    assert legacy != entry_hash(prev, fields)
    assert entry_hash_holds(prev, fields, legacy)
    assert entry_hash_holds(prev, fields, entry_hash(prev, fields))
    assert not entry_hash_holds(prev, {**fields, b"a": b"mallory"}, legacy)
    assert not entry_hash_holds(prev, {**fields, b"i": b"z" * (LONG_VALUE + 1)}, legacy)
    kept = {**fields, b"p": prev.encode(), b"h": legacy.encode()}
    rechainer = Rechainer(None, "test")  # type: ignore[arg-type]
    assert rechainer.rechained_fields(kept) is kept and rechainer.rechained == 0
    assert rechainer.prev == legacy


def test_a_key_readable_by_others_or_too_short_is_refused(tmp_path: Path) -> None:
    loose = tmp_path / "loose.key"
    loose.write_bytes(os.urandom(32))
    loose.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        Signer.from_file(loose)
    short = tmp_path / "short.key"
    short.write_bytes(b"tiny")
    short.chmod(0o600)
    with pytest.raises(ConfigError, match="at least 16 bytes"):
        Signer.from_file(short)
    with pytest.raises(ConfigError, match=r"missing\.key"):
        Signer.from_file(tmp_path / "missing.key")


# ------------------------------------------------- through the CLI, with the daemon up


def test_the_chain_through_the_cli_while_the_daemon_runs(
    cli_env: dict[str, str],
    namespace: str,
    tmp_path: Path,
    model: tuple[ScriptedOpenAI, SlowModel],
) -> None:
    server, _ = model
    key_file = _key_file(tmp_path)
    env = {**_env(cli_env, server), "AETHER_JOURNAL__KEY": str(key_file)}
    proc = _start(env, tmp_path / "daemon.log")
    try:
        assert _cli(env, "send", "hello there").returncode == 0  # the daemon's own writes
        assert _cli(env, "memory", "log", "the staging key is S-1").returncode == 0
        checkpoint = json.loads(_cli(env, "checkpoint", "create", "--json").stdout)["id"]
        assert _cli(env, "memory", "log", "a later note").returncode == 0
        clean = _cli(env, "journal", "verify", "--json")
        assert clean.returncode == 0, clean.stdout + clean.stderr
        report = json.loads(clean.stdout)
        assert report["ok"] and report["signed"] and report["entries"] >= 4
        since = json.loads(_cli(env, "journal", "verify", "--from", checkpoint, "--json").stdout)
        assert since["ok"] and since["entries"] >= 1 and since["start"] == checkpoint

        # a forger with redis-cli edits a memory: named, exit 1, whatever the daemon does
        entry = next(
            k
            for k in _redis_cli(env, "KEYS", f"{namespace}:daily:entry:*").split()
            if "S-1" in _redis_cli(env, "JSON.GET", k)
        )
        original = _redis_cli(env, "JSON.GET", entry)
        _redis_cli(env, "JSON.SET", entry, "$.content", '"the production key is P-9"')
        broken = _cli(env, "journal", "verify")
        assert broken.returncode == 1
        assert "state-edited" in broken.stdout and entry in broken.stdout
        # a rollback does not hide it (the edit is older than the checkpoint) ...
        assert _cli(env, "checkpoint", "rollback", checkpoint, "--yes").returncode == 0
        after = json.loads(_cli(env, "journal", "verify", "--json").stdout)
        assert [(b["kind"], b["key"]) for b in after["breaks"]] == [("state-edited", entry)]
        # ... putting the content back does; and a verifier without the key still checks hashes
        _redis_cli(env, "JSON.SET", entry, "$", original)
        assert _cli(env, "journal", "verify").returncode == 0
        unkeyed = {k: v for k, v in env.items() if k != "AETHER_JOURNAL__KEY"}
        plain = json.loads(_cli(unkeyed, "journal", "verify", "--json").stdout)
        assert plain["ok"] and not plain["signed"]
        assert _cli(env, "journal", "verify", "--from", "nosuchcp").returncode != 0
    finally:
        proc.terminate()
        proc.wait(30)


async def test_a_namespace_from_before_the_chain_is_adopted_at_start(
    settings: Settings, client: Redis
) -> None:
    from aether.operations import Parts

    parts = Parts(settings.model_copy(update={"embedding": {"provider": "none"}}), client)
    keys = parts.keys
    # what an older release left: state keys and journal entries without the chain
    await client.execute_command("JSON.SET", keys.daily_entry("old1"), "$", '{"content": "x"}')
    await client.rpush(keys.daily(DAY), "old1")
    await client.xadd(keys.journal(), {"a": "cli", "r": "memory.log", "k": "\x90", "i": "\x90"})
    await parts.ready()  # the daemon's start: the state's baseline recorded once
    assert await parts.journal.adopt() == 0
    await _log(parts.memory.store, keys, "new1", "written with the chain")
    report = await parts.journal.verify()
    assert report.ok and report.legacy == 1 and report.entries >= 1, report.breaks
    await client.execute_command("JSON.SET", keys.daily_entry("old1"), "$.content", '"y"')
    edited = await parts.journal.verify()
    assert [(b.kind, b.key) for b in edited.breaks] == [("state-edited", keys.daily_entry("old1"))]


async def test_a_rollback_of_a_long_list_settles_its_digest_in_later_steps(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    day = keys.daily(DAY)
    await store.apply(Mutation().rpush(day, *(f"kept {i}" for i in range(2500))), "kept")
    cp = await Checkpoints(client, keys).create(label="long list")
    for part in range(4):
        await store.apply(Mutation().rpush(day, *(f"late {part}.{i}" for i in range(500))), "late")
    chain = JournalChain(client, keys)
    # a rollback made in steps of no budget (one op, or one page of settling, a step: a
    # budget of 1 ms let a fast machine apply and settle in one step), stopped once its ops
    # are applied
    cps = Checkpoints(client, keys, budget_ms=0)
    lock = cps._admin_lock()
    assert await lock.acquire()
    pre = await cps.create(label="pre", prune=False)
    assert await cps._begin(lock, await cps.resolve(cp.id), pre, "cli", "rollback")
    while await client.hget(keys.journal_digests(), day) != b"~":
        assert (await cps._step(lock, 0))[0] == b"more"
    # unsettled while the rollback holds writes: not a break
    assert (await chain.verify()).ok
    hold = await client.hgetall(keys.write_hold())
    await client.delete(keys.write_hold())
    assert ("state-unsettled", None, day) in _kinds(await chain.verify())
    await client.hset(keys.write_hold(), mapping=hold)  # type: ignore[arg-type]
    await lock.release()
    finished = await cps.finish_interrupted()
    assert finished is not None and finished.entries_undone == 4
    assert await client.llen(day) == 2500
    report = await chain.verify()
    assert report.ok, report.breaks
    entries = await _entries(client, keys)
    settles = [f for _, f in entries if b"settled" in f]
    assert settles and all(f[b"i"] == b"\x90" for f in settles)  # no ops: digests only
    # the settled digest is the list's own: an edit after it is named
    await client.lset(day, 7, "edited")
    assert ("state-edited", None, day) in _kinds(await chain.verify())

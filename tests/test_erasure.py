"""Erase means gone: a subject removed from every store, history included (issue 35).

A unique text is planted in every tier, the embedding cache, the Qdrant mirror and the
PostgreSQL archive; checkpoints are taken before and after; then it is erased and looked
for everywhere: every key's DUMP, every file of the embedded Redis, a ``pg_dump`` of the
archive, the Qdrant collection. Rollback and undo across the erasure leave it gone and
restore the rest exactly.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import uuid
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from redis.asyncio import Redis

from aether.checkpoints.archive import Archive, open_archive
from aether.config import Settings
from aether.errors import (
    BusyError,
    ConcurrentAdminError,
    ErasureStuckError,
    InvalidOperationError,
    NotFoundError,
)
from aether.keys import Keyspace
from aether.memory.knowledge.graph import EntityIn, RelationIn
from aether.memory.storage.records import record_key
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.memory.tiers.episodes import Episodes
from aether.memory.tiers.longterm import LongTermMemory
from aether.memory.tiers.scratchpad import Scratchpads
from aether.memory.tiers.toolcache import ToolSchemaCache
from aether.operations import Caller, Parts
from aether.operations.erasure import EraseArgs, VerifyArgs, erase, erase_verify
from aether.store.persistence import files_holding
from aether.store.redaction import TOMBSTONE, Needle, Redactor, Taint
from aether.store.state import Mutation, Store
from aether.store.values import read_kinds, read_screened_documents, read_screened_values
from aether.testing.image import state_image
from aether.testing.model import ScriptedOpenAI
from tests.conftest import PG_DSN, invoke_cli


def mark() -> str:
    return f"Quarzvelt-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def model() -> AsyncIterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


@pytest.fixture
async def parts(settings: Settings, client: Redis, tmp_path: Path, model: ScriptedOpenAI) -> Parts:
    """A namespace's parts with an archive, a Qdrant mirror and an embedder (and its cache)."""
    wired = Parts(erasure_settings(settings, model.base_url, tmp_path), client, actor="test")
    await wired.ready()
    return wired


def erasure_settings(settings: Settings, base_url: str, tmp_path: Path) -> Settings:
    return settings.model_copy(
        update={
            "postgres_dsn": SecretStr(PG_DSN),
            "qdrant_path": tmp_path / "qdrant",
            "embedding": settings.embedding.model_copy(
                update={"provider": "openai", "model": "bow", "base_url": base_url, "dims": 64}
            ),
        }
    )


async def plant(parts: Parts, text: str) -> None:
    """The text in every tier (and, through the embedder, the embedding cache)."""
    layer = parts.memory
    await DailyLog(layer).log(f"my doctor said {text} about my knee", source="user")
    await LongTermMemory(layer).add(f"The user's condition is {text}, diagnosed in 2019")
    beliefs = parts.beliefs()
    await beliefs.remember(f"I have {text} since 2019")
    chats = ChatSessions(layer)
    await chats.append("s1", "user", f"please keep {text} between us", title=f"about {text}")
    await Episodes(layer).record("s1", "memory_search", {"query": text}, f"found {text}", True, 3.0)
    await Scratchpads(layer).set("pad1", f"remember {text}")
    await ToolSchemaCache(layer).set("s1", [{"name": "x", "description": f"about {text}"}])
    zed = EntityIn("person", "Doctor Zed", aliases=[text])
    alice = EntityIn("person", "Alice Smith")
    await parts.graph.record([zed, alice], [RelationIn("treats", zed.id, alice.id)])
    await parts.tasks.add(f"book a follow-up about {text}")


async def plant_unrelated(parts: Parts) -> None:
    layer = parts.memory
    await DailyLog(layer).log("the build now uses Python 3.11", source="user")
    await LongTermMemory(layer).add("The user prefers short answers")
    chats = ChatSessions(layer)
    await chats.append("s1", "assistant", "noted: short answers from now on")
    await Episodes(layer).record("s1", "memory_note", {"text": "short"}, "ok", True, 2.0)
    bob = EntityIn("person", "Bob Stone")
    carol = EntityIn("person", "Carol Stone")
    await parts.graph.record([bob, carol], [RelationIn("sibling_of", bob.id, carol.id)])
    await parts.tasks.add("renew the TLS certificate")


async def dumps_holding(client: Redis, keys: Keyspace, text: str) -> list[str]:
    low = text.lower().encode()
    found = []
    async for key in client.scan_iter(match=keys.every_key, count=1000):
        dump = await client.dump(key)
        if dump is not None and low in dump.lower():
            found.append(key.decode())
    return found


def files_holding_text(folder: Path, text: str) -> list[str]:
    low = text.lower().encode()
    return [str(p) for p in folder.rglob("*") if p.is_file() and low in p.read_bytes().lower()]


def pg_dump_text() -> str:
    return subprocess.run(
        ["pg_dump", "--data-only", "-t", "aether_*", PG_DSN],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


async def sync_archive(parts: Parts) -> None:
    async with open_archive(PG_DSN) as conn:
        await Archive(conn, parts.client, parts.keys, snapshot_every=3).sync()


async def test_an_erased_subject_is_gone_from_every_store_and_from_history(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    text = mark()
    await sync_archive(parts)  # the archive follows from the start: entries keep values
    await plant_unrelated(parts)
    before = await parts.checkpoints.create(label="before the subject")
    await plant(parts, text)
    await parts.memory.embed(f"what about {text}?")  # a query's vector is cached too
    await sync_archive(parts)
    planted = await parts.checkpoints.create(label="planted")
    await DailyLog(parts.memory).log("written between: the deploy is on Friday", source="user")
    await sync_archive(parts)  # a second base snapshot (every 3 entries) holds the text too
    assert await dumps_holding(client, keys, text)
    assert text.encode().hex() in pg_dump_text()
    mirror = parts.memory.mirror
    assert mirror is not None
    points_before = (await mirror.client.count(mirror.collection)).count
    caller = Caller(actor="operator")

    plan = await erase(parts, caller, EraseArgs(text=text.upper(), dry_run=True))
    tiers = set(plan["items"])
    assert {"daily", "longterm", "beliefs", "chat", "episodes", "graph", "tasks"} <= tiers
    assert await dumps_holding(client, keys, text)  # a dry run changes nothing

    relations = keys.relation("*")
    assert len([k async for k in client.scan_iter(match=relations)]) == 2
    unrelated_keys = {
        k: v
        for k, v in (await state_image(client, keys)).items()
        if text.lower().encode() not in (v if isinstance(v, bytes) else repr(v).encode()).lower()
    }
    report = await erase(parts, caller, EraseArgs(text=text))
    assert report["files"] == "clean"
    assert report["counts"]["state_removed"] >= 5 and report["counts"]["journal_entries"] > 0
    assert report["counts"]["archive_entries"] > 0 and report["counts"]["mirror_points"] >= 3

    # nowhere: no key's DUMP, no file of the embedded Redis, no archive row, no Qdrant point
    assert await dumps_holding(client, keys, text) == []
    data_dir = Path(text_of((await client.config_get("dir"))["dir"]))
    assert files_holding_text(data_dir, text) == []
    dump = pg_dump_text()
    assert text not in dump and text.encode().hex() not in dump
    points, _ = await mirror.client.scroll(mirror.collection, limit=100, with_payload=True)
    assert 0 < len(points) < points_before
    for point in points:  # every point left is a memory that still exists
        payload = point.payload or {}
        assert await client.exists(record_key(keys, payload["kind"], payload["id"]))
    verified = await erase_verify(parts, caller, VerifyArgs(text=text))
    assert verified.clean, verified.found
    # history was rewritten, and the chain says so: re-chained, recorded, verifiable
    chain = await parts.journal.verify()
    assert chain.ok, chain.breaks
    assert [r["why"] for r in chain.redactions] == [f"erasure {report['id']}"]
    assert chain.redactions[0]["entries"] > 0

    # the relation naming the erased entity went with it; the unrelated one stays
    assert len([k async for k in client.scan_iter(match=relations)]) == 1
    # the rest is intact, and searchable
    assert await deploy_found(parts)
    assert {t.title for t in await parts.tasks.list()} == {"renew the TLS certificate"}
    after_image = await state_image(client, keys)
    # of the keys that never held the text, only counters and what belonged to an erased
    # item changed: gone with it, or an adjacency set that lost the erased entity
    changed = {k.decode() for k in unrelated_keys if after_image.get(k) != unrelated_keys[k]}
    counters = {keys.memory_counts(), keys.memory_topics()}
    adjacency = (keys.relations_in(""), keys.relations_out(""))
    assert counters <= changed
    for key in changed - counters:
        assert key.encode() not in after_image or key.startswith(adjacency), key
    assert any(b"Python 3.11" in repr(v).encode() for v in after_image.values())

    # no rollback brings it back; each restores the rest exactly
    now_image = await state_image(client, keys)
    for target in (planted, before):
        await parts.checkpoints.rollback_to(target.id)
        assert await dumps_holding(client, keys, text) == []
        assert not await deploy_found(parts)
        await parts.checkpoints.undo()
        assert await dumps_holding(client, keys, text) == []
        assert await state_image(client, keys) == now_image
    assert (await erase_verify(parts, caller, VerifyArgs(text=text))).clean
    assert (await parts.journal.verify()).ok  # and after the rollbacks and undos

    records = await parts.eraser().log()

    # the redacted archive still restores: the planted checkpoint, without the subject
    async with open_archive(PG_DSN) as conn:
        await Archive(conn, client, keys).sync()
        for key in [k async for k in client.scan_iter(match=keys.every_key)]:
            await client.delete(key)
        await Archive(conn, client, keys).restore(planted.id)
    assert await dumps_holding(client, keys, text) == []
    assert {t.title for t in await parts.tasks.list()} == {"renew the TLS certificate"}

    # the record keeps a salted hash, never the text
    assert records[0]["id"] == report["id"] and text not in json.dumps(records)
    from aether.checkpoints.erasure_model import salted_hash

    assert records[0]["text_hash"] == salted_hash(text.lower(), records[0]["salt"])


async def deploy_found(parts: Parts) -> bool:
    hits = await parts.search.search("deploy Friday")
    return any("deploy is on Friday" in hit.doc["content"] for hit in hits)


def text_of(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def test_rollback_to_before_the_erasure_restores_the_rest_byte_for_byte(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    text = mark()
    await plant_unrelated(parts)
    clean = await parts.checkpoints.create(label="clean")
    clean_image = await state_image(client, keys)
    await plant(parts, text)
    await parts.eraser("operator").erase(text)
    # back to before the subject was ever written: exactly the clean state
    await parts.checkpoints.rollback_to(clean.id)
    assert await state_image(client, keys) == clean_image


async def test_bad_input_changes_nothing(parts: Parts, client: Redis, keys: Keyspace) -> None:
    await plant_unrelated(parts)
    image = await state_image(client, keys)
    eraser = parts.eraser("operator")
    for bad in ("", "  ", "ab", "x" * 1001):
        with pytest.raises(InvalidOperationError):
            await eraser.erase(bad)
    with pytest.raises(InvalidOperationError):
        await eraser.erase("abc", "01ABCDEF")
    with pytest.raises(NotFoundError):
        await eraser.erase(item="01J0000000000000000000NONE")
    with pytest.raises(InvalidOperationError):
        await eraser.erase(item="*")
    # only punctuation: no token to match, so a clear error (and nothing goes)
    with pytest.raises(InvalidOperationError, match="no letters or digits"):
        await eraser.erase('*?[]\\"{}%$ -- \x00')
    # special characters around a word are text like any other: nothing matches
    report = await eraser.erase('*?[nowhere]\\"{}%$ -- \x00')
    assert report.counts["state_removed"] == 0
    # a second admin action at the same time is refused, and changes nothing
    lock = parts.checkpoints._admin_lock()
    assert await lock.acquire()
    try:
        with pytest.raises(ConcurrentAdminError):
            await eraser.erase("Python")
    finally:
        await lock.release()
    assert await state_image(client, keys) == image  # no state key changed


async def test_erasing_one_item_by_id(parts: Parts, client: Redis, keys: Keyspace) -> None:
    doomed = await DailyLog(parts.memory).log("a private note about the lawyer", source="user")
    kept = await DailyLog(parts.memory).log("a private note about the garden", source="user")
    plan = await parts.eraser().plan(item=doomed["id"])
    assert [i["key"] for i in plan.items["daily"]] == [keys.daily_entry(doomed["id"])]
    await parts.eraser().erase(item=doomed["id"])
    assert not await client.exists(keys.daily_entry(doomed["id"]))
    assert not await client.exists(keys.vector(keys.daily_entry(doomed["id"])))
    assert await client.exists(keys.daily_entry(kept["id"]))
    # its text is no longer in the embedding cache
    assert await dumps_holding(client, keys, "about the lawyer") == []
    counts = await client.zscore(keys.memory_counts(), "daily")
    assert counts == 1


async def test_a_writer_during_the_erasure_loses_no_acknowledged_write(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    text = mark()
    for i in range(30):
        await DailyLog(parts.memory).log(f"filler {i} about {text if i % 3 == 0 else 'tea'}")
    written: list[str] = []
    stop = asyncio.Event()

    async def writer() -> None:
        i = 0
        while not stop.is_set():
            entry = await DailyLog(parts.memory).log(f"concurrent write {i}", source="user")
            written.append(entry["id"])
            i += 1
            await asyncio.sleep(0.005)

    task = asyncio.create_task(writer())
    await asyncio.sleep(0.05)
    await parts.eraser("operator").erase(text)
    await asyncio.sleep(0.05)
    stop.set()
    await task
    assert len(written) > 2
    for entry_id in written:
        assert await client.exists(keys.daily_entry(entry_id)), entry_id
    assert await dumps_holding(client, keys, text) == []


async def test_list_elements_become_tombstones_that_readers_skip(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    text = mark()
    episodes = Episodes(parts.memory)
    await episodes.record("s2", "bash", {"cmd": "ls"}, "a.txt", True, 1.0)
    await episodes.record("s2", "bash", {"cmd": f"grep {text}"}, "", True, 1.0)
    await episodes.record("s2", "bash", {"cmd": "pwd"}, "/w", True, 1.0)
    await parts.eraser().erase(text)
    raw = await client.lrange(keys.episode("s2"), 0, -1)
    assert raw[1] == TOMBSTONE and len(raw) == 3
    assert [e["arguments"] for e in await episodes.list("s2")] == [{"cmd": "ls"}, {"cmd": "pwd"}]


async def test_an_interrupted_erasure_is_finished_by_the_next_one(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    text = mark()
    await DailyLog(parts.memory).log(f"note about {text}", source="user")
    eraser = parts.eraser("operator")
    # a run that set its hold, then its process died (its lock expired)
    async with eraser._lock() as lock:
        await eraser._begin(lock, Needle(text), None, "5a17")
    assert await client.exists(keys.write_hold())
    with pytest.raises(BusyError, match="erasure is in progress"):
        await Store(client, keys, write_wait_s=0.2).apply(
            Mutation().hset(keys.user_profile(), {"n": "1"}), "t"
        )
    with pytest.raises(ConcurrentAdminError, match="erasure"):
        await parts.checkpoints.rollback_to((await parts.checkpoints.list())[0].id)
    async with open_archive(PG_DSN) as conn:  # nothing is archived while it holds
        assert (await Archive(conn, client, keys).sync()).entries == 0
        rows = await conn.fetchval("SELECT count(*) FROM aether_journal WHERE ns = $1", keys.ns)
        assert rows == 0
    report = await eraser.resume()
    assert report is not None and report.resumed
    assert not await client.exists(keys.write_hold())
    assert await dumps_holding(client, keys, text) == []


async def test_a_hold_keeps_the_text_sealed_and_a_lost_key_asks_for_the_text(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    text = mark()
    await DailyLog(parts.memory).log(f"the vault code is {text}", source="user")
    eraser = parts.eraser("operator")
    async with eraser._lock() as lock:
        hold, _ = await eraser._begin(lock, Needle(text), None, "5a17")
    raw = await client.hgetall(keys.write_hold())
    assert text.lower().encode() not in b" ".join(raw.values()).lower()
    holding = await dumps_holding(client, keys, text)
    assert holding and not [k for k in holding if ":lock:" in k or ":tmp:" in k]
    key_file = eraser.key_dir / f"{keys.ns}.{hold['id']}.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    key_file.unlink()  # the erasure ran elsewhere, or the file went
    with pytest.raises(ErasureStuckError, match="aether erase resume"):
        await eraser.resume()
    with pytest.raises(ErasureStuckError, match="does not match"):
        await eraser.resume("some other text")
    assert await eraser.interrupted()
    report = await eraser.resume(text)
    assert report is not None and report.resumed and report.files == "clean"
    assert not await client.exists(keys.write_hold(), keys.erase_scratch("taint"))
    assert await dumps_holding(client, keys, text) == []
    assert not key_file.exists()


def test_needle_matching() -> None:
    needle = Needle("Ada")
    assert needle.in_value(b"I met ADA yesterday")
    assert needle.in_value('{"x": "ada lovelace"}')
    assert not needle.in_value(b"01J9ADA0000000000000000000")  # inside a ULID
    assert not needle.in_value(b"deadbeefada0123456789abcdef")  # inside a hex digest
    assert not needle.in_value(b"\xff\xfeada\x00")  # binary (a vector) never matches
    quoted = Needle('say "hi"')
    assert quoted.in_value(json.dumps({"t": 'they say "hi" a lot'}))
    trailer = b"\x0b\x00" + b"\xc3" * 8  # RDB version and CRC: not part of the value
    assert not needle.maybe_in(b"\x00\x05hello" + trailer)
    assert needle.maybe_in(b"\x00\xc3\x05\x0bzzz" + trailer)  # an LZF string: decode it
    assert needle.maybe_in(b"\x00\x05I met Ada" + trailer)
    accent = Needle("Zoë")
    assert accent.in_value("ZOË is here") and accent.in_value(json.dumps("zoë"))


def test_the_cli_erases_verifies_and_logs(cli_env: dict[str, str]) -> None:
    text = mark()
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    for line in (f"my therapist {text} says rest", "the build is green"):
        assert invoke_cli(env, "memory", "log", line).returncode == 0
    held = invoke_cli(env, "erase", "--verify", text)
    assert held.returncode == 1 and "redis" in held.stdout
    plan = invoke_cli(env, "erase", text, "--dry-run", "--json")
    assert plan.returncode == 0 and json.loads(plan.stdout)["items"]["daily"]
    places = {p["place"] for p in json.loads(plan.stdout)["elsewhere"]}
    assert any("appendonly" in p for p in places), places  # and Redis's files
    refused = invoke_cli(env, "erase", text)  # no terminal and no --yes: nothing changes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert invoke_cli(env, "erase", "--verify", text).returncode == 1
    usage = invoke_cli(env, "erase", text, "--log")
    assert usage.returncode == 64
    too_short = invoke_cli(env, "erase", "ab", "--yes")
    assert too_short.returncode == 1 and "at least 3" in too_short.stderr
    done = invoke_cli(env, "erase", text, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["files"] == "clean" and report["counts"]["state_removed"] == 1
    clean = invoke_cli(env, "erase", "--verify", text)
    assert clean.returncode == 0 and "not found anywhere" in clean.stdout
    log = json.loads(invoke_cli(env, "erase", "--log", "--json").stdout)
    assert log[0]["id"] == report["id"] and text not in json.dumps(log)
    found = invoke_cli(env, "memory", "search", "build", "--json")
    assert "the build is green" in found.stdout
    assert invoke_cli(env, "erase", "--resume").stdout.strip() == "no erasure was interrupted"


def test_erase_subcommands_do_what_the_flags_did(cli_env: dict[str, str]) -> None:
    """run, preview, verify, log and resume; the one-command form answers alike (until 0.3.0)."""
    text = mark()
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    assert invoke_cli(env, "memory", "log", f"the locker code of {text} is 4410").returncode == 0
    new_plan = json.loads(invoke_cli(env, "erase", "preview", text, "--json").stdout)
    old_plan = json.loads(invoke_cli(env, "erase", text, "--dry-run", "--json").stdout)
    assert new_plan["counts"] == old_plan["counts"] and new_plan["items"]["daily"]
    assert invoke_cli(env, "erase", "verify", text).returncode == 1
    assert invoke_cli(env, "erase", "run").returncode == 64  # TEXT or --id
    refused = invoke_cli(env, "erase", "run", text)  # no terminal, no --yes: nothing changes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    done = invoke_cli(env, "erase", "run", text, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert invoke_cli(env, "erase", "verify", text).returncode == 0
    assert invoke_cli(env, "erase", "--verify", text).returncode == 0
    new_log = json.loads(invoke_cli(env, "erase", "log", "--json").stdout)
    assert new_log == json.loads(invoke_cli(env, "erase", "--log", "--json").stdout)
    assert new_log[0]["id"] == json.loads(done.stdout)["id"]
    resumed = invoke_cli(env, "erase", "resume").stdout.strip()
    assert resumed == "no erasure was interrupted"
    shown = invoke_cli(env, "erase", "--help").stdout
    assert "run" in shown and "--dry-run" in shown and "read until aether 0.3.0" in shown


async def test_other_namespaces_are_untouched(
    parts: Parts, client: Redis, keys: Keyspace, settings: Settings
) -> None:
    text = mark()
    other = Parts(settings.model_copy(update={"namespace": keys.ns + "b"}), client)
    await other.ready()
    await DailyLog(other.memory).log(f"the other agent also knows {text}", source="user")
    other_image = await state_image(client, other.keys)
    await DailyLog(parts.memory).log(f"this agent knows {text}", source="user")
    report = await parts.eraser().erase(text)
    assert report.files.startswith("still holding")  # the other namespace's copy is in the AOF
    assert await dumps_holding(client, keys, text) == []
    assert await state_image(client, other.keys) == other_image
    assert await dumps_holding(client, other.keys, text)


SCREENED = [
    {"content": "invoice INV-7731 was paid", "tags": []},
    {"content": "invoice inv 7731 was paid"},
    {"content": "INV\n7731 on two lines"},  # stored as an escape: INV\\n7731
    {"content": 'he said "INV-7731"'},
    {"content": "Zoë signed it", "source": "user"},
    {"content": "nothing here", "meta": {"ref": "inv-7731"}},
    {"content": "nothing here", "tags": ["INV-7731"]},
    {"content": "invoice 7731 alone"},
    {"content": "INV-7731B is another one"},
    {"content": "plain ascii, nothing to see", "score": 0.5, "timestamp": 1700000000.25},
]


@pytest.mark.parametrize("subject", ["INV-7731", "Zoe", "zoë", "7731"])
async def test_a_document_the_scan_does_not_decode_cannot_hold_the_text(
    client: Redis, keys: Keyspace, subject: str
) -> None:
    """The scan reads each document's raw text and decodes only those that may hold the
    text (``Redactor.may_hold_document``): one it skips never holds it, however the text
    is spelt or escaped, and the screen does skip documents that plainly do not."""
    redactor = Redactor(client, keys, Needle(subject), Taint())
    names = [keys.daily_entry(f"screen{i}") for i in range(len(SCREENED))]
    for name, doc in zip(names, SCREENED, strict=True):
        await client.execute_command("JSON.SET", name, "$", json.dumps(doc))
    kinds = await read_kinds(client, names)
    screened = await read_screened_values(client, names, kinds, redactor.may_hold_document)
    for doc, value in zip(SCREENED, screened, strict=True):
        if redactor.document_holds(doc):
            assert value is not None and value.content == doc, (subject, doc)
    assert any(value is None for value in screened)
    assert Redactor(client, keys, None, Taint()).may_hold_document(b'{"content":"x"}') is False


async def test_documents_read_without_their_type_first_read_as_any_key(
    client: Redis, keys: Keyspace
) -> None:
    """A key named like a document but of another type, or gone, reads as read_values
    reads it; a document reads as itself, screened alike."""
    needle = Needle("INV-7731")
    names = [keys.daily_entry(f"guess{i}") for i in range(5)]
    await client.execute_command("JSON.SET", names[0], "$", json.dumps({"content": "INV-7731"}))
    await client.execute_command("JSON.SET", names[1], "$", json.dumps({"content": "plain"}))
    await client.hset(names[2], mapping={"content": "INV-7731 in a hash"})
    await client.rpush(names[3], "a", "b")
    other = keys.chat_session("guess")  # not named like a document: its type is read first
    await client.hset(other, mapping={"m": "x"})
    keys_read = [*names, other]  # names[4] does not exist
    screen = Redactor(client, keys, needle, Taint()).may_hold_document
    kinds, values = await read_screened_documents(
        client, keys_read, lambda n: n.startswith(keys.memory_document_prefixes()), screen
    )
    expected_kinds = await read_kinds(client, keys_read)
    assert kinds == expected_kinds == ["ReJSON-RL", "ReJSON-RL", "hash", "list", "none", "hash"]
    assert values == await read_screened_values(client, keys_read, expected_kinds, screen)
    assert values[1] is None and values[0] is not None  # the plain document is not decoded
    page = Redactor(client, keys, needle, Taint()).may_hold_documents
    assert (kinds, values) == await read_screened_documents(
        client, keys_read, lambda n: n.startswith(keys.memory_document_prefixes()), screen, page
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b'{"content":"plain words"}',
                b'{"content":"met INV-7731"}',
                b'{"content":"met INV","x":"7731"}',
                '{"content":"ＩＮＶ－７７３１"}'.encode(),
                b'{"content":"\\u0049NV-7731"}',
                '{"content":"café"}'.encode(),
                b'{"content":"a \\n b"}',
            ]
        ),
        max_size=12,
    ),
    st.sampled_from(["INV-7731", "Zoë", "café"]),
)
def test_documents_screened_together_are_screened_as_one_by_one(
    raws: list[bytes], subject: str
) -> None:
    """``may_hold_documents`` answers for each document what ``may_hold_document`` does."""
    redactor = Redactor(None, Keyspace("aether"), Needle(subject), Taint())  # type: ignore[arg-type]
    assert redactor.may_hold_documents(raws) == [redactor.may_hold_document(r) for r in raws]
    assert Redactor(None, Keyspace("aether"), None, Taint()).may_hold_documents(raws) == [  # type: ignore[arg-type]
        False
    ] * len(raws)


def test_files_are_read_again_only_where_they_held_the_text(tmp_path: Path) -> None:
    """After the first look, only the files that held the text are read again; a file
    Redis deleted meanwhile is skipped."""
    needle = Needle.unsealed("Orvalline Kestrup")
    old, new, gone = tmp_path / "old.aof", tmp_path / "new.aof", tmp_path / "gone.aof"
    old.write_bytes(b"\x00\xff binary " * 1000 + b"met Orvalline Kestrup today")
    new.write_bytes(b"nothing here")
    gone.write_bytes(b"orvalline-kestrup")
    assert files_holding(tmp_path, needle) == [gone, old]
    new.write_bytes(b"Orvalline Kestrup")  # not among those asked about: not read
    gone.unlink()
    assert files_holding(tmp_path, needle, among=[gone, old]) == [old]
    assert files_holding(tmp_path, needle) == [new, old]


async def test_keys_named_after_the_subject_go_with_it(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    """A session, scratchpad, tool cache, LangGraph thread and store namespace named after
    the subject: the matcher reads ``chat:session:NAME`` as one longer token, so the key's
    named parts are read on their own. They go whole, with every mention of their names in
    the journal, the digests, the archive and the files; a longer name stays."""
    from langgraph.checkpoint.base import empty_checkpoint

    from aether.integrations.langgraph import AetherCheckpointSaver, AetherStore

    text = mark()
    longer = f"with-{text}"
    await sync_archive(parts)
    await plant_unrelated(parts)
    before = await parts.checkpoints.create(label="before the sessions")
    before_image = await state_image(client, keys)
    chats = ChatSessions(parts.memory)
    await chats.append(text, "user", "hello there", title="a chat")
    await chats.append(longer, "user", "hello", title="a longer name")
    await Episodes(parts.memory).record(text, "memory_search", {"q": "x"}, "ok", True, 2.0)
    await Scratchpads(parts.memory).set(text, "a pad named after it")
    await ToolSchemaCache(parts.memory).set(text, [{"name": "x", "description": "y"}])
    saver = AetherCheckpointSaver(parts)
    config = {"configurable": {"thread_id": text, "checkpoint_ns": ""}}
    await saver.aput(config, empty_checkpoint(), {}, {})  # type: ignore[arg-type]
    store = AetherStore(parts)
    await store.aput(("users", text), "pref", {"note": "prefers tea"})
    await store.aput(("users", longer), "pref", {"note": "prefers coffee"})
    await sync_archive(parts)
    named = [k async for k in client.scan_iter(match=keys.every_key) if text in k.decode()]
    mine = {k.decode() for k in named if longer not in k.decode()}
    assert {keys.chat_session(text), keys.scratchpad(text), keys.tools(text)} <= mine
    assert any(k.startswith(keys.prefix + "langgraph:checkpoint:") for k in mine)
    # the files frame the keys' names: the AOF's commands, and the RDB a rewrite makes
    from aether.store.persistence import names_a_key, rewrite_files

    assert await rewrite_files(client)
    folder = Path(text_of((await client.config_get("dir"))["dir"]))
    rdb = [p for p in folder.rglob("*.rdb") if p.is_file()]
    assert rdb and any(names_a_key(p.read_bytes(), Needle(text)) for p in rdb)
    caller = Caller(actor="operator")
    verified = await erase_verify(parts, caller, VerifyArgs(text=text))
    assert {s["place"] for s in verified.found if s["detail"] == "named by it"} == mine
    plan = await erase(parts, caller, EraseArgs(text=text, dry_run=True))
    listed = {item["key"] for items in plan["items"].values() for item in items}
    assert {keys.chat_session(text), keys.chat_messages(text)} <= listed
    assert {keys.scratchpad(text), keys.tools(text)} <= {s["place"] for s in plan["elsewhere"]}

    report = await erase(parts, caller, EraseArgs(text=text))
    assert report["files"] == "clean"
    left = {k.decode() async for k in client.scan_iter(match=keys.every_key)}
    assert not left & mine
    assert keys.chat_session(longer) in left and keys.chat_messages(longer) in left
    assert sorted(s["title"] for s in await chats.list()) == ["a longer name", "s1"]
    assert await store.aget(("users", longer), "pref") is not None
    assert await store.aget(("users", text), "pref") is None
    assert await saver.aget_tuple(config) is None  # type: ignore[arg-type]
    verified = await erase_verify(parts, caller, VerifyArgs(text=text))
    assert verified.clean, verified.found
    assert (await parts.journal.verify()).ok
    dump = pg_dump_text().replace(longer, "").replace(longer.encode().hex(), "")
    assert text not in dump and text.encode().hex() not in dump
    async for key in client.scan_iter(match=keys.every_key):  # but in the longer name
        raw = (await client.dump(key) or b"").lower().replace(longer.lower().encode(), b"")
        assert text.lower().encode() not in raw, key
    hits = await store.asearch(("users",), query="prefers tea")
    assert [h.value for h in hits] == [{"note": "prefers coffee"}]  # its copy went with it

    # a rollback to before the sessions restores the rest exactly; none comes back
    await parts.checkpoints.rollback_to(before.id)
    assert await state_image(client, keys) == before_image
    await parts.checkpoints.undo()
    assert not {k.decode() async for k in client.scan_iter(match=keys.every_key)} & mine
    assert (await parts.journal.verify()).ok
    assert (await erase_verify(parts, caller, VerifyArgs(text=text))).clean
    assert (await erase_verify(parts, caller, VerifyArgs(text=mark()))).clean  # no key's name


def test_a_key_named_after_the_subject_is_found_in_files_by_its_framing() -> None:
    """An AOF (RESP), an RDB, a listpack and a msgpack value frame a key by its length: the
    key's named parts are read as the erasure reads them, a longer name never matches."""
    from aether.store.persistence import names_a_key

    needle = Needle("Marta Quill")
    key = b"aether:chat:session:marta quill"
    longer = b"aether:chat:session:marta quillon"
    resp = b"*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n" % (len(key), key)
    assert names_a_key(resp, needle)
    assert not names_a_key(resp.replace(key, longer).replace(b"$31", b"$33"), needle)
    frames = (
        lambda k: bytes([0x04, len(k)]) + k + b"Ab\x01",  # RDB 6-bit length, value after
        lambda k: bytes([0x04, 0x40, len(k)]) + k + b"Ab",  # RDB 14-bit length
        lambda k: bytes([0x80 | len(k)]) + k + b"Zq",  # listpack 6-bit
        lambda k: bytes([0xD9, len(k)]) + k + b"Zq",  # msgpack str8
        lambda k: b'{"key": "' + k + b'"}',  # quoted
    )
    for frame in frames:
        assert names_a_key(frame(key), needle), frame(key)
        assert not names_a_key(frame(longer), needle), frame(longer)
    thread = b"aether:langgraph:checkpoint:marta%20quill:%3Aroot:1ef"
    assert names_a_key(bytes([len(thread)]) + thread + b"x", needle)
    assert not names_a_key(b"aether:daily:entry:marta-quill\r\n", needle)  # not a name
    cyrillic = Needle("Ольга Иванова")  # a spelling outside ASCII: plain, or percent-encoded
    plain = "aether:chat:session:ольга-иванова".encode()
    assert names_a_key(b"$%d\r\n%s\r\n" % (len(plain), plain), cyrillic)
    encoded = b"aether:langgraph:blobs:%D0%9E%D0%BB%D1%8C%D0%B3%D0%B0%20x"
    assert not names_a_key(b"$%d\r\n%s\r\n" % (len(encoded), encoded), cyrillic)
    encoded = encoded.replace(b"%20x", b"%20%D0%98%D0%B2%D0%B0%D0%BD%D0%BE%D0%B2%D0%B0")
    assert names_a_key(b"$%d\r\n%s\r\n" % (len(encoded), encoded), cyrillic)
    assert not names_a_key(b"$30\r\naether:chat:session:olga-x\r\n", cyrillic)
    assert not names_a_key(b"aether:chat:session:index\r\n", Needle("index"))


def test_a_family_word_or_a_graph_name_never_names_a_key(keys: Keyspace) -> None:
    """Erasing ``session``, ``messages`` or ``index`` takes no session: only the parts a
    caller chose are names, and a thread's channels and checkpoint ids are the graph's."""
    for word, key in (
        ("session", keys.chat_session("s1")),
        ("messages", keys.chat_messages("s1")),
        ("index", keys.chat_session_index()),
        ("messages", keys.lg_blob("t1", "", "messages", "3")),
        ("checkpoint", keys.lg_checkpoint("t1", "root", "checkpoint")),
        ("langgraph", keys.lg_threads()),
    ):
        redactor = Redactor(None, keys, Needle(word), Taint())  # type: ignore[arg-type]
        assert not redactor.names_it(key), (word, key)
        assert not redactor.member_gone(key.encode(), keys.lg_blobs("t1")), (word, key)
    redactor = Redactor(None, keys, Needle("t1 x"), Taint())  # type: ignore[arg-type]
    assert redactor.names_it(keys.lg_blob("t1 x", "", "messages", "3"))


async def test_the_learner_watermark_of_a_session_named_after_the_subject_goes(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    """The learner keeps ``learned:<session>`` in the maintenance state: a field made of
    the session's name goes with the session (and a longer name's stays)."""
    text = mark()
    mutation = Mutation().hset(
        keys.maintenance_state(), {f"learned:{text}": "4", f"learned:with-{text}": "2"}
    )
    await parts.memory.store.apply(mutation, "test")
    await parts.eraser("operator").erase(text)
    fields = {f.decode() for f in await client.hkeys(keys.maintenance_state())}
    assert fields == {f"learned:with-{text}"}
    caller = Caller(actor="operator")
    assert (await erase_verify(parts, caller, VerifyArgs(text=text))).clean


async def test_tag_counts_stay_true_when_an_erasure_deletes_in_several_batches(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    """The erasure counts its deletions down in batches; the tag counts it rewrites (a tag
    holding the text goes) are read after them, so every other tag's count stays true."""
    text = mark()
    daily = DailyLog(parts.memory)
    docs = [
        build_entry(parts.memory, f"met {text} at {i}", tags=["meeting", text]) for i in range(260)
    ]
    await parts.memory.store.apply(daily.mutation(docs), "test")
    await daily.log("an unrelated meeting", tags=["meeting"])
    assert await client.zscore(keys.memory_topics(), "meeting") == 261
    await parts.eraser("operator").erase(text)
    assert await client.zscore(keys.memory_topics(), "meeting") == 1
    assert await client.zscore(keys.memory_topics(), text) is None


async def test_a_store_namespace_named_after_the_subject_goes_from_history_too(
    parts: Parts, client: Redis, keys: Keyspace
) -> None:
    """An item of a namespace named after the subject, deleted before the erasure: only
    history holds it and the memory it indexed; a rollback brings back neither."""
    from aether.integrations.langgraph import AetherStore

    text = mark()
    store = AetherStore(parts)
    await store.aput(("users", text), "pref", {"note": "prefers oolong tea"})
    before = await parts.checkpoints.create(label="with the item")
    await store.adelete(("users", text), "pref")
    await parts.eraser("operator").erase(text)
    await parts.checkpoints.rollback_to(before.id)
    assert await store.aget(("users", text), "pref") is None
    assert await store.asearch(("users",), query="prefers oolong tea") == []
    assert await dumps_holding(client, keys, text) == []
    assert (await parts.journal.verify()).ok


_NAMES = ["marta quill", "Marta-Quill", "MARTA_QUILL", "márta quíll", "ｍａｒｔａ quill", "marta"]
_NAMES += ["ольга иванова", "Ольга-Иванова", "with-marta-quill", "martaquill", "marta quillon"]
_BUILDERS = [
    lambda k, n: k.chat_session(n),
    lambda k, n: k.chat_messages(n),
    lambda k, n: k.scratchpad(n),
    lambda k, n: k.tools(n),
    lambda k, n: k.lg_checkpoint(n, "root", "1ef"),
    lambda k, n: k.lg_blob(n, "", "messages", "3"),
    lambda k, n: k.lg_item(("users", n), "prefs"),
    lambda k, n: k.lg_store_keys((n, "notes")),
    lambda k, n: k.daily_entry(n),
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(range(len(_BUILDERS))), st.sampled_from(_NAMES)),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["Marta Quill", "Ольга Иванова", "marta", "quill", "INV-7731"]),
)
def test_the_quick_test_of_key_names_never_changes_an_answer(
    built: list[tuple[int, str]], subject: str
) -> None:
    """``Redactor.may_name`` rules out keys (one, or an entry's keys joined) only where the
    whole reading finds nothing: whatever the family, spelling or percent-encoding."""
    keys = Keyspace("aether")
    needle = Needle(subject)
    redactor = Redactor(None, keys, needle, Taint())  # type: ignore[arg-type]
    names = [_BUILDERS[i](keys, name) for i, name in built]
    for name in names:
        named = any(needle.in_text(part) for part in keys.named_parts(name))
        assert redactor.names_it(name) == redactor.names_it(name.encode()) == named, name
        assert redactor.names_key(name) == (needle.in_text(name) or named), name
    joined = b"\n".join(n.encode() for n in names)
    if any(redactor.names_key(n) for n in names):
        assert redactor.may_name(joined), names
    if subject == "Marta Quill":  # and it does rule out the keys that cannot be named
        others = [keys.chat_session("ivo"), keys.daily_entry("01J0"), keys.lg_item(("u",), "k")]
        assert not redactor.may_name(b"\n".join(k.encode() for k in others))


@pytest.mark.parametrize("subject", ["INV-7731", "Zoë", "marta quill"])
async def test_an_entry_ruled_out_whole_redacts_as_its_ops_read_one_by_one(
    client: Redis, keys: Keyspace, subject: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Redactor.ops`` skips reading op by op (``may_change``) only where that reading
    changes nothing but the ops on keys gone: the same result either way, over entries
    with and without the text, an erased item's id, a key named by the text, a pre-image,
    a member or a field."""
    gone_doc = keys.daily_entry("01JGONEGONEGONEGONE0001")
    named = keys.chat_session(subject.lower().replace(" ", "-"))
    await client.hset(keys.chat_session("kept"), mapping={"m": f"talked of {subject}"})
    await client.hset(keys.chat_session("plain"), mapping={"m": "nothing to see"})
    holding = await client.dump(keys.chat_session("kept"))
    plain = await client.dump(keys.chat_session("plain"))
    assert holding is not None and plain is not None
    entries: list[list[list[bytes]]] = [
        [[b"DEL", keys.daily_entry("01JKEPTKEPTKEPTKEPT0001").encode()]],
        [[b"DEL", gone_doc.encode()], [b"ABSENT", gone_doc.encode()]],
        [[b"DEL", keys.vector(gone_doc).encode()]],  # belongs to the item gone
        [[b"HSET", named.encode(), b"m", b"x"]],  # a key named by the text
        [[b"RESTORE", keys.chat_session("a").encode(), holding, b"0"]],
        [[b"RESTORE", keys.chat_session("b").encode(), plain, b"0"]],
        [[b"ZADD", keys.memory_topics().encode(), b"1", subject.encode(), b"2", b"other"]],
        [[b"SADD", keys.chat_session_index().encode(), b"01JGONEGONEGONEGONE0001"]],
        [[b"RPUSH", keys.daily(date(2026, 1, 2)).encode(), b"x", f"met {subject}".encode()]],
        [[b"HSET", keys.maintenance_state().encode(), b"learned:other", b"1"]],
    ]
    relation = keys.relation("01JRELRELRELRELRELR0001")
    entries.append([[b"HSET", relation.encode(), b"source", b"01JGONEGONEGONEGONE0001"]])
    await client.hset(relation, mapping={"target": "01JGONEGONEGONEGONE0001"})
    relation_image = await client.dump(relation)
    assert relation_image is not None
    entries.append([[b"RESTORE", relation.encode(), relation_image, b"0"]])
    gone_belief, gone_entity = keys.belief("01JBELBELBELBELBELBE0001"), keys.entity("marta-q")
    entries += [  # keys that belong to an item gone, and keys that only share its last part
        [[b"DEL", keys.passage_vector(gone_doc, 2).encode()]],
        [[b"RPUSH", keys.belief_history("01JBELBELBELBELBELBE0001").encode(), b"v1"]],
        [[b"SADD", keys.relations_out("marta-q").encode(), b"r1"]],
        [[b"DEL", keys.longterm("01JGONEGONEGONEGONE0001").encode()]],
        [[b"SADD", keys.chat_session_index().encode(), b"x01JGONEGONEGONEGONE0001"]],
        [[b"HSET", keys.scratchpad("line\nbreak").encode(), b"m", b"x"]],  # a name's newline
    ]
    lined = keys.scratchpad("line\nbreak")
    taint = Taint(keys={gone_doc, named, gone_belief, gone_entity, lined})
    redactor = Redactor(client, keys, Needle(subject), taint)
    redactor.refresh()
    unscreened = Redactor(client, keys, Needle(subject), taint)  # no marks: owner() read
    unscreened._ids = redactor._ids
    skipped = 0
    for ops in entries:
        quick = await redactor.ops(ops)
        assert quick == await unscreened.ops(ops), ops
        monkeypatch.setattr(redactor, "may_change", lambda _ops: True)
        assert quick == await redactor.ops(ops), ops
        monkeypatch.undo()
        skipped += not redactor.may_change(ops)
    assert skipped >= 5  # the plain entries, and those whose keys are gone, are not read
    gone = [redactor.key_gone(op[1].decode()) for ops in entries for op in ops]
    assert gone == [unscreened.key_gone(op[1].decode()) for ops in entries for op in ops]
    assert sum(gone) == 8 and not redactor.key_gone(keys.longterm("01JGONEGONEGONEGONE0001"))

    # --verify's reading of an entry finds the text in the same entries either way
    import msgpack

    from aether.store.entry_redaction import entry_holds

    found = []
    for screened in (True, False):
        if not screened:
            monkeypatch.setattr(redactor, "may_hold_text", lambda _ops: True)
        found.append([await entry_holds(redactor, {b"i": msgpack.packb(ops)}) for ops in entries])
        monkeypatch.undo()
    assert found[0] == found[1] and any(found[0]) and not all(found[0])

    # the scan's reading of the same ops records the same taint either way
    for needle in (Needle(subject), None):
        seen = []
        for screened in (True, False):
            scanner = Redactor(client, keys, needle, Taint())
            if not screened:
                monkeypatch.setattr(scanner, "may_hold_text", lambda _ops: True)
            for ops in entries:
                await scanner.observe_ops(ops)
            monkeypatch.undo()
            seen.append((scanner.taint.keys, scanner.taint.refs))
        assert seen[0] == seen[1]
        assert seen[0][1] == {relation: {"01JGONEGONEGONEGONE0001"}}


def test_large_files_are_read_by_a_process_per_core_as_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``PARALLEL_FROM`` the files are read in spans by several processes: the same
    files are found, a spelling or a named key across two spans included."""
    from aether.store import persistence

    span = 1024 * 1024
    noise = random.Random(5).randbytes(3 * span)
    across = tmp_path / "across.aof"  # the name straddles the first span's end
    across.write_bytes(noise[: span - 5] + b" Orvalline Kestrup " + noise[span + 14 :])
    key = b"aether:chat:session:orvalline-kestrup"
    named = tmp_path / "named.rdb"  # a key named by it, framed by its length, at the end
    named.write_bytes(noise + bytes([len(key)]) + key + b"\x00")
    (tmp_path / "clean.aof").write_bytes(noise)
    (tmp_path / "longer.aof").write_bytes(noise + b" Orvalline Kestrupson ")
    (tmp_path / "empty.aof").write_bytes(b"")
    needle = Needle("Orvalline Kestrup")
    alone = persistence.files_holding(tmp_path, needle)
    assert alone == [across, named]
    monkeypatch.setattr(persistence, "PARALLEL_FROM", 0)
    monkeypatch.setattr(persistence, "SPAN", span)
    monkeypatch.setattr(persistence, "_readers", lambda: 2)
    assert persistence.files_holding(tmp_path, needle) == alone
    assert persistence.files_holding(tmp_path, needle, among=[named]) == [named]

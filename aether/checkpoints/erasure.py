"""Erasure: a subject removed from every store, its history included, and proven gone.

Erasure is a store-level operation like rollback: it takes the admin lock, takes a
checkpoint, sets the write hold (writes wait, as during a rollback; only the erasure's own
changes pass, with the token the hold records) and goes in phases, each idempotent, so
that a run cut short by a crash is finished by :meth:`Eraser.resume` (the daemon calls it
at start, and so does the next ``aether erase``):

1. ``scan``: read the state, the journal and the archive, and record in a
   :class:`~aether.store.redaction.Taint` which items ever held the text;
2. ``state``: remove them (and their vectors, index entries, counts) in journaled
   batches of bounded size, and redact the collections that hold the text;
3. ``journal``: rebuild the journal with every value redacted (same entry ids, page by
   page into a scratch stream, then swapped in one step), so no rollback or undo can bring
   the text back;
4. ``others``: the keys outside the journaled state: the inbox, outbox, ledger and
   embedding requests (streams rebuilt without the entries), the embedding cache,
   scratchpads, tool caches, approvals, checkpoint labels;
5. ``archive``: the PostgreSQL archive's journal rows and base snapshots redacted,
   checkpoint labels too, then ``VACUUM FULL`` so no dead row keeps the old bytes;
6. ``hooks``: what the memory layer adds (the Qdrant mirror's points).

Then the erasure is recorded in ``ns:erasures`` (a salted hash of the text, never the
text), the hold is released, and the Redis server rewrites its AOF; the erasure waits
until no file under the data directory holds the text.

Checkpoints are journal positions, so redacting the journal redacts every checkpoint:
a rollback to one taken before the erasure restores everything else exactly and the
erased items not at all (see :mod:`aether.store.redaction` for how history stays
consistent).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError, WatchError

from aether.checkpoints.manager import Checkpoints
from aether.codec import byte_map, command, text
from aether.errors import ConcurrentAdminError, InvalidOperationError, NotFoundError
from aether.ids import new_id
from aether.keys import Keyspace
from aether.store.journal import entries_after
from aether.store.lock import StateLock
from aether.store.redaction import MAX_NEEDLE, Needle, Redactor, Taint, Value
from aether.store.state import Mutation, Store, decode_ops

log = structlog.get_logger(__name__)

__all__ = [
    "ERASED_LABEL",
    "MAX_SUBJECT",
    "Eraser",
    "ErasureHooks",
    "ErasurePlan",
    "ErasureReport",
    "Sighting",
    "entry_holds",
    "files_holding",
    "redact_entry",
    "salted_hash",
    "scrub_json",
    "value_holds",
]

ERASED_LABEL = "[erased]"
MAX_SUBJECT = MAX_NEEDLE
LOCK_TTL_S = 10.0
BATCH_OPS = 200
PAGE = 500
ERASURE_HISTORY = 1000
FILES_WAIT_S = 60.0
PHASES = ("scan", "state", "journal", "others", "archive", "hooks")


@dataclass
class ErasureHooks:
    """What the layers above the store add to an erasure.

    Attributes:
        on_delete: adds ops to the batch that deletes memory documents (their counters).
        after_state: told the keys of the erased items once they are gone (the Qdrant
            mirror drops their points); returns how many it removed.
        find_elsewhere: where else the text is found (the Qdrant mirror), for ``verify``.
    """

    on_delete: Callable[[Mutation, list[dict[str, Any]]], None] | None = None
    after_state: Callable[[list[str], Needle | None], Awaitable[int]] | None = None
    find_elsewhere: Callable[[Needle], Awaitable[list[Sighting]]] | None = None


@dataclass(frozen=True)
class Sighting:
    """Where a text was found: a store, a place in it, and what holds it."""

    store: str
    place: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        """As JSON."""
        return {"store": self.store, "place": self.place, "detail": self.detail}


@dataclass
class ErasurePlan:
    """What an erasure removes (``--dry-run``): items by tier, and counts elsewhere."""

    items: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    history_only: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def total(self) -> int:
        """How many state items and history-only keys go."""
        return sum(len(v) for v in self.items.values()) + len(self.history_only)

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {
            "items": self.items,
            "history_only": self.history_only,
            "counts": self.counts,
            "total": self.total(),
        }


@dataclass
class ErasureReport:
    """What an erasure did."""

    id: str
    at: int
    actor: str
    text_hash: str
    salt: str
    checkpoint: str
    counts: dict[str, int]
    seconds: float = 0.0
    files: str = "pending"
    resumed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """As JSON (the record kept in ``ns:erasures``)."""
        return {
            "id": self.id,
            "at": self.at,
            "actor": self.actor,
            "text_hash": self.text_hash,
            "salt": self.salt,
            "checkpoint": self.checkpoint,
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
            "files": self.files,
            "resumed": self.resumed,
        }


def salted_hash(subject: str, salt: str) -> str:
    """The hash an erasure record keeps of its text (case-folded), never the text."""
    return hashlib.sha256((salt + subject.strip().casefold()).encode()).hexdigest()


def scrub_json(value: Any, needle: Needle) -> Any:
    """A JSON value with every string that holds the needle replaced by ``[erased]``."""
    if isinstance(value, str):
        return ERASED_LABEL if needle.in_text(value) else value
    if isinstance(value, list):
        return [scrub_json(v, needle) for v in value]
    if isinstance(value, dict):
        return {k: scrub_json(v, needle) for k, v in value.items()}
    return value


class Eraser:
    """Erasure on one namespace.

    Args:
        client: the namespace's client.
        keys: its keyspace.
        checkpoints: its checkpoints (the admin lock, the checkpoint taken first).
        archive_dsn: the PostgreSQL archive's DSN, when one follows the namespace.
        hooks: what the memory layer adds.
        actor: who erases (recorded).
    """

    def __init__(
        self,
        client: Redis,
        keys: Keyspace,
        checkpoints: Checkpoints,
        *,
        archive_dsn: str | None = None,
        hooks: ErasureHooks | None = None,
        actor: str = "cli",
    ) -> None:
        self.client = client
        self.keys = keys
        self.checkpoints = checkpoints
        self.store = Store(client, keys, actor=actor)
        self.archive_dsn = archive_dsn
        self.hooks = hooks or ErasureHooks()
        self.actor = actor

    # -- the public face ---------------------------------------------------------------
    async def plan(self, subject: str | None = None, item: str | None = None) -> ErasurePlan:
        """What erasing ``subject`` (or the item ``item``) would remove; changes nothing.

        Raises:
            InvalidOperationError: neither or both given, or the text is too short or long.
            NotFoundError: ``item`` names no item.
        """
        needle, item_key = await self._target(subject, item)
        redactor = Redactor(self.client, self.keys, needle, Taint())
        counts = await self._scan(redactor, item_key)
        plan = ErasurePlan(counts=counts)
        present: set[str] = set()
        async for names in self._state_pages():
            values = await self._read_many(names)
            for name, value in zip(names, values, strict=True):
                if value is None:
                    continue
                present.add(name)
                for what, excerpt in self._sightings(redactor, name, value):
                    plan.items.setdefault(self.keys.tier(name), []).append(
                        {"key": name, "what": what, "excerpt": excerpt}
                    )
        plan.history_only = sorted(
            k for k in redactor.taint.keys if k not in present and self.keys.is_state(k)
        )
        return plan

    async def erase(self, subject: str | None = None, item: str | None = None) -> ErasureReport:
        """Erase ``subject`` (or the item ``item``) everywhere; see the module docs.

        Raises:
            InvalidOperationError: neither or both given, or the text is too short or long.
            NotFoundError: ``item`` names no item.
            ConcurrentAdminError: a rollback, restore or another erasure is running.
        """
        needle, item_key = await self._target(subject, item)
        await self.resume()
        started = time.monotonic()
        salt = secrets.token_hex(8)
        async with self._lock() as lock:
            if await self.client.exists(self.keys.write_hold()):
                raise ConcurrentAdminError(
                    "an interrupted rollback holds writes: finish it first "
                    "('aether checkpoint rollback' or start the daemon)"
                )
            hold = await self._begin(lock, needle, item_key, salt)
            report = await self._run(lock, hold)
        report.seconds = time.monotonic() - started
        await self._settle_files(report, needle)
        await self._update_record(report.id, seconds=round(report.seconds, 3))
        return report

    async def _begin(
        self, lock: StateLock, needle: Needle | None, item_key: str | None, salt: str
    ) -> dict[str, str]:
        """Take the checkpoint and set the write hold: from here on a crash is resumed."""
        erasure_id = new_id()
        pre = await self.checkpoints.create(
            label=f"before erasure {erasure_id}", reason="pre-erase", actor=self.actor
        )
        hold = {
            "kind": "erase",
            "token": lock.token,
            "id": erasure_id,
            "text": needle.text if needle else "",
            "item": item_key or "",
            "actor": self.actor,
            "phase": PHASES[0],
            "started": str(int(time.time() * 1000)),
            "checkpoint": pre.id,
            "salt": salt,
            "counts": "{}",
        }
        await self.client.hset(self.keys.write_hold(), mapping=hold)  # type: ignore[arg-type]
        return hold

    async def resume(self) -> ErasureReport | None:
        """Finish an erasure a crash cut short; ``None`` when none was.

        Also rewrites the AOF for a finished erasure whose files were never rewritten.

        Raises:
            ConcurrentAdminError: an erasure or rollback is running now.
        """
        raw = byte_map(await self.client.hgetall(self.keys.write_hold()))
        hold = {k.decode(): v.decode() for k, v in raw.items()}
        report: ErasureReport | None = None
        if hold.get("kind") == "erase":
            async with self._lock() as lock:
                hold["token"] = lock.token
                await self.client.hset(self.keys.write_hold(), "token", lock.token)
                log.warning(
                    "finishing an interrupted erasure", id=hold.get("id"), phase=hold["phase"]
                )
                report = await self._run(lock, hold)
                report.resumed = True
            needle = Needle(hold["text"]) if hold.get("text") else None
            await self._settle_files(report, needle)
        else:
            await self._settle_pending_files()
        return report

    async def interrupted(self) -> bool:
        """Whether an erasure holds the namespace's writes (running, or cut short)."""
        return await self.client.hget(self.keys.write_hold(), "kind") == b"erase"

    async def log(self, limit: int = 50) -> list[dict[str, Any]]:
        """The erasure records, newest first."""
        raw = await self.client.lrange(self.keys.erasures(), 0, max(0, limit - 1))
        return [json.loads(r) for r in raw]

    async def verify(self, subject: str) -> list[Sighting]:
        """Every place the text is still found: keys, journal, files, archive, mirror.

        Raises:
            InvalidOperationError: the text is too short or too long.
        """
        needle = Needle(subject)
        redactor = Redactor(self.client, self.keys, needle, Taint())
        found: list[Sighting] = []
        async for names in self._key_pages(self.keys.every_key):
            for name in names:
                if name == self.keys.journal():
                    async for entry in entries_after(self.client, name, "0-0", PAGE):
                        if await entry_holds(redactor, entry.fields):
                            found.append(Sighting("redis", name, f"journal entry {entry.id}"))
                    continue
                where = await self._key_holds(redactor, name)
                if where:
                    found.append(Sighting("redis", name, where))
        found += [Sighting("redis files", str(p)) for p in await self._files_holding(needle)]
        if self.archive_dsn:
            async with self._archive() as archive:
                found += [Sighting("archive", t, row) for t, row in await archive.holding(redactor)]
        if self.hooks.find_elsewhere is not None:
            found += await self.hooks.find_elsewhere(needle)
        return found

    # -- target and lock ---------------------------------------------------------------
    async def _target(
        self, subject: str | None, item: str | None
    ) -> tuple[Needle | None, str | None]:
        if (subject is None) == (item is None):
            raise InvalidOperationError("erase either a text or one item (--id), not both")
        if subject is not None:
            return Needle(subject), None
        assert item is not None
        wanted = item.strip()
        if not wanted or any(c in wanted for c in "*?[]\\: "):
            raise InvalidOperationError(f"{item!r} is not an item id")
        matches: list[str] = []
        async for names in self._key_pages(self.keys.every_key):
            matches += [
                n
                for n in names
                if n.endswith(":" + wanted)
                and self.keys.is_state(n)
                and not n.startswith(self.keys.vector_prefix())
            ]
        if matches:  # the item itself, not what belongs to it (a belief's history)
            return None, min(matches, key=len)
        raise NotFoundError(f"no item with id {wanted!r} in namespace {self.keys.ns!r}")

    @contextlib.asynccontextmanager
    async def _lock(self) -> AsyncIterator[StateLock]:
        lock = StateLock(
            self.client,
            self.keys.admin_lock(),
            ttl_s=LOCK_TTL_S,
            busy=f"a rollback, restore or erasure is running on namespace {self.keys.ns!r} "
            f"(lock {self.keys.admin_lock()} is held); nothing changed, try again when it "
            "finishes",
        )
        async with lock:

            async def keep() -> None:
                while True:
                    await asyncio.sleep(LOCK_TTL_S / 3)
                    await lock.extend()

            keeper = asyncio.create_task(keep())
            try:
                yield lock
            finally:
                keeper.cancel()
                with contextlib.suppress(asyncio.CancelledError, RedisError):
                    await keeper

    # -- the phases --------------------------------------------------------------------
    async def _run(self, lock: StateLock, hold: dict[str, str]) -> ErasureReport:
        needle = Needle(hold["text"]) if hold.get("text") else None
        counts: dict[str, int] = json.loads(hold.get("counts") or "{}")
        taint_key = self.keys.erase_scratch("taint")
        redactor = Redactor(self.client, self.keys, needle, Taint())
        phase = hold.get("phase", PHASES[0])
        if phase == "scan":
            await self.client.delete(taint_key)
            counts.update(await self._scan(redactor, hold.get("item") or None))
            members = redactor.taint.to_members()
            for i in range(0, len(members), PAGE):
                await self.client.sadd(taint_key, *members[i : i + PAGE])
            phase = await self._advance("state", counts)
        else:
            redactor.taint = Taint.from_members(await self.client.smembers(taint_key))
            redactor.refresh()
        token = lock.token
        if phase == "state":
            counts.update(await self._redact_state(redactor, token))
            phase = await self._advance("journal", counts)
        if phase == "journal":
            counts["journal_entries"] = await self._redact_journal(redactor)
            phase = await self._advance("others", counts)
        if phase == "others":
            counts.update(await self._redact_others(redactor))
            phase = await self._advance("archive", counts)
        if phase == "archive":
            if self.archive_dsn:
                async with self._archive() as archive:
                    counts.update(await archive.redact(redactor))
            phase = await self._advance("hooks", counts)
        if phase == "hooks" and self.hooks.after_state is not None:
            gone = sorted(
                k for k in redactor.taint.keys if k.startswith(self.keys.memory_document_prefixes())
            )
            counts["mirror_points"] = await self.hooks.after_state(gone, needle)
        subject = hold.get("text") or hold.get("item", "")
        report = ErasureReport(
            id=hold["id"],
            at=int(hold.get("started") or 0),
            actor=hold.get("actor", self.actor),
            text_hash=salted_hash(subject, hold["salt"]),
            salt=hold["salt"],
            checkpoint=hold.get("checkpoint", ""),
            counts=counts,
        )
        pipe = self.client.pipeline(transaction=True)
        pipe.lpush(self.keys.erasures(), json.dumps(report.to_dict()))
        pipe.ltrim(self.keys.erasures(), 0, ERASURE_HISTORY - 1)
        pipe.delete(self.keys.write_hold(), taint_key)
        await pipe.execute()
        log.info("erasure done", id=report.id, counts=counts)
        return report

    async def _advance(self, phase: str, counts: dict[str, int]) -> str:
        await self.client.hset(
            self.keys.write_hold(), mapping={"phase": phase, "counts": json.dumps(counts)}
        )
        log.debug("erasure phase", phase=phase)
        return phase

    async def _scan(self, redactor: Redactor, item_key: str | None) -> dict[str, int]:
        """Phase 1: what ever held the text, in the state, the journal and the archive."""
        if item_key is not None:
            redactor.taint.keys.add(item_key)
            (value,) = await self._read_many([item_key])
            if value is not None and value.kind == "ReJSON-RL":
                doc = json.loads(value.content)
                if isinstance(doc, dict) and isinstance(doc.get("content"), str):
                    redactor.taint.texts.add(doc["content"])
        vectors = self.keys.vector_prefix()
        async for names in self._state_pages():
            # a vector hash's text fields copy its document's, which is read itself
            names = [n for n in names if not n.startswith(vectors)]
            for name, value in zip(names, await self._read_many(names), strict=True):
                if value is not None:
                    redactor.observe(name, value)
        entries = 0
        async for entry in entries_after(self.client, self.keys.journal(), "0-0", PAGE):
            entries += 1
            await redactor.observe_ops(entry.inverse())
            if b"f" in entry.fields:
                await redactor.observe_ops(entry.forward())
        if self.archive_dsn:
            async with self._archive() as archive:
                await archive.observe(redactor)
        redactor.taint.close(self.keys)
        redactor.refresh()
        return {"items": len(redactor.taint.keys)}

    async def _redact_state(self, redactor: Redactor, token: str) -> dict[str, int]:
        """Phase 2: the items removed and the collections redacted, journaled in batches."""
        removed = rewritten = 0
        memory = self.keys.memory_document_prefixes()
        batch = Mutation()
        docs: list[dict[str, Any]] = []

        async def flush() -> None:
            nonlocal batch, docs
            if batch.ops:
                if docs and self.hooks.on_delete is not None:
                    self.hooks.on_delete(batch, docs)
                await self.store.apply(batch, "erase", self.actor, hold_token=token)
            batch, docs = Mutation(), []

        async for names in self._state_pages():
            gone = [n for n in names if redactor.key_gone(n)]
            for name in gone:
                batch.delete(name)
                removed += 1
            doc_keys = [n for n in gone if n.startswith(memory)]
            for raw in await self._json_many(doc_keys):
                if isinstance(raw, dict):
                    docs.append(raw)
            rest = [n for n in names if n not in set(gone)]
            for name, value in zip(rest, await self._read_many(rest), strict=True):
                if value is None:
                    continue
                redacted = redactor.redact(name, value)
                if redacted is None:
                    batch.delete(name)
                    removed += 1
                elif redacted is not value:
                    payload = await redactor.encode(redacted)
                    encoding = text(await self.client.object("encoding", name) or b"")
                    batch.add("RESTORE", name, payload, encoding)
                    rewritten += 1
                if len(batch.ops) >= BATCH_OPS:
                    await flush()
            if len(batch.ops) >= BATCH_OPS:
                await flush()
        await flush()
        return {"state_removed": removed, "state_redacted": rewritten}

    async def _redact_journal(self, redactor: Redactor) -> int:
        """Phase 3: the journal rebuilt with its values redacted, under the same ids."""
        journal = self.keys.journal()
        if not await self.client.exists(journal):
            return 0
        info = await self._stream_info(journal)
        fresh = self.keys.erase_scratch("journal")
        await self.client.delete(fresh)
        changed = copied = 0
        async for page in self._stream_pages(journal):
            pipe = self.client.pipeline(transaction=False)
            for entry_id, fields in page:
                redacted = await redact_entry(redactor, fields)
                if redacted is not None:
                    changed += 1
                pipe.xadd(fresh, redacted or fields, id=entry_id)  # type: ignore[arg-type]
            await pipe.execute()
            copied += len(page)
        await self._swap_stream(journal, fresh, info, copied)
        return changed

    async def _redact_others(self, redactor: Redactor) -> dict[str, int]:
        """Phase 4: the keys outside the journaled state."""
        counts = {"streams_entries": 0, "other_keys": 0, "checkpoint_labels": 0}
        skip = self.keys.erasure_untouched()
        async for names in self._key_pages(self.keys.every_key):
            for name in names:
                if self.keys.is_state(name) or name.startswith(skip):
                    continue
                counts_key = await self._redact_other(redactor, name)
                for k, v in counts_key.items():
                    counts[k] = counts.get(k, 0) + v
        return counts

    async def _redact_other(self, redactor: Redactor, name: str) -> dict[str, int]:
        kind = text(await self.client.type(name))
        client = self.client
        if kind == "stream":
            return {"streams_entries": await self._redact_stream(redactor, name)}
        value = await redactor.read(name)
        if value is None:
            return {}
        holds = redactor.holds
        if name.startswith(self.keys.checkpoint("")):
            labels = {f: ERASED_LABEL for f, v in value.content.items() if holds(v)}
            if labels:
                await client.hset(name, mapping=labels)
            return {"checkpoint_labels": len(labels)}
        if name == self.keys.rollbacks():
            n = 0
            for i, raw in enumerate(value.content):
                if holds(raw) and redactor.needle is not None:
                    scrubbed = scrub_json(json.loads(raw), redactor.needle)
                    await client.lset(name, i, json.dumps(scrubbed))
                    n += 1
            return {"other_keys": n}
        if kind == "hash" and name in self.keys.field_hashes():
            fields = [f for f, v in value.content.items() if holds(f) or holds(v)]
            if fields:
                await client.hdel(name, *fields)
            return {"other_keys": len(fields)}
        if kind in ("string", "ReJSON-RL", "hash"):
            if redactor.whole_holds(name, value) or (
                kind == "hash"
                and any(
                    holds(f) or holds(v) or redactor.is_erased_text(v)
                    for f, v in value.content.items()
                )
            ):
                await client.delete(name)
                return {"other_keys": 1}
            return {}
        if kind == "list":
            kept = [v for v in value.content if not holds(v)]
            if len(kept) == len(value.content):
                return {}
            pipe = client.pipeline(transaction=True)
            pipe.delete(name)
            if kept:
                pipe.rpush(name, *kept)
            await pipe.execute()
            return {"other_keys": len(value.content) - len(kept)}
        members = [m for m, _ in value.content] if kind == "zset" else list(value.content)
        doomed = [m for m in members if redactor.member_gone(m)]
        if doomed:
            if kind == "zset":
                await client.zrem(name, *doomed)
            else:
                await client.srem(name, *doomed)
        return {"other_keys": len(doomed)}

    async def _redact_stream(self, redactor: Redactor, name: str) -> int:
        """A stream rebuilt without the entries that hold the text (XDEL leaves the bytes)."""
        for _attempt in range(5):
            info = await self._stream_info(name)
            doomed = 0
            async for page in self._stream_pages(name):
                doomed += sum(1 for _, fields in page if _fields_hold(redactor, fields))
            if not doomed:
                return 0
            fresh = self.keys.erase_scratch("stream")
            await self.client.delete(fresh)
            kept = 0
            async for page in self._stream_pages(name):
                pipe = self.client.pipeline(transaction=False)
                for entry_id, fields in page:
                    if not _fields_hold(redactor, fields):
                        pipe.xadd(fresh, fields, id=entry_id)  # type: ignore[arg-type]
                        kept += 1
                await pipe.execute()
            try:
                await self._swap_stream(name, fresh, info, kept, watch=True)
            except WatchError:
                continue  # a message arrived meanwhile: rebuild again
            return doomed
        raise ConcurrentAdminError(f"{name} kept changing while it was being redacted; try again")

    async def _stream_info(self, name: str) -> dict[str, Any]:
        raw = await command(self.client, "XINFO", "STREAM", name)
        info = dict(zip(raw[::2], raw[1::2], strict=False)) if isinstance(raw, list) else raw
        out = {text(k): v for k, v in info.items()}
        groups_raw = await command(self.client, "XINFO", "GROUPS", name)
        groups = []
        for g in groups_raw:
            gd = dict(zip(g[::2], g[1::2], strict=False)) if isinstance(g, list) else g
            gd = {text(k): v for k, v in gd.items()}
            pending = await command(self.client, "XPENDING", name, gd["name"], "-", "+", 100_000)
            gd["pending_ids"] = [(p[0], p[1]) for p in pending]
            groups.append(gd)
        out["groups"] = groups
        return out

    async def _swap_stream(
        self, name: str, fresh: str, info: dict[str, Any], copied: int, *, watch: bool = False
    ) -> None:
        """Put ``fresh`` in place of ``name``: same last id, counters and consumer groups."""
        old = self.keys.erase_scratch("old")
        last = text(info.get("last-generated-id", "0-0"))
        added = int(info.get("entries-added") or copied)
        deleted = text(info.get("max-deleted-entry-id") or "0-0")
        async with self.client.pipeline(transaction=True) as pipe:
            if watch:
                await pipe.watch(name)
                now = await self._stream_info(name)
                if text(now.get("last-generated-id", "0-0")) != last:
                    raise WatchError("the stream grew")
                pipe.multi()  # type: ignore[no-untyped-call]
            if not copied:
                pipe.xadd(fresh, {"x": "1"}, id="0-1")
                pipe.xdel(fresh, "0-1")
            pipe.execute_command(
                "XSETID", fresh, last, "ENTRIESADDED", added, "MAXDELETEDID", deleted
            )
            for group in info.get("groups", []):
                pipe.execute_command(
                    "XGROUP",
                    "CREATE",
                    fresh,
                    group["name"],
                    group["last-delivered-id"],
                    "ENTRIESREAD",
                    group.get("entries-read") or 0,
                )
            pipe.rename(name, old)
            pipe.rename(fresh, name)
            pipe.unlink(old)
            await pipe.execute()
        # the pending entries go back to their consumers (FORCE creates the PEL entry)
        for group in info.get("groups", []):
            for entry_id, consumer in group["pending_ids"]:
                with contextlib.suppress(ResponseError):
                    await command(
                        self.client,
                        "XCLAIM",
                        name,
                        group["name"],
                        consumer,
                        0,
                        entry_id,
                        "FORCE",
                        "JUSTID",
                    )

    # -- reading ---------------------------------------------------------------------------
    async def _key_pages(self, match: str) -> AsyncIterator[list[str]]:
        page: list[str] = []
        async for raw in self.client.scan_iter(match=match, count=1000):
            page.append(text(raw))
            if len(page) >= PAGE:
                yield page
                page = []
        if page:
            yield page

    async def _state_pages(self) -> AsyncIterator[list[str]]:
        async for names in self._key_pages(self.keys.every_key):
            state = [n for n in names if self.keys.is_state(n)]
            if state:
                yield state

    async def _read_many(self, names: Sequence[str]) -> list[Value | None]:
        if not names:
            return []
        pipe = self.client.pipeline(transaction=False)
        for name in names:
            pipe.type(name)
        kinds = [text(k) for k in await pipe.execute()]
        pipe = self.client.pipeline(transaction=False)
        for name, kind in zip(names, kinds, strict=True):
            if kind == "string":
                pipe.get(name)
            elif kind == "ReJSON-RL":
                pipe.execute_command("JSON.GET", name)
            elif kind == "hash":
                pipe.hgetall(name)
            elif kind == "list":
                pipe.lrange(name, 0, -1)
            elif kind == "zset":
                pipe.zrange(name, 0, -1, withscores=True)
            elif kind == "set":
                pipe.smembers(name)
            else:
                pipe.exists(name)
        replies = await pipe.execute()
        out: list[Value | None] = []
        for kind, reply in zip(kinds, replies, strict=True):
            if kind in ("string", "hash", "list", "zset"):
                out.append(Value(kind, reply))
            elif kind == "ReJSON-RL":
                out.append(Value(kind, text(reply)))
            elif kind == "set":
                out.append(Value(kind, sorted(reply)))
            else:
                out.append(None)
        return out

    async def _json_many(self, names: Sequence[str]) -> list[Any]:
        if not names:
            return []
        pipe = self.client.pipeline(transaction=False)
        for name in names:
            pipe.execute_command("JSON.GET", name)
        out = []
        for raw in await pipe.execute():
            try:
                out.append(json.loads(raw) if raw is not None else None)
            except (TypeError, ValueError):
                out.append(None)
        return out

    async def _stream_pages(self, name: str) -> AsyncIterator[list[tuple[str, dict[bytes, bytes]]]]:
        lower = "-"
        while True:
            page = await self.client.xrange(name, min=lower, max="+", count=PAGE)
            if not page:
                return
            yield [(text(i), byte_map(f)) for i, f in page]
            lower = f"({text(page[-1][0])}"
            if len(page) < PAGE:
                return

    def _sightings(self, redactor: Redactor, name: str, value: Value) -> list[tuple[str, str]]:
        needle = redactor.needle
        owner = self.keys.owner(name)
        if owner is not None and redactor.key_gone(name):
            return [(f"part of {owner}", "")]
        if redactor.key_gone(name):
            sample: Any = value.content if value.kind in ("string", "ReJSON-RL") else ""
            if value.kind == "ReJSON-RL":
                sample = _holding_string(json.loads(sample), needle) or sample
            elif value.kind == "hash":
                sample = next(
                    (v for v in value.content.values() if redactor.holds(v)),
                    b" ".join(value.content.values()),
                )
            return [("item", _excerpt(sample, needle))]
        if value.kind == "hash":
            return [
                (f"field {f.decode('utf-8', 'replace')}", _excerpt(v, needle))
                for f, v in value.content.items()
                if redactor.field_gone(f, v)
            ]
        if value.kind == "list":
            return [
                (f"element {i}", _excerpt(v, needle))
                for i, v in enumerate(value.content)
                if redactor.holds(v)
            ]
        if value.kind in ("zset", "set"):
            members = [m for m, _ in value.content] if value.kind == "zset" else value.content
            return [("member", _excerpt(m, needle)) for m in members if redactor.member_gone(m)]
        return []

    async def _key_holds(self, redactor: Redactor, name: str) -> str:
        kind = text(await self.client.type(name))
        if kind == "stream":
            async for page in self._stream_pages(name):
                for entry_id, fields in page:
                    if _fields_hold(redactor, fields):
                        return f"stream entry {entry_id}"
            return ""
        value = await redactor.read(name)
        if value is None:
            return ""
        if value.kind in ("string", "ReJSON-RL"):
            return "value" if redactor.holds(value.content) else ""
        if value.kind == "hash":
            for f, v in value.content.items():
                if redactor.holds(f) or redactor.holds(v):
                    return f"field {f.decode('utf-8', 'replace')}"
            return ""
        members = [m for m, _ in value.content] if value.kind == "zset" else value.content
        return "member" if any(redactor.holds(m) for m in members) else ""

    # -- files -----------------------------------------------------------------------------
    async def _data_dir(self) -> Path | None:
        try:
            raw = await self.client.config_get("dir")
        except RedisError:
            return None
        value = raw.get("dir") if isinstance(raw, dict) else None
        path = Path(text(value)) if value else None
        return path if path is not None and path.is_dir() and os.access(path, os.R_OK) else None

    async def _files_holding(self, needle: Needle) -> list[Path]:
        folder = await self._data_dir()
        if folder is None:
            return []
        return await asyncio.to_thread(files_holding, folder, needle)

    async def _rewrite_files(self) -> bool:
        """Have Redis rewrite its AOF (and its RDB, if it keeps one); whether it did."""
        with contextlib.suppress(RedisError):
            await self.client.config_set("rdbcompression", "no")
        try:
            await self._wait_persistence()
            await self.client.bgrewriteaof()
        except ResponseError as e:
            log.warning("the AOF could not be rewritten", error=str(e))
            return False
        await self._wait_persistence()
        folder = await self._data_dir()
        if folder is not None and any(folder.glob("*.rdb")):
            with contextlib.suppress(ResponseError):
                await self.client.bgsave()
            await self._wait_persistence()
        return True

    async def _wait_persistence(self) -> None:
        deadline = time.monotonic() + FILES_WAIT_S
        while time.monotonic() < deadline:
            info = await self.client.info("persistence")
            busy = (
                info.get("aof_rewrite_in_progress")
                or info.get("aof_rewrite_scheduled")
                or info.get("rdb_bgsave_in_progress")
            )
            if not busy:
                return
            await asyncio.sleep(0.05)

    async def _settle_files(self, report: ErasureReport, needle: Needle | None) -> None:
        """Rewrite the AOF and wait until no file under the data directory holds the text."""
        rewritten = await self._rewrite_files()
        if not rewritten:
            report.files = "not rewritten"
        elif needle is None or await self._data_dir() is None:
            report.files = "rewritten"
        else:
            deadline = time.monotonic() + FILES_WAIT_S
            holding = await self._files_holding(needle)
            while holding and time.monotonic() < deadline:
                await asyncio.sleep(0.1)  # Redis deletes the old AOF files in the background
                holding = await self._files_holding(needle)
            report.files = (
                "clean" if not holding else "still holding: " + ", ".join(str(p) for p in holding)
            )
        await self._update_record(report.id, files=report.files)

    async def _settle_pending_files(self) -> None:
        for record in await self.log(limit=10):
            if record.get("files") == "pending":
                done = await self._rewrite_files()
                await self._update_record(
                    record["id"], files="rewritten" if done else "not rewritten"
                )

    async def _update_record(self, erasure_id: str, **changes: str | float) -> None:
        raw = await self.client.lrange(self.keys.erasures(), 0, 9)
        for i, item in enumerate(raw):
            record = json.loads(item)
            if record.get("id") == erasure_id:
                record.update(changes)
                await self.client.lset(self.keys.erasures(), i, json.dumps(record))
                return

    @contextlib.asynccontextmanager
    async def _archive(self) -> AsyncIterator[Any]:
        from aether.checkpoints.archive import Archive, open_archive

        assert self.archive_dsn is not None
        async with open_archive(self.archive_dsn) as conn:
            yield Archive(conn, self.client, self.keys)


async def redact_entry(redactor: Redactor, fields: dict[bytes, bytes]) -> dict[bytes, bytes] | None:
    """A journal entry's fields redacted; ``None`` when nothing changes."""
    out = dict(fields)
    changed = False
    for name in (b"i", b"f"):
        if name in fields:
            ops = await redactor.ops(decode_ops(fields[name]))
            if ops is not None:
                out[name] = msgpack.packb(ops, use_bin_type=False)
                changed = True
    if b"k" in fields and redactor.needle is not None:
        touched = msgpack.unpackb(fields[b"k"], raw=True)
        if isinstance(touched, list):
            kept = [k for k in touched if not redactor.needle.in_value(k)]
            if len(kept) != len(touched):
                out[b"k"] = msgpack.packb(kept, use_bin_type=False)
                changed = True
    return out if changed else None


async def entry_holds(redactor: Redactor, fields: dict[bytes, bytes]) -> bool:
    """Whether a journal entry (or an archived one) holds the redactor's text."""
    for name in (b"i", b"f"):
        if name not in fields:
            continue
        for op in decode_ops(fields[name]):
            if await _op_holds(redactor, op):
                return True
    return any(redactor.holds(fields.get(n, b"")) for n in (b"a", b"r", b"to", b"k"))


async def _op_holds(redactor: Redactor, op: list[bytes]) -> bool:
    needle = redactor.needle
    assert needle is not None
    for arg in op[1:]:
        if op[0] == b"RESTORE" and arg is op[2]:
            if needle.maybe_in(arg):
                value = await redactor.decode(arg)
                if value is not None and value_holds(redactor, value):
                    return True
        elif redactor.holds(arg):
            return True
    return False


def value_holds(redactor: Redactor, value: Value) -> bool:
    """Whether a decoded value holds the redactor's text anywhere."""
    content = value.content
    if value.kind in ("string", "ReJSON-RL"):
        return redactor.holds(content)
    if value.kind == "hash":
        return any(redactor.holds(f) or redactor.holds(v) for f, v in content.items())
    if value.kind == "zset":
        return any(redactor.holds(m) for m, _ in content)
    return any(redactor.holds(v) for v in content)


def _fields_hold(redactor: Redactor, fields: dict[bytes, bytes]) -> bool:
    return any(redactor.holds(k) or redactor.holds(v) for k, v in fields.items())


def _holding_string(value: Any, needle: Needle | None) -> str | None:
    """The first string in a JSON value that holds the needle (the first string without one)."""
    if isinstance(value, str):
        return value if needle is None or needle.in_text(value) else None
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    )
    for child in children:
        found = _holding_string(child, needle)
        if found is not None:
            return found
    return None


def _excerpt(value: Any, needle: Needle | None, width: int = 60) -> str:
    raw = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if needle is None:
        return raw[:width]
    at = raw.casefold().find(needle.text.casefold())
    start = max(0, at - width // 2) if at >= 0 else 0
    return ("…" if start else "") + raw[start : start + width]


def files_holding(folder: Path, needle: Needle, chunk: int = 4 * 1024 * 1024) -> list[Path]:
    """The files under ``folder`` that hold the needle (read in overlapping chunks)."""
    overlap = max(len(f.encode()) for f in needle.forms) + 64
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            with path.open("rb") as f:
                tail = b""
                while True:
                    block = f.read(chunk)
                    if not block:
                        break
                    window = tail + block
                    if needle.maybe_in(window) and needle.in_text(
                        window.decode("utf-8", "replace")
                    ):
                        found.append(path)
                        break
                    tail = window[-overlap:]
        except OSError:
            continue
    return found

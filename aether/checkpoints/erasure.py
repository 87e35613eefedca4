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

Writes wait through phases 1-3 only: once the journal is rebuilt nothing written can bring
the text back, so the hold opens writes (``writes: open``) and stays only as the marker an
interrupted run resumes from (and that keeps the archive from syncing meanwhile).

The hold never keeps the text in plain form: it keeps a salted hash and the text sealed
with a key kept in a file outside Redis (:mod:`aether.checkpoints.erasure_seal`), so a run
cut short leaves nothing that ``erase verify`` finds, yet can be finished.

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
import json
import os
import secrets
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError

from aether.checkpoints.chain import JournalChain, Rechainer
from aether.checkpoints.erasure_model import (
    NAMED,
    NAMES_NAMED,
    ErasureHooks,
    ErasurePlan,
    ErasureReport,
    Sighting,
    excerpt,
    holding_string,
    salted_hash,
)
from aether.checkpoints.erasure_seal import EraseKey, seal, unseal
from aether.checkpoints.manager import Checkpoints
from aether.codec import byte_map, text
from aether.errors import (
    ConcurrentAdminError,
    ErasureStuckError,
    InvalidOperationError,
    NotFoundError,
)
from aether.ids import new_id
from aether.keys import Keyspace
from aether.store.entry_redaction import entry_holds, entry_names, fields_hold, redact_entry
from aether.store.journal import last_position
from aether.store.lock import StateLock
from aether.store.outside_redaction import redact_outside_state
from aether.store.persistence import data_dir, files_holding, rewrite_files, wait_until_clean
from aether.store.read_ahead import key_pages, read_ahead
from aether.store.redaction import ALIAS_SEP, Needle, Redactor, Taint
from aether.store.state import Mutation, Store, decode_ops
from aether.store.streams import Fields, rebuild_stream, stream_pages
from aether.store.values import Value, read_kinds, read_screened_documents, read_values

log = structlog.get_logger(__name__)

__all__ = ["Eraser", "pending_view"]

LOCK_TTL_S = 10.0
BATCH_OPS = 200
PAGE = 500
ERASURE_HISTORY = 1000
PHASES = ("scan", "state", "journal", "others", "archive", "hooks")


def pending_view(hold: dict[str, str] | None) -> dict[str, Any] | None:
    """What an operator is shown of an erasure's hold (never its sealed text or salt)."""
    if hold is None:
        return None
    return {
        "id": hold.get("id", ""),
        "phase": hold.get("phase", ""),
        "actor": hold.get("actor", ""),
        "started": int(hold.get("started") or 0) / 1000,
        "checkpoint": hold.get("checkpoint", ""),
        "writes": "open" if hold.get("writes") == "open" else "waiting",
        "resolve": "aether erase resume (or start the daemon: aether up)",
    }


def default_key_dir() -> Path:
    """A private folder for erasure keys when no ``AETHER_HOME`` is given."""
    import tempfile

    return Path(tempfile.gettempdir()) / f"aether-erasures-{os.getuid()}"


class Eraser:
    """Erasure on one namespace.

    Args:
        client: the namespace's client.
        keys: its keyspace.
        checkpoints: its checkpoints (the admin lock, the checkpoint taken first).
        archive_dsn: the PostgreSQL archive's DSN, when one follows the namespace.
        hooks: what the memory layer adds.
        actor: who erases (recorded).
        key_dir: where a running erasure keeps the key of its sealed text
            (``AETHER_HOME/erasures``; a private temporary folder when not given).
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
        key_dir: Path | None = None,
    ) -> None:
        self.client = client
        self.key_dir = key_dir or default_key_dir()
        self.keys = keys
        self.checkpoints = checkpoints
        self.store = Store(client, keys, actor=actor, signer=checkpoints.signer)
        self.archive_dsn = archive_dsn
        self.hooks = hooks or ErasureHooks()
        self.actor = actor
        self._phase, self._phase_started = PHASES[0], 0.0
        self._phase_s: dict[str, float] = {}
        self._collections: list[str] | None = None
        """This run's scan's collections and items' secondary keys (see _redacted_pages)."""

    # -- the public face ---------------------------------------------------------------
    async def plan(
        self, subject: str | None = None, item: str | None = None, aliases: Iterable[str] = ()
    ) -> ErasurePlan:
        """What erasing ``subject`` (or the item ``item``) would remove; changes nothing.

        ``aliases`` are other spellings of ``subject`` erased with it (the graph's names).

        Raises:
            InvalidOperationError: neither or both given, or the text is too short or long.
            NotFoundError: ``item`` names no item.
        """
        needle, item_key = await self._target(subject, item, aliases)
        redactor = Redactor(self.client, self.keys, needle, Taint())
        plan = ErasurePlan(counts=await self._scan(redactor, item_key))
        present: set[str] = set()
        removed = rewritten = 0  # as the run's state phase counts them
        async for page in self._state_pages():
            for name in page:
                if self.keys.is_vector(name) and redactor.key_gone(name):
                    removed += 1
                    owner = self.keys.owner(name)
                    plan.items.setdefault(self.keys.tier(name), []).append(
                        {"key": name, "what": f"part of {owner}", "excerpt": ""}
                    )
            names = [n for n in page if not self.keys.is_vector(n)]
            for name, value in zip(names, await read_values(self.client, names), strict=True):
                if value.type == "none":
                    continue
                redacted = None if redactor.key_gone(name) else redactor.redact(name, value)
                if redacted is None:
                    removed += 1
                elif redacted is not value:
                    rewritten += 1
                present.add(name)
                for what, shown in self._sightings(redactor, name, value):
                    plan.items.setdefault(self.keys.tier(name), []).append(
                        {"key": name, "what": what, "excerpt": shown}
                    )
        plan.counts.update(state_removed=removed, state_redacted=rewritten)
        plan.history_only = sorted(
            k for k in redactor.taint.keys if k not in present and self.keys.is_state(k)
        )
        if subject is not None:
            listed = {item["key"] for items in plan.items.values() for item in items}
            plan.elsewhere = [
                s
                for s in await self.verify(subject, aliases)
                if not (s.store == "redis" and s.place in listed)
            ]
        return plan

    async def erase(
        self, subject: str | None = None, item: str | None = None, aliases: Iterable[str] = ()
    ) -> ErasureReport:
        """Erase ``subject`` (or the item ``item``) everywhere; see the module docs.

        ``aliases`` are other spellings of ``subject`` erased with it (the graph's names).

        Raises:
            InvalidOperationError: neither or both given, or the text is too short or long.
            NotFoundError: ``item`` names no item.
            ConcurrentAdminError: a rollback, restore or another erasure is running.
        """
        needle, item_key = await self._target(subject, item, aliases)
        await self.resume()
        started = time.monotonic()
        async with self._lock() as lock:
            if await self.client.exists(self.keys.write_hold()):
                raise ConcurrentAdminError(
                    "an interrupted rollback holds writes: finish it first "
                    "('aether checkpoint rollback' or start the daemon)"
                )
            hold, key = await self._begin(lock, needle, item_key, secrets.token_hex(8))
            report = await self._run(lock, hold, key, needle.sealed() if needle else "")
        report.seconds = time.monotonic() - started
        await self._settle_files(report, needle)
        await self._update_record(report.id, seconds=round(report.seconds, 3))
        return report

    async def resume(self, subject: str | None = None) -> ErasureReport | None:
        """Finish an erasure a crash cut short; ``None`` when none was.

        Also rewrites the AOF for a finished erasure whose files were never rewritten.

        Args:
            subject: the erased text, needed only when the erasure's key file is gone
                (checked against the salted hash the hold keeps).

        Raises:
            ConcurrentAdminError: an erasure or rollback is running now.
            ErasureStuckError: the key file is gone and ``subject`` was not given (or is
                not the erased text).
        """
        hold = await self.pending()
        if hold is None:
            await self._settle_pending_files()
            return None
        async with self._lock() as lock:
            hold["token"] = lock.token
            await self.client.hset(self.keys.write_hold(), "token", lock.token)
            key, subject = self._opened(hold, subject)
            log.warning("finishing an interrupted erasure", id=hold.get("id"), phase=hold["phase"])
            report = await self._run(lock, hold, key, subject)
            report.resumed = True
        await self._settle_files(report, Needle.unsealed(subject) if subject else None)
        return report

    async def pending(self) -> dict[str, str] | None:
        """The hold of an erasure running or cut short (never its text), or ``None``."""
        raw = byte_map(await self.client.hgetall(self.keys.write_hold()))
        hold = {k.decode(): v.decode() for k, v in raw.items()}
        return hold if hold.get("kind") == "erase" else None

    def _opened(self, hold: dict[str, str], subject: str | None) -> tuple[bytes, str]:
        """The erasure's key and text, from its key file or the text the operator gives."""
        if "text" in hold:  # a hold written before texts were sealed
            return EraseKey(self.key_dir, self.keys.ns, hold["id"]).create(), hold["text"]
        key_file = EraseKey(self.key_dir, self.keys.ns, hold["id"])
        key = key_file.read()
        if key is not None:
            return key, unseal(key, hold["sealed"]) if hold.get("sealed") else ""
        if not hold.get("sealed"):  # an erasure by id: no text to open
            return key_file.create(), ""
        if subject is not None and salted_hash(subject, hold["salt"]) == hold.get("text_hash"):
            return key_file.create(), subject
        raise ErasureStuckError(
            f"erasure {hold.get('id')} was cut short in phase {hold.get('phase')!r} and its key "
            f"file {key_file.path} is gone (the erasure ran on another machine, or the file "
            "was removed); writes wait until it is finished: run "
            "`aether erase resume 'THE ERASED TEXT'`"
            + (" (that text does not match the erasure's)" if subject is not None else "")
        )

    async def interrupted(self) -> bool:
        """Whether an erasure holds the namespace's writes (running, or cut short)."""
        return await self.client.hget(self.keys.write_hold(), "kind") == b"erase"

    async def log(self, limit: int = 50) -> list[dict[str, Any]]:
        """The erasure records, newest first."""
        raw = await self.client.lrange(self.keys.erasures(), 0, max(0, limit - 1))
        return [json.loads(r) for r in raw]

    async def verify(self, subject: str, aliases: Iterable[str] = ()) -> list[Sighting]:
        """Every place the text (or an alias) is still found: keys, journal, files, archive.

        Raises:
            InvalidOperationError: the text is too short or too long.
        """
        needle = Needle(subject, aliases)
        redactor = Redactor(self.client, self.keys, needle, Taint())
        found: list[Sighting] = []

        async def read(names: list[str]) -> tuple[list[str], list[Value | None]]:
            return await self._page_values(redactor, names)

        # Redis reads the next page's documents while this one is judged
        async for names, (kinds, values) in read_ahead(self._key_pages(), read):
            held = await self._page_holds(redactor, names, kinds, values)
            found += [Sighting("redis", name, w) for name, w in held]
            found += [Sighting("redis", name, NAMED) for name in names if redactor.names_it(name)]
        folder = await data_dir(self.client)
        if folder is not None:
            holding = await asyncio.to_thread(files_holding, folder, needle)
            found += [Sighting("redis files", str(p)) for p in holding]
        if self.archive_dsn:
            async with self._archive() as archive:
                found += [Sighting("archive", t, row) for t, row in await archive.holding(redactor)]
        if self.hooks.find_elsewhere is not None:
            found += await self.hooks.find_elsewhere(needle)
        return found

    # -- target, lock, hold ------------------------------------------------------------
    async def _target(
        self, subject: str | None, item: str | None, aliases: Iterable[str] = ()
    ) -> tuple[Needle | None, str | None]:
        if (subject is None) == (item is None):
            raise InvalidOperationError("erase either a text or one item (--id), not both")
        if subject is not None:
            return Needle(subject, aliases), None
        wanted = (item or "").strip()
        if not wanted or any(c in wanted for c in "*?[]\\: "):
            raise InvalidOperationError(f"{item!r} is not an item id")
        matches: list[str] = []
        async for names in self._state_pages():
            matches += [n for n in names if n.endswith(":" + wanted) and not self.keys.owner(n)]
        if matches:  # the item itself, not what belongs to it (a belief's history)
            return None, min(matches, key=len)
        raise NotFoundError(f"no item with id {wanted!r} in namespace {self.keys.ns!r}")

    @contextlib.asynccontextmanager
    async def _lock(self) -> AsyncIterator[StateLock]:
        """The admin lock, kept alive while the erasure runs (a crashed one's expires)."""
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

    async def _begin(
        self, lock: StateLock, needle: Needle | None, item_key: str | None, salt: str
    ) -> tuple[dict[str, str], bytes]:
        """Take the checkpoint and set the write hold: from here on a crash is resumed.

        The hold keeps the text sealed; its key goes to a file first.
        """
        erasure_id = new_id()
        pre = await self.checkpoints.create(
            label=f"before erasure {erasure_id}", reason="pre-erase", actor=self.actor
        )
        key = await asyncio.to_thread(EraseKey(self.key_dir, self.keys.ns, erasure_id).create)
        subject = needle.sealed() if needle else ""
        hold = {
            "kind": "erase",
            "token": lock.token,
            "id": erasure_id,
            "sealed": seal(key, subject) if subject else "",
            "text_hash": salted_hash((needle.text if needle else "") or item_key or "", salt),
            "item": item_key or "",
            "actor": self.actor,
            "phase": PHASES[0],
            "started": str(int(time.time() * 1000)),
            "checkpoint": pre.id,
            "salt": salt,
            "counts": "{}",
        }
        await self.client.hset(self.keys.write_hold(), mapping=hold)  # type: ignore[arg-type]
        return hold, key

    # -- the phases --------------------------------------------------------------------
    async def _run(
        self, lock: StateLock, hold: dict[str, str], key: bytes, subject: str
    ) -> ErasureReport:
        needle = Needle.unsealed(subject) if subject else None
        counts: dict[str, int] = json.loads(hold.get("counts") or "{}")
        taint_key = self.keys.erase_scratch("taint")
        redactor = Redactor(self.client, self.keys, needle, Taint())
        self._collections = None
        phase = hold.get("phase", PHASES[0])
        self._phase, self._phase_started, self._phase_s = phase, time.monotonic(), {}
        if phase == "scan":
            await self.client.delete(taint_key)
            counts.update(await self._scan(redactor, hold.get("item") or None))
            members = [
                f"t:{seal(key, m[2:])}" if m.startswith("t:") else m
                for m in redactor.taint.to_members()
            ]
            for i in range(0, len(members), PAGE):
                await self.client.sadd(taint_key, *members[i : i + PAGE])
            phase = await self._advance("state", counts)
        else:
            members = [text(m) for m in await self.client.smembers(taint_key)]
            redactor.taint = Taint.from_members(
                f"t:{unseal(key, m[2:])}" if m.startswith("t:") else m for m in members
            )
            redactor.refresh()
        if phase == "state":
            counts.update(await self._redact_state(redactor, lock.token))
            phase = await self._advance("journal", counts)
        if phase == "journal":
            counts["journal_entries"] = await self._redact_journal(redactor, hold.get("id", ""))
            # nothing written from here on can bring the text back: writes go on
            await self.client.hset(self.keys.write_hold(), "writes", "open")
            phase = await self._advance("others", counts)
        if phase == "others":
            async for names in self._key_pages():
                found = await redact_outside_state(self.client, self.keys, redactor, names)
                for kind, n in found.items():
                    counts[kind] = counts.get(kind, 0) + n
            phase = await self._advance("archive", counts)
        if phase == "archive":
            if self.archive_dsn:
                async with self._archive() as archive:
                    counts.update(await archive.redact(redactor))
            phase = await self._advance("hooks", counts)
        if phase == "hooks" and self.hooks.after_state is not None:
            documents = self.keys.memory_document_prefixes()
            gone = sorted(k for k in redactor.taint.keys if k.startswith(documents))
            counts["mirror_points"] = await self.hooks.after_state(gone, needle)
        self._phase_s[self._phase] = time.monotonic() - self._phase_started
        report = ErasureReport(
            id=hold["id"],
            at=int(hold.get("started") or 0),
            actor=hold.get("actor", self.actor),
            text_hash=hold.get("text_hash")
            or salted_hash(subject.split(ALIAS_SEP)[0] or hold.get("item", ""), hold["salt"]),
            salt=hold["salt"],
            checkpoint=hold.get("checkpoint", ""),
            counts=counts,
            phase_s=self._phase_s,
        )
        pipe = self.client.pipeline(transaction=True)
        pipe.lpush(self.keys.erasures(), json.dumps(report.to_dict()))
        pipe.ltrim(self.keys.erasures(), 0, ERASURE_HISTORY - 1)
        pipe.delete(self.keys.write_hold(), taint_key)
        await pipe.execute()
        EraseKey(self.key_dir, self.keys.ns, hold["id"]).remove()
        log.info("erasure done", id=report.id, counts=counts)
        return report

    async def _advance(self, phase: str, counts: dict[str, int]) -> str:
        now = time.monotonic()
        self._phase_s[self._phase] = now - self._phase_started
        self._phase, self._phase_started = phase, now
        await self.client.hset(
            self.keys.write_hold(), mapping={"phase": phase, "counts": json.dumps(counts)}
        )
        log.debug("erasure phase", phase=phase)
        return phase

    async def _scan(self, redactor: Redactor, item_key: str | None) -> dict[str, int]:
        """Phase 1: what ever held the text, in the state, the journal and the archive."""
        if item_key is not None:
            redactor.taint.keys.add(item_key)
            (item,) = await read_values(self.client, [item_key])
            if item.type == "json" and isinstance(item.content, dict):
                content = item.content.get("content")
                if isinstance(content, str):
                    redactor.taint.texts.add(content)
        self._collections = []
        documents = self.keys.memory_document_prefixes()

        async def read(state_names: list[str]) -> tuple[list[str], list[str], list[Value | None]]:
            # a vector hash's text fields copy its document's, which is read itself
            names = [n for n in state_names if not self.keys.is_vector(n)]
            kinds, values = await read_screened_documents(  # most cannot hold it: not decoded
                self.client,
                names,
                lambda n: n.startswith(documents),
                redactor.may_hold_document,
                redactor.may_hold_documents,
            )
            return names, kinds, values

        # Redis reads the next page's documents while this one is judged
        async for state_names, (names, kinds, values) in read_ahead(self._state_pages(), read):
            self._collections.extend(n for n in state_names if self.keys.is_secondary(n))
            self._collections.extend(
                n
                for n, k in zip(names, kinds, strict=True)
                if k != "none" and not redactor.is_whole_item(n, k) and not self.keys.owner(n)
            )
            named = redactor.may_name("\n".join(names).encode())  # one test for the page
            for name, value in zip(names, values, strict=True):
                if value is None:
                    if named:
                        redactor.observe_name(name)
                elif value.type != "none":
                    redactor.observe(name, value)
        async for page in stream_pages(self.client, self.keys.journal()):
            for _, fields in page:
                for field_name in (b"i", b"f"):
                    if field_name in fields:
                        await redactor.observe_ops(decode_ops(fields[field_name]))
        if self.archive_dsn:
            async with self._archive() as archive:
                await archive.observe(redactor)
        redactor.taint.close(self.keys)
        redactor.refresh()
        return {"items": len(redactor.taint.keys)}

    async def _redact_state(self, redactor: Redactor, token: str) -> dict[str, int]:
        """Phase 2: the items removed and the collections redacted, journaled in batches."""
        removed = rewritten = 0
        documents = self.keys.memory_document_prefixes()
        batch = Mutation()
        docs: list[dict[str, Any]] = []

        async def flush() -> None:
            nonlocal batch, docs
            if batch.ops:
                if docs and self.hooks.on_delete is not None:
                    start = len(batch.ops)
                    self.hooks.on_delete(batch, docs)
                    # a counter the text names is dropped, not counted down into being again
                    batch.ops[start:] = [
                        op
                        for op in batch.ops[start:]
                        if op.cmd != "ZINCRBY" or not redactor.member_gone(op.args[1], op.key)
                    ]
                await self.store.apply(batch, "erase", self.actor, hold_token=token)
            batch, docs = Mutation(), []

        async for page in self._redacted_pages(redactor):
            vectors = [n for n in page if self.keys.is_vector(n)]
            for name in vectors:  # a vector goes with its document: it need not be read
                if redactor.key_gone(name):
                    batch.delete(name)
                    removed += 1
            names = [n for n in page if not self.keys.is_vector(n)]
            kinds = await read_kinds(self.client, names)
            # a whole item the scan did not taint stays as it is: it need not be read
            kept = [
                (n, k)
                for n, k in zip(names, kinds, strict=True)
                if k != "none" and (redactor.key_gone(n) or not redactor.is_whole_item(n, k))
            ]
            gone = [(n, k) for n, k in kept if redactor.key_gone(n)]
            collections = [(n, k) for n, k in kept if not redactor.key_gone(n)]
            for name, value in await self._values(gone):
                batch.delete(name)
                removed += 1
                if name.startswith(documents) and isinstance(value.content, dict):
                    docs.append(value.content)
                if len(batch.ops) >= BATCH_OPS:
                    await flush()
            if collections:  # read once the deletions have counted their counters down
                await flush()
            for name, value in await self._values(collections):
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
        await flush()
        return {"state_removed": removed, "state_redacted": rewritten}

    async def _values(self, named: list[tuple[str, str]]) -> list[tuple[str, Value]]:
        """The values of keys of known kinds, as (key, value), those still there."""
        values = await read_values(self.client, [n for n, _ in named], [k for _, k in named])
        return [(n, v) for (n, _), v in zip(named, values, strict=True) if v.type != "none"]

    async def _redact_journal(self, redactor: Redactor, erasure_id: str) -> int:
        """Phase 3: the journal rebuilt with its values redacted, under the same ids.

        The chain is recomputed over the redacted entries and the redaction recorded.
        """
        chain = JournalChain(self.client, self.keys, self.checkpoints.signer)
        rechainer = Rechainer(chain, f"erasure {erasure_id}")

        async def redact(fields: Fields) -> Fields:
            # an entry whose values changed is hashed again, and so is every later one
            return rechainer.rechained_fields(await redact_entry(redactor, fields) or fields)

        scratch = (self.keys.erase_scratch("journal"), self.keys.erase_scratch("old"))
        changed = await rebuild_stream(self.client, self.keys.journal(), scratch, redact)
        last = await last_position(self.client, self.keys.journal())
        await rechainer.finish(last if last != "0-0" else None)
        return changed

    # -- reading -----------------------------------------------------------------------
    async def _key_pages(self) -> AsyncIterator[list[str]]:
        async for page in key_pages(self.client, self.keys.every_key, PAGE):
            yield page

    async def _state_pages(self) -> AsyncIterator[list[str]]:
        async for names in self._key_pages():
            state = [n for n in names if self.keys.is_state(n)]
            if state:
                yield state

    async def _redacted_pages(self, redactor: Redactor) -> AsyncIterator[list[str]]:
        """The state keys phase 2 may change, a page at a time.

        After this run's scan: the erased items with their vectors, the other keys the
        scan saw belonging to an item, then the collections it saw (writes wait, so nothing
        else changed): not every key again with its type (at a million memories a second
        pass over two million keys). A run resumed after its scan reads every state key.
        Within a page, too, the collections are read after the items' deletions are
        applied: a counter read before them would be restored over their decrements.
        """
        if self._collections is None:
            async for page in self._state_pages():
                yield page
            return
        gone = sorted(k for k in redactor.taint.keys if self.keys.is_state(k))
        vectors = [self.keys.vector(k) for k in gone]
        kinds = await read_kinds(self.client, vectors)
        names = set(gone) | {v for v, kind in zip(vectors, kinds, strict=True) if kind != "none"}
        # the items first: the collections (and the counters) are read after their deletions
        ordered = sorted(names) + sorted(set(self._collections) - names)
        for i in range(0, len(ordered), PAGE):
            yield ordered[i : i + PAGE]

    def _sightings(self, redactor: Redactor, name: str, value: Value) -> list[tuple[str, str]]:
        """What of a key goes, as (what, excerpt) pairs, for a dry run."""
        needle = redactor.needle
        owner = self.keys.owner(name)
        if redactor.key_gone(name):
            if owner is not None:
                return [(f"part of {owner}", "")]
            return [("item", excerpt(self._sample(redactor, value), needle))]
        redacted = redactor.redact(name, value)
        if redacted is value:
            return []
        if value.type == "hash":
            return [
                (f"field {f}", excerpt(v, needle))
                for f, v in value.content.items()
                if redactor.field_gone(f, v, name)
            ]
        if value.type == "list":
            return [
                (f"element {i}", excerpt(v, needle))
                for i, v in enumerate(value.content)
                if redactor.holds(v)
            ]
        if redacted is None and value.type in ("string", "json"):
            return [("item", excerpt(self._sample(redactor, value), needle))]
        return [
            ("member", excerpt(m, needle)) for m in value.content if redactor.member_gone(m, name)
        ]

    @staticmethod
    def _sample(redactor: Redactor, value: Value) -> Any:
        if value.type == "json":
            return holding_string(value.content, redactor.needle) or json.dumps(value.content)
        if value.type == "hash":
            texts = list(value.content.values())
            return next((v for v in texts if redactor.holds(v)), b" ".join(texts))
        return value.content if value.type == "string" else ""

    async def _page_values(
        self, redactor: Redactor, names: list[str]
    ) -> tuple[list[str], list[Value | None]]:
        """A page of keys' types and values, in two round trips whatever its size.

        One per key made a verification of 100k memories take minutes. A document that
        cannot hold the text is not decoded (``None``); a stream's entries are not read.
        """
        documents = self.keys.memory_document_prefixes()
        return await read_screened_documents(
            self.client,
            names,
            lambda n: n.startswith(documents),
            redactor.may_hold_document,
            redactor.may_hold_documents,
        )

    async def _page_holds(
        self, redactor: Redactor, names: list[str], kinds: list[str], read: list[Value | None]
    ) -> list[tuple[str, str]]:
        """Where a page of keys holds the text, as (key, where) in the page's order.

        The page is read by :meth:`_page_values`; a stream is read page by page.
        """
        streams = {n for n, kind in zip(names, kinds, strict=True) if kind == "stream"}
        values = dict(zip(names, read, strict=True))
        found: list[tuple[str, str]] = []
        for name in names:
            value = values.get(name)
            if name in streams:
                where = await self._stream_holds(redactor, name)
            else:
                where = self._value_holds(redactor, name, value) if value is not None else []
            found += [(name, w) for w in where]
        return found

    async def _stream_holds(self, redactor: Redactor, name: str) -> list[str]:
        """The entries of a stream that hold the text (the journal's values decoded)."""
        found = []
        journal = name == self.keys.journal()
        async for page in stream_pages(self.client, name):
            for entry_id, fields in page:
                if (
                    await entry_holds(redactor, fields)
                    if journal
                    else fields_hold(redactor, fields)
                ):
                    found.append(f"entry {entry_id}")
                elif journal and entry_names(redactor, fields):
                    found.append(f"entry {entry_id}: {NAMES_NAMED}")
        return found

    @staticmethod
    def _value_holds(redactor: Redactor, name: str, value: Value) -> list[str]:
        """Where one value holds the text: a field of a hash, or the value itself."""
        if value.type == "hash":  # the journal's digests: fields named by their keys
            return [
                f"field {f}: {NAMES_NAMED}" if redactor.names_it(f) else f"field {f}"
                for f, v in value.content.items()
                if redactor.field_gone(f, v, name)
            ]
        return ["value"] if redactor.value_holds(value, name) else []

    # -- files and the record ------------------------------------------------------------
    async def _settle_files(self, report: ErasureReport, needle: Needle | None) -> None:
        """Rewrite the AOF and wait until no file under the data directory holds the text."""
        if not await rewrite_files(self.client):
            report.files = "not rewritten"
        elif needle is None:
            report.files = "rewritten"
        else:
            holding = await wait_until_clean(self.client, needle)
            if holding is None:
                report.files = "rewritten (the data directory is not on this machine)"
            elif holding:
                report.files = (
                    "still holding (the server's other namespaces may hold the text too): "
                    + ", ".join(str(p) for p in holding)
                )
            else:
                report.files = "clean"
        await self._update_record(report.id, files=report.files)

    async def _settle_pending_files(self) -> None:
        for record in await self.log(limit=10):
            if record.get("files") == "pending":
                done = await rewrite_files(self.client)
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

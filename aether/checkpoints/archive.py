"""The PostgreSQL archive: the journal streamed into a table plus periodic base snapshots.

Like PostgreSQL's own base backup + WAL: ``restore`` loads the newest base snapshot at
or before the target into an empty Redis, then replays the archived journal up to the
target, re-creating the journal entries under their own ids, so checkpoints inside the
replayed range work again.

A base snapshot is taken page by page (each ``aether_snapshot`` call at most
``budget_ms``) while writes go on, like an online base backup: every key's DUMP is
stored with the journal position of its page. Replay starts after the first page's
position and skips, for each entry, the keys whose DUMP was taken at or after it (their
state already includes it). The snapshot serves targets from its last page's position on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
import msgpack
import structlog
from redis.asyncio import Redis

from aether.checkpoints.chain import JournalChain, Rechainer
from aether.codec import command, text
from aether.config import Settings
from aether.errors import AmbiguousIdError, ArchiveError, NotFoundError
from aether.ids import new_id
from aether.keys import Keyspace
from aether.store.entry_redaction import entry_holds, entry_names, redact_entry
from aether.store.functions import Functions
from aether.store.journal import compare_ids, entries_after, touched_keys
from aether.store.lock import StateLock
from aether.store.redaction import ERASED_LABEL, Redactor
from aether.store.state import decode_ops

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SyncReport:
    """What one ``sync`` copied."""

    entries: int
    checkpoints: int
    snapshot: str | None
    cursor: str | None


@dataclass(frozen=True)
class RestoreReport:
    """What one ``restore`` rebuilt."""

    snapshot: str
    keys_restored: int
    entries_replayed: int
    checkpoints: int
    position: str


def _pos(ms: int, seq: int) -> str:
    return f"{ms}-{seq}"


def _split(pos: str) -> tuple[int, int]:
    ms, seq = pos.split("-", 1)
    return int(ms), int(seq)


@asynccontextmanager
async def open_archive(dsn: str) -> AsyncIterator[asyncpg.Connection]:
    """Connect to PostgreSQL and apply pending migrations.

    Raises:
        ArchiveError: PostgreSQL cannot be reached.
    """
    from aether.checkpoints.archive_schema import migrate

    try:
        conn = await asyncpg.connect(dsn, timeout=10)
    except (OSError, asyncpg.PostgresError) as e:
        raise ArchiveError(f"cannot reach the PostgreSQL archive: {e}") from e
    try:
        await migrate(conn)
        yield conn
    finally:
        await conn.close()


class Archive:
    """Archive operations for one namespace.

    Args:
        conn: a migrated PostgreSQL connection (:func:`open_archive`).
        client: a verified Redis client.
        keys: the namespace's keyspace.
        snapshot_every: journal entries between two base snapshots.
        batch_size: journal entries per insert batch.
        budget_ms: the most work one snapshot page does in Redis.
    """

    def __init__(
        self,
        conn: asyncpg.Connection,
        client: Redis,
        keys: Keyspace,
        snapshot_every: int = 10_000,
        batch_size: int = 1_000,
        budget_ms: int = 100,
    ) -> None:
        self.conn = conn
        self.client = client
        self.keys = keys
        self.functions = Functions(client, keys)
        self.snapshot_every = snapshot_every
        self.batch_size = batch_size
        self.budget_ms = budget_ms

    @classmethod
    def from_settings(
        cls, conn: asyncpg.Connection, client: Redis, keys: Keyspace, settings: Settings
    ) -> Archive:
        """An archive with the snapshot cadence, batch size and step budget of ``settings``."""
        return cls(
            conn,
            client,
            keys,
            settings.archive.snapshot_every,
            settings.archive.batch_size,
            settings.checkpoints.budget_ms,
        )

    async def archived_position(self) -> str | None:
        """Id of the newest archived journal entry."""
        row = await self.conn.fetchrow(
            "SELECT ms, seq FROM aether_journal WHERE ns = $1 ORDER BY ms DESC, seq DESC LIMIT 1",
            self.keys.ns,
        )
        return None if row is None else _pos(row["ms"], row["seq"])

    async def _latest_snapshot(self) -> asyncpg.Record | None:
        return await self.conn.fetchrow(
            "SELECT snapshot_id, ms, seq FROM aether_snapshots WHERE ns = $1 "
            "ORDER BY ms DESC, seq DESC LIMIT 1",
            self.keys.ns,
        )

    async def sync(self, progress: Callable[[int], None] | None = None) -> SyncReport:
        """Copy new journal entries and the kept checkpoints; snapshot when due.

        Args:
            progress: told how many more journal entries were copied, batch by batch.
        """
        if await self.client.hget(self.keys.write_hold(), "kind") == b"erase":
            # the erasure redacts the journal and then the archive: copying meanwhile could
            # bring back what it already redacted here
            log.info("an erasure is running; the archive syncs next time")
            return SyncReport(0, 0, None, await self.archived_position())
        await self._follow()
        fresh_snapshot = await self._latest_snapshot() is None
        if fresh_snapshot:
            await self.snapshot()
        cursor = await self.archived_position() or "0-0"
        gap = await self._trimmed_past(cursor)
        copied = 0
        batch: list[tuple[Any, ...]] = []
        async for entry in entries_after(self.client, self.keys.journal(), cursor, self.batch_size):
            # written while no archive followed (the cursor key was lost): not replayable
            gap = gap or b"f" not in entry.fields
            batch.append(
                (
                    self.keys.ns,
                    entry.ms,
                    entry.seq,
                    entry.actor,
                    entry.reason,
                    msgpack.packb(entry.fields, use_bin_type=True),
                    b"f" in entry.fields,
                )
            )
            if len(batch) >= self.batch_size:
                copied += await self._insert_entries(batch)
                if progress is not None:
                    progress(len(batch))
                batch = []
        copied += await self._insert_entries(batch)
        if progress is not None and batch:
            progress(len(batch))
        checkpoints = await self._sync_checkpoints()
        newest = await self.archived_position()
        # Always record the cursor, "0-0" included: pruning never trims past it.
        await self.client.set(self.keys.archive_cursor(), newest or "0-0")
        snapshot_id = None
        latest = await self._latest_snapshot()
        if gap and not fresh_snapshot:
            log.warning(
                "journal entries were trimmed, or written without their values, before "
                "they were archived; taking a new base snapshot",
                cursor=cursor,
            )
            snapshot_id = await self.snapshot()
        elif latest is not None and newest is not None:
            since = await self.conn.fetchval(
                "SELECT count(*) FROM aether_journal WHERE ns = $1 AND (ms, seq) > ($2, $3)",
                self.keys.ns,
                latest["ms"],
                latest["seq"],
            )
            if since >= self.snapshot_every:
                snapshot_id = await self.snapshot()
        log.info("archive synced", entries=copied, checkpoints=checkpoints, snapshot=snapshot_id)
        return SyncReport(copied, checkpoints, snapshot_id, newest)

    async def _follow(self) -> None:
        """From now on every journal entry keeps its forward values (store/journal.py).

        Done before a base snapshot, so every entry replayed after one has them.
        """
        await self.client.set(self.keys.archive_cursor(), "0-0", nx=True)

    async def _trimmed_past(self, cursor: str) -> bool:
        """Whether the journal lost entries after ``cursor`` before they were archived."""
        if not await self.client.exists(self.keys.journal()):
            return False
        info = await command(self.client, "XINFO", "STREAM", self.keys.journal())
        fields = dict(zip(info[::2], info[1::2], strict=False)) if isinstance(info, list) else info
        deleted = fields.get(b"max-deleted-entry-id", fields.get("max-deleted-entry-id"))
        return deleted is not None and compare_ids(text(deleted), cursor) > 0

    async def _insert_entries(self, rows: list[tuple[Any, ...]]) -> int:
        if not rows:
            return 0
        await self.conn.executemany(
            "INSERT INTO aether_journal (ns, ms, seq, actor, reason, fields, replayable) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            rows,
        )
        return len(rows)

    async def _sync_checkpoints(self) -> int:
        from aether.checkpoints.manager import Checkpoints

        kept = await Checkpoints(self.client, self.keys, durable=False).list()
        await self.conn.executemany(
            "INSERT INTO aether_checkpoints (ns, id, created_at, label, reason, actor, ms, seq) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
            [
                (
                    self.keys.ns,
                    c.id,
                    c.created_at,
                    c.label,
                    c.reason,
                    c.actor,
                    *_split(c.journal_pos),
                )
                for c in kept
            ],
        )
        return len(kept)

    async def snapshot(self) -> str:
        """Take a base snapshot of every state key, page by page (see the module docs)."""
        await self._follow()
        cursor: bytes | str = "0"
        start = end = ""
        dumps: dict[bytes, tuple[bytes, int, int]] = {}  # a key seen twice: its later DUMP
        while True:
            reply = await self.functions.snapshot_page(cursor, self.budget_ms)
            cursor, end = reply[0], text(reply[1])
            start = start or end
            ms, seq = _split(end)
            for key, dump in zip(reply[2::2], reply[3::2], strict=True):
                dumps[key] = (dump, ms, seq)
            if text(cursor) == "0":
                break
        snapshot_id = new_id()
        async with self.conn.transaction():
            await self.conn.execute(
                "INSERT INTO aether_snapshots (ns, snapshot_id, ms, seq, key_count, "
                "start_ms, start_seq) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                self.keys.ns,
                snapshot_id,
                *_split(end),
                len(dumps),
                *_split(start),
            )
            await self.conn.copy_records_to_table(
                "aether_snapshot_keys",
                records=[
                    (self.keys.ns, snapshot_id, k, d, ms, seq) for k, (d, ms, seq) in dumps.items()
                ],
                columns=["ns", "snapshot_id", "key", "dump", "ms", "seq"],
            )
        log.info(
            "archive snapshot taken", id=snapshot_id, keys=len(dumps), start=start, position=end
        )
        return snapshot_id

    async def resolve_target(self, target: str) -> tuple[int, int]:
        """A checkpoint id (or unique prefix) or an ISO-8601 time, as a journal position.

        Raises:
            NotFoundError / AmbiguousIdError: no or several archived checkpoints match.
            ArchiveError: the target is neither.
        """
        text = target.strip()
        when = _parse_time(text)
        if when is not None:
            ms = int(when.timestamp() * 1000)
            return ms, 2**62
        if len(text) < 6 or not text.isalnum():
            raise ArchiveError(
                f"{target!r} is neither a checkpoint id (>= 6 characters) nor an ISO-8601 time"
            )
        rows = await self.conn.fetch(
            "SELECT id, ms, seq FROM aether_checkpoints WHERE ns = $1 AND id LIKE $2",
            self.keys.ns,
            text.upper() + "%",
        )
        if len(rows) > 1:
            raise AmbiguousIdError(
                f"checkpoint prefix {target!r} matches {len(rows)} archived ones"
            )
        if not rows:
            raise NotFoundError(f"no archived checkpoint matches {target!r}")
        return rows[0]["ms"], rows[0]["seq"]

    async def restore(
        self, target: str, progress: Callable[[int, int], None] | None = None
    ) -> RestoreReport:
        """Rebuild the namespace, as of ``target``, in a Redis that holds none of it.

        Args:
            target: a checkpoint id or prefix, or an ISO-8601 time.
            progress: told ``(done, total)``: keys restored plus entries replayed so far.

        Raises:
            ArchiveError: the namespace is not empty, or nothing archived covers the target.
        """
        ms, seq = await self.resolve_target(target)
        existing = [k async for k in self.client.scan_iter(match=self.keys.every_key, count=1000)]
        if existing:
            raise ArchiveError(
                f"namespace {self.keys.ns!r} is not empty ({len(existing)} keys, e.g. "
                f"{existing[0].decode()!r}); restore only rebuilds into an empty namespace"
            )
        snap = await self.conn.fetchrow(
            "SELECT snapshot_id, ms, seq, coalesce(start_ms, ms) AS start_ms, "
            "coalesce(start_seq, seq) AS start_seq FROM aether_snapshots "
            "WHERE ns = $1 AND (ms, seq) <= ($2, $3) ORDER BY ms DESC, seq DESC LIMIT 1",
            self.keys.ns,
            ms,
            seq,
        )
        if snap is None:
            raise ArchiveError(
                f"no base snapshot of namespace {self.keys.ns!r} precedes {target!r}"
            )
        blind = await self.conn.fetchrow(
            "SELECT ms, seq FROM aether_journal WHERE ns = $1 AND NOT replayable "
            "AND (ms, seq) > ($2, $3) AND (ms, seq) <= ($4, $5) ORDER BY ms DESC, seq DESC "
            "LIMIT 1",
            self.keys.ns,
            snap["start_ms"],
            snap["start_seq"],
            ms,
            seq,
        )
        if blind is not None:
            raise ArchiveError(
                f"cannot restore namespace {self.keys.ns!r} to {target!r}: journal entry "
                f"{_pos(blind['ms'], blind['seq'])} was written while no archive followed "
                "it and keeps no values to replay; restore to a point after the base "
                "snapshot the next sync took"
            )
        lock = StateLock(
            self.client,
            self.keys.admin_lock(),
            ttl_s=600,
            busy=f"another admin action holds {self.keys.admin_lock()}",
        )
        async with lock:
            return await self._rebuild(snap, ms, seq, progress)

    async def _rebuild(
        self,
        snap: asyncpg.Record,
        ms: int,
        seq: int,
        progress: Callable[[int, int], None] | None = None,
    ) -> RestoreReport:
        restored = 0
        pipe = self.client.pipeline(transaction=False)
        total = await self._restore_size(snap, ms, seq) if progress is not None else 0

        def advance(done: int) -> None:
            if progress is not None:
                progress(done, total)

        start = _pos(snap["start_ms"], snap["start_seq"])
        dumped_at: dict[bytes, str] = {}  # keys dumped after the first page: their position
        restored_keys: list[str] = []
        async with self.conn.transaction():
            cursor = self.conn.cursor(
                "SELECT key, dump, ms, seq FROM aether_snapshot_keys "
                "WHERE ns = $1 AND snapshot_id = $2",
                self.keys.ns,
                snap["snapshot_id"],
            )
            async for row in cursor:
                key = bytes(row["key"])
                pipe.restore(key, 0, bytes(row["dump"]), replace=True)
                restored_keys.append(key.decode())
                if row["ms"] is not None:
                    at = _pos(row["ms"], row["seq"])
                    if compare_ids(at, start) > 0:
                        dumped_at[key] = at
                restored += 1
                if len(pipe) >= 500:
                    await pipe.execute()
                    advance(restored)
            if len(pipe):
                await pipe.execute()
            advance(restored)
            await self._rebase_chain(restored_keys, start)
            replayed = 0
            position = _pos(snap["ms"], snap["seq"])
            entries = self.conn.cursor(
                "SELECT ms, seq, fields FROM aether_journal WHERE ns = $1 "
                "AND (ms, seq) > ($2, $3) AND (ms, seq) <= ($4, $5) ORDER BY ms, seq",
                self.keys.ns,
                snap["start_ms"],
                snap["start_seq"],
                ms,
                seq,
            )
            async for row in entries:
                position = _pos(row["ms"], row["seq"])
                await self._replay(
                    position, msgpack.unpackb(bytes(row["fields"]), raw=True), dumped_at
                )
                replayed += 1
                if replayed % 100 == 0:
                    advance(restored + replayed)
            advance(restored + replayed)
            cps = await self.conn.fetch(
                "SELECT * FROM aether_checkpoints WHERE ns = $1 AND (ms, seq) >= ($2, $3) "
                "AND (ms, seq) <= ($4, $5)",
                self.keys.ns,
                snap["start_ms"],
                snap["start_seq"],
                ms,
                seq,
            )
        pipe = self.client.pipeline(transaction=True)
        pipe.set(self.keys.archive_cursor(), position)  # the archive follows on
        for c in cps:
            pipe.hset(
                self.keys.checkpoint(c["id"]),
                mapping={
                    "id": c["id"],
                    "created_at": c["created_at"],
                    "label": c["label"],
                    "reason": c["reason"],
                    "actor": c["actor"],
                    "journal_pos": _pos(c["ms"], c["seq"]),
                },
            )
            pipe.zadd(self.keys.checkpoints(), {c["id"]: c["created_at"]})
        await pipe.execute()
        await JournalChain(self.client, self.keys).fill_checkpoints()
        report = RestoreReport(snap["snapshot_id"], restored, replayed, len(cps), position)
        log.info("archive restored", **report.__dict__)
        return report

    async def _rebase_chain(self, restored: list[str], start: str) -> None:
        """The chain goes on from the snapshot's entry: its hash, the restored keys' digests."""
        ms, _, seq = start.partition("-")
        row = await self.conn.fetchrow(
            "SELECT fields FROM aether_journal WHERE ns = $1 AND ms = $2 AND seq = $3",
            self.keys.ns,
            int(ms),
            int(seq),
        )
        fields = msgpack.unpackb(bytes(row["fields"]), raw=True) if row is not None else {}
        head = text(fields[b"h"]) if isinstance(fields, dict) and b"h" in fields else None
        await JournalChain(self.client, self.keys).rebase(restored, start, head)

    async def _replay(
        self, position: str, fields: dict[bytes, bytes], dumped_at: dict[bytes, str]
    ) -> None:
        """Re-apply one archived entry, except on keys whose DUMP already includes it."""
        touched = touched_keys(fields)
        skip = [k for k in touched if compare_ids(dumped_at.get(k, "0-0"), position) >= 0]
        flat = [v for pair in fields.items() for v in pair]
        await self.functions.replay(touched, position, skip, flat)

    async def _restore_size(self, snap: asyncpg.Record, ms: int, seq: int) -> int:
        """Keys in the base snapshot plus journal entries to replay after it."""
        size = await self.conn.fetchval(
            "SELECT (SELECT count(*) FROM aether_snapshot_keys WHERE ns = $1 AND snapshot_id = $2)"
            " + (SELECT count(*) FROM aether_journal WHERE ns = $1"
            " AND (ms, seq) > ($3, $4) AND (ms, seq) <= ($5, $6))",
            self.keys.ns,
            snap["snapshot_id"],
            snap["start_ms"],
            snap["start_seq"],
            ms,
            seq,
        )
        return int(size)

    # -- erasure (aether/checkpoints/erasure.py) ---------------------------------------
    async def _journal_rows(self) -> AsyncIterator[list[asyncpg.Record]]:
        """The namespace's archived journal rows, page by page (keyset pagination)."""
        ms, seq = -1, -1
        while True:
            rows = await self.conn.fetch(
                "SELECT ms, seq, fields FROM aether_journal WHERE ns = $1 AND (ms, seq) > ($2, $3)"
                " ORDER BY ms, seq LIMIT $4",
                self.keys.ns,
                ms,
                seq,
                self.batch_size,
            )
            if not rows:
                return
            yield rows
            ms, seq = rows[-1]["ms"], rows[-1]["seq"]

    async def _snapshot_rows(self) -> AsyncIterator[list[asyncpg.Record]]:
        """The namespace's base snapshots' keys, page by page."""
        after: tuple[str, bytes] = ("", b"")
        while True:
            rows = await self.conn.fetch(
                "SELECT snapshot_id, key, dump FROM aether_snapshot_keys WHERE ns = $1 "
                "AND (snapshot_id, key) > ($2, $3) ORDER BY snapshot_id, key LIMIT $4",
                self.keys.ns,
                *after,
                self.batch_size,
            )
            if not rows:
                return
            yield rows
            after = (rows[-1]["snapshot_id"], bytes(rows[-1]["key"]))

    async def observe(self, redactor: Redactor) -> None:
        """Show the redactor every archived value (an erasure's scan)."""
        async for rows in self._journal_rows():
            for row in rows:
                fields = msgpack.unpackb(bytes(row["fields"]), raw=True)
                for name in (b"i", b"f"):
                    if name in fields:
                        await redactor.observe_ops(decode_ops(fields[name]))
        async for rows in self._snapshot_rows():  # a page's images decoded together
            await redactor.observe_ops(
                [[b"RESTORE", bytes(row["key"]), bytes(row["dump"])] for row in rows]
            )

    async def redact(self, redactor: Redactor) -> dict[str, int]:
        """Redact the archive: journal rows, base snapshots, checkpoint labels.

        Then ``VACUUM FULL`` rewrites the tables, so no dead row version keeps the old
        bytes on disk. Returns counts per table.
        """
        entries = removed = rewritten = labels = 0
        rechainer = Rechainer(JournalChain(self.client, self.keys), "archive redaction")
        async for rows in self._journal_rows():
            updates = []
            for row in rows:
                fields = msgpack.unpackb(bytes(row["fields"]), raw=True)
                redacted = await redact_entry(redactor, fields)
                # the archived chain is recomputed as the journal's is (same entries, same ids)
                chained = rechainer.rechained_fields(redacted or fields)
                if chained is not fields:
                    packed = msgpack.packb(chained, use_bin_type=True)
                    updates.append((self.keys.ns, row["ms"], row["seq"], packed))
            if updates:
                await self.conn.executemany(
                    "UPDATE aether_journal SET fields = $4 WHERE ns = $1 AND ms = $2 AND seq = $3",
                    updates,
                )
                entries += len(updates)
        async for rows in self._snapshot_rows():
            for row in rows:
                key, dump = bytes(row["key"]), bytes(row["dump"])
                new = await redactor.payload(key.decode(), dump)
                if new is dump:
                    continue
                where = (self.keys.ns, row["snapshot_id"], key)
                if new is None:
                    await self.conn.execute(
                        "DELETE FROM aether_snapshot_keys WHERE ns = $1 AND snapshot_id = $2 "
                        "AND key = $3",
                        *where,
                    )
                    await self.conn.execute(
                        "UPDATE aether_snapshots SET key_count = key_count - 1 "
                        "WHERE ns = $1 AND snapshot_id = $2",
                        *where[:2],
                    )
                    removed += 1
                else:
                    await self.conn.execute(
                        "UPDATE aether_snapshot_keys SET dump = $4 WHERE ns = $1 "
                        "AND snapshot_id = $2 AND key = $3",
                        *where,
                        new,
                    )
                    rewritten += 1
        for row in await self.conn.fetch(
            "SELECT id, label FROM aether_checkpoints WHERE ns = $1", self.keys.ns
        ):
            if redactor.holds(row["label"]):
                await self.conn.execute(
                    "UPDATE aether_checkpoints SET label = $3 WHERE ns = $1 AND id = $2",
                    self.keys.ns,
                    row["id"],
                    ERASED_LABEL,
                )
                labels += 1
        for table in ("aether_journal", "aether_snapshot_keys", "aether_checkpoints"):
            await self.conn.execute(f"VACUUM FULL {table}")
        return {
            "archive_entries": entries,
            "archive_snapshot_keys_removed": removed,
            "archive_snapshot_keys_redacted": rewritten,
            "archive_labels": labels,
        }

    async def holding(self, redactor: Redactor) -> list[tuple[str, str]]:
        """Where the archive still holds the redactor's text: (table, row)."""
        found: list[tuple[str, str]] = []
        async for rows in self._journal_rows():
            for row in rows:
                fields = msgpack.unpackb(bytes(row["fields"]), raw=True)
                if await entry_holds(redactor, fields) or entry_names(redactor, fields):
                    found.append(("aether_journal", _pos(row["ms"], row["seq"])))
        needle = redactor.needle
        async for rows in self._snapshot_rows():
            for row in rows:
                dump, key = bytes(row["dump"]), bytes(row["key"]).decode()
                if self.keys.is_vector(key):
                    continue  # binary: its text fields copy its document's
                if redactor.names_it(key):
                    found.append(
                        ("aether_snapshot_keys", f"{row['snapshot_id']} {bytes(row['key'])!r}")
                    )
                elif needle is not None and needle.maybe_in(dump):
                    value = await redactor.decode(dump)
                    if redactor.value_holds(value, key):
                        found.append(
                            ("aether_snapshot_keys", f"{row['snapshot_id']} {bytes(row['key'])!r}")
                        )
        for row in await self.conn.fetch(
            "SELECT id, label FROM aether_checkpoints WHERE ns = $1", self.keys.ns
        ):
            if redactor.holds(row["label"]):
                found.append(("aether_checkpoints", row["id"]))
        return found


def _parse_time(text: str) -> datetime | None:
    if not text[:4].isdigit() or "-" not in text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)

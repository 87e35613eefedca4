"""Checkpoints: create (O(1)), list, resolve by prefix, diff, rollback, undo, prune.

A checkpoint is a journal position plus metadata; rollback applies the journal's
inverses back to it in one Redis Function call (atomic: nobody reads a half-rolled-back
state) and is itself journaled, so ``undo`` can reverse it. Rollback and undo take the
namespace's admin lock, and each is preceded by an automatic checkpoint.
"""

from __future__ import annotations

import builtins
import json
import secrets
import time

import structlog
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from aether.checkpoints.diff import KeyChange, compare, read_value, value_at_checkpoint
from aether.checkpoints.model import Checkpoint, Diff, RollbackResult, TierChanges
from aether.errors import (
    AmbiguousIdError,
    CheckpointError,
    ConcurrentAdminError,
    NotFoundError,
)
from aether.ids import new_id
from aether.keys import Keyspace
from aether.store.codec import byte_map, command, text
from aether.store.journal import compare_ids, entries_after, last_position

log = structlog.get_logger(__name__)

MIN_PREFIX = 6
LOCK_TTL_MS = 300_000
ROLLBACK_HISTORY = 100


class Checkpoints:
    """Checkpoint operations on one namespace.

    Args:
        client: a verified client with the Functions library loaded.
        keys: the namespace's keyspace.
        keep: how many checkpoints retention keeps.
        durable: wait for the checkpoint to be fsync'd to the AOF before returning.
    """

    _warned_no_aof = False

    def __init__(self, client: Redis, keys: Keyspace, keep: int = 50, durable: bool = True):
        self.client = client
        self.keys = keys
        self.keep = keep
        self.durable = durable

    async def create(
        self,
        label: str = "",
        reason: str = "manual",
        actor: str = "cli",
        *,
        prune: bool = True,
    ) -> Checkpoint:
        """Record the current journal position; O(1) whatever the memory size.

        Returns once the checkpoint is on disk (``WAITAOF 1 0``) when the server has AOF.
        """
        if len(label) > 200:
            raise CheckpointError("a checkpoint label is at most 200 characters")
        cp_id = new_id()
        created = int(time.time() * 1000)
        pos = await self.client.fcall(
            "aether_checkpoint",
            3,
            self.keys.journal(),
            self.keys.checkpoint(cp_id),
            self.keys.checkpoints(),
            cp_id,
            created,
            label,
            reason,
            actor,
        )
        await self._wait_on_disk()
        checkpoint = Checkpoint(cp_id, created, label, reason, actor, text(pos))
        log.info("checkpoint created", id=cp_id, label=label, reason=reason)
        # one ZCARD on the hot path; the full prune (and journal trim) only past retention
        if prune and await self.client.zcard(self.keys.checkpoints()) > self.keep:
            await self.prune()
        return checkpoint

    async def _wait_on_disk(self) -> None:
        if not self.durable:
            return
        try:
            await command(self.client, "WAITAOF", 1, 0, 0)
        except ResponseError as e:
            if not Checkpoints._warned_no_aof:
                Checkpoints._warned_no_aof = True
                log.warning("server has no AOF; checkpoints are not fsync'd", error=str(e))

    async def list(self) -> list[Checkpoint]:
        """All kept checkpoints, newest first."""
        ids = await self.client.zrevrange(self.keys.checkpoints(), 0, -1)
        pipe = self.client.pipeline(transaction=False)
        for raw in ids:
            pipe.hgetall(self.keys.checkpoint(text(raw)))
        return [Checkpoint.from_hash(byte_map(h)) for h in await pipe.execute() if h]

    async def resolve(self, id_or_prefix: str) -> Checkpoint:
        """Find a checkpoint by id or unique prefix of at least 6 characters.

        Raises:
            NotFoundError: no such checkpoint (or it was pruned: the message says so).
            AmbiguousIdError: the prefix matches several checkpoints.
        """
        wanted = id_or_prefix.strip().upper()
        if len(wanted) < MIN_PREFIX:
            raise NotFoundError(f"checkpoint id prefix must have at least {MIN_PREFIX} characters")
        if not wanted.isalnum():
            raise NotFoundError(f"{id_or_prefix!r} is not a checkpoint id")
        ids = [text(raw) for raw in await self.client.zrange(self.keys.checkpoints(), 0, -1)]
        matches = [i for i in ids if i.startswith(wanted)]
        if len(matches) > 1:
            raise AmbiguousIdError(
                f"checkpoint prefix {id_or_prefix!r} matches {len(matches)} checkpoints"
                + (": " if len(matches) <= 5 else ", the newest 5: ")
                + ", ".join(matches[-5:][::-1])
            )
        if not matches:
            pruned = [
                text(raw)
                for raw in await self.client.zrange(self.keys.checkpoints_pruned(), 0, -1)
                if text(raw).startswith(wanted)
            ]
            if pruned:
                raise NotFoundError(
                    f"checkpoint {pruned[0]} was pruned (retention keeps the last {self.keep}); "
                    "restore it from the PostgreSQL archive with 'aether archive restore'"
                )
            raise NotFoundError(f"no checkpoint matches {id_or_prefix!r}")
        raw = await self.client.hgetall(self.keys.checkpoint(matches[0]))
        if not raw:
            raise NotFoundError(f"checkpoint {matches[0]} vanished (pruned meanwhile)")
        return Checkpoint.from_hash(byte_map(raw))

    async def show(self, id_or_prefix: str) -> tuple[Checkpoint, int]:
        """A checkpoint and how many journal entries follow it."""
        checkpoint = await self.resolve(id_or_prefix)
        entries = 0
        async for _ in entries_after(self.client, self.keys.journal(), checkpoint.journal_pos):
            entries += 1
        return checkpoint, entries

    async def diff(self, id_or_prefix: str, *, values: bool = True) -> Diff:
        """What changed since a checkpoint, grouped by tier, key by key.

        Args:
            id_or_prefix: the checkpoint.
            values: compare values field by field (else only which keys changed).
        """
        checkpoint = await self.resolve(id_or_prefix)
        undo: dict[str, list[list[list[bytes]]]] = {}  # key -> its inverses, per entry
        tiers: dict[str, TierChanges] = {}
        entries = 0
        async for entry in entries_after(self.client, self.keys.journal(), checkpoint.journal_pos):
            entries += 1
            per_key: dict[str, list[list[bytes]]] = {}
            for op in entry.inverse():
                per_key.setdefault(text(op[1]), []).append(op)
            for key in entry.touched_keys():
                undo.setdefault(key, []).append(per_key.get(key, []))
            for tier in {self.keys.tier(key) for key in entry.touched_keys()}:
                tiers.setdefault(tier, TierChanges()).entries += 1
        changes: list[KeyChange] = []
        for key in sorted(undo):
            now = await read_value(self.client, key)
            order = [op for ops in reversed(undo[key]) for op in ops]
            then = await value_at_checkpoint(self.client, self.keys, now, order)
            change = compare(then, now)
            if change is None:
                continue  # changed and changed back
            change.key, change.tier = key, self.keys.tier(key)
            if not values:
                change.fields, change.added, change.removed = [], [], []
            getattr(tiers.setdefault(change.tier, TierChanges()), change.change).append(key)
            changes.append(change)
        return Diff(checkpoint, entries, tiers, changes)

    async def _lock(self) -> str:
        token = secrets.token_hex(16)
        if not await self.client.set(self.keys.admin_lock(), token, nx=True, px=LOCK_TTL_MS):
            raise ConcurrentAdminError(
                "another rollback, undo or restore is running on namespace "
                f"{self.keys.ns!r} (lock {self.keys.admin_lock()} is held); nothing changed, "
                "try again when it finishes"
            )
        return token

    async def _unlock(self, token: str) -> None:
        await self.client.fcall("aether_unlock", 1, self.keys.admin_lock(), token)

    async def rollback_to(
        self, id_or_prefix: str, actor: str = "cli", reason: str = "rollback"
    ) -> RollbackResult:
        """Restore the exact state at a checkpoint, atomically; journaled, so undoable.

        A checkpoint of the current state is taken first (``undo`` returns to it).

        Raises:
            NotFoundError / AmbiguousIdError: the id does not name one kept checkpoint.
            ConcurrentAdminError: another rollback, undo or restore is running.
        """
        target = await self.resolve(id_or_prefix)
        token = await self._lock()
        try:
            pre = await self.create(
                label=f"before {reason} to {target.id}",
                reason=f"pre-{reason}",
                actor=actor,
                prune=False,
            )
            try:
                reply = await self.client.fcall(
                    "aether_rollback",
                    3,
                    self.keys.journal(),
                    self.keys.admin_lock(),
                    self.keys.checkpoint(target.id),
                    target.journal_pos,
                    token,
                    actor,
                    reason,
                    target.id,
                )
            except ResponseError as e:
                raise CheckpointError(
                    f"{reason} to {target.id} failed, nothing changed: {e}"
                ) from e
            entry = text(reply[0]) or None
            result = RollbackResult(target, pre, entry, int(reply[1]), int(reply[2]))
            record = {
                **result.to_dict(),
                "reason": reason,
                "actor": actor,
                "at": int(time.time() * 1000),
            }
            pipe = self.client.pipeline(transaction=True)
            pipe.lpush(self.keys.rollbacks(), json.dumps(record))
            pipe.ltrim(self.keys.rollbacks(), 0, ROLLBACK_HISTORY - 1)
            pipe.publish(self.keys.events(), json.dumps({"type": reason, **result.to_dict()}))
            await pipe.execute()
            await self._wait_on_disk()
        finally:
            await self._unlock(token)
        log.info(f"{reason} done", **result.to_dict())
        await self.prune()
        return result

    async def undo(self, actor: str = "cli", *, redo: bool = False) -> RollbackResult:
        """Reverse the last rollback by returning to the checkpoint taken before it.

        Args:
            actor: who undoes.
            redo: when the last action was itself an undo, reverse it (redo the rollback);
                without it that is refused, so a second undo never silently redoes.

        Raises:
            NotFoundError: there is no rollback to undo (or only an undo, without ``redo``).
            CheckpointError: state changed since that rollback (undoing would lose it).
        """
        raw = await self.client.lindex(self.keys.rollbacks(), 0)
        if raw is None:
            raise NotFoundError("nothing to undo: no rollback has been made")
        last = json.loads(raw)
        if last.get("reason") == "undo" and not redo:
            raise NotFoundError(
                "nothing to undo: the last action was already an undo; "
                "to redo the rollback it reversed, run 'aether checkpoint undo --yes'"
            )
        newest = await last_position(self.client, self.keys.journal())
        if last["journal_entry"] and newest != last["journal_entry"]:
            raise CheckpointError(
                "state changed since the last rollback, so undo would discard those changes; "
                f"to return anyway: aether checkpoint rollback {last['pre_checkpoint']}"
            )
        return await self.rollback_to(last["pre_checkpoint"], actor=actor, reason="undo")

    async def prune(self, keep: int | None = None) -> builtins.list[str]:
        """Keep the newest ``keep`` checkpoints; trim the journal behind the oldest kept.

        The journal is never trimmed past what the PostgreSQL archive has copied, when an
        archive cursor exists. Returns the pruned ids.
        """
        keep = self.keep if keep is None else keep
        if keep < 1:
            raise CheckpointError("retention must keep at least 1 checkpoint")
        doomed = [
            text(raw) for raw in await self.client.zrange(self.keys.checkpoints(), 0, -(keep + 1))
        ]
        if doomed:
            now = int(time.time() * 1000)
            pipe = self.client.pipeline(transaction=True)
            for cp_id in doomed:
                pipe.delete(self.keys.checkpoint(cp_id))
                pipe.zrem(self.keys.checkpoints(), cp_id)
                pipe.zadd(self.keys.checkpoints_pruned(), {cp_id: now})
            await pipe.execute()
            log.info("checkpoints pruned", count=len(doomed))
        await self._trim_journal()
        return doomed

    async def _trim_journal(self) -> None:
        oldest = await self.client.zrange(self.keys.checkpoints(), 0, 0)
        if not oldest:
            return
        pos = await self.client.hget(self.keys.checkpoint(text(oldest[0])), "journal_pos")
        if pos is None or pos == b"0-0":
            return
        limit = text(pos)
        cursor = await self.client.get(self.keys.archive_cursor())
        if cursor is not None and compare_ids(text(cursor), limit) < 0:
            limit = text(cursor)
        # MINID keeps entries >= limit: everything after the oldest kept checkpoint stays.
        await self.client.xtrim(self.keys.journal(), minid=limit, approximate=False)

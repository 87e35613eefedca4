"""Checkpoints: create (O(1)), list, resolve by prefix, diff, rollback, undo, prune.

A checkpoint is a journal position plus metadata; rollback applies the journal's
inverses back to it and is itself journaled, so ``undo`` can reverse it. Rollback and
undo take the namespace's admin lock, and each is preceded by an automatic checkpoint.

A rollback goes in steps (``aether_rollback_begin``, then ``aether_rollback_step`` until
done), each at most ``budget_ms`` of work, so no other client ever waits on one long
call. While it runs, the write hold makes writes and checkpoints wait (they retry, see
:func:`aether.store.state.while_busy`). All or nothing: a step that fails undoes itself,
and the steps already made are reversed by a rollback to the checkpoint taken first; a
run cut short by a crash is finished by :meth:`Checkpoints.finish_interrupted`.
"""

from __future__ import annotations

import builtins
import json
import time
from typing import Any

import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from aether.checkpoints.chain import JournalChain
from aether.checkpoints.diff import KeyChange, compare, values_at_checkpoint
from aether.checkpoints.model import Checkpoint, Diff, RollbackResult, TierChanges, UndoSince
from aether.codec import byte_map, command, text
from aether.config import Settings
from aether.errors import (
    AmbiguousIdError,
    CheckpointError,
    ConcurrentAdminError,
    InvalidOperationError,
    NotFoundError,
    UnavailableError,
)
from aether.ids import new_id
from aether.keys import Keyspace
from aether.logging import log_once
from aether.store.cluster import SlotRedis
from aether.store.functions import Functions
from aether.store.journal import compare_ids, entries_after, last_position
from aether.store.lock import StateLock
from aether.store.signing import Signer, sign_head
from aether.store.state import WRITE_WAIT_S, while_busy
from aether.store.values import read_values

log = structlog.get_logger(__name__)

MIN_PREFIX = 6
LOCK_TTL_S = 300.0
ROLLBACK_HISTORY = 100
DIFF_BATCH = 1000  # keys a diff reads per batch of round trips


class Checkpoints:
    """Checkpoint operations on one namespace.

    Args:
        client: a verified client with the Functions library loaded.
        keys: the namespace's keyspace.
        keep: how many checkpoints retention keeps.
        durable: wait for the checkpoint to be fsync'd to the AOF before returning.
        budget_ms: the most work one rollback step does.
        write_wait_s: how long ``create`` waits while a rollback holds writes back.
        signer: the journal key: the head a rollback leaves is signed with it.
    """

    def __init__(
        self,
        client: Redis,
        keys: Keyspace,
        keep: int = 50,
        durable: bool = True,
        budget_ms: int = 100,
        write_wait_s: float = WRITE_WAIT_S,
        signer: Signer | None = None,
    ):
        self.client = client
        self.signer = signer
        self.keys = keys
        self.functions = Functions(client, keys)
        self.keep = keep
        self.durable = durable
        self.budget_ms = budget_ms
        self.write_wait_s = write_wait_s

    @classmethod
    def from_settings(cls, client: Redis, keys: Keyspace, settings: Settings) -> Checkpoints:
        """Checkpoints with the retention and step budget of ``settings``."""
        return cls(
            client,
            keys,
            keep=settings.checkpoints.keep,
            budget_ms=settings.checkpoints.budget_ms,
            signer=Signer.from_settings(settings),
        )

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

        async def call() -> Any:
            return await self.functions.checkpoint(cp_id, created, label, reason, actor)

        pos = await while_busy(call, "checkpoint", self.write_wait_s)
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
            log_once(log, "no-aof", "server has no AOF; checkpoints are not fsync'd", error=str(e))

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
            InvalidOperationError: too short a prefix, or not an id at all (``invalid``:
                the question is malformed, whatever the checkpoints are).
            NotFoundError: no such checkpoint (or it was pruned: the message says so).
            AmbiguousIdError: the prefix matches several checkpoints.
        """
        wanted = id_or_prefix.strip().upper()
        if len(wanted) < MIN_PREFIX:
            raise InvalidOperationError(
                f"checkpoint id prefix must have at least {MIN_PREFIX} characters"
            )
        if not wanted.isalnum():
            raise InvalidOperationError(f"{id_or_prefix[:40]!r} is not a checkpoint id")
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
        tiers: dict[str, TierChanges] = {}
        since = await self.undo_since(checkpoint)
        for tier, count in since.tier_entries.items():
            tiers.setdefault(tier, TierChanges()).entries = count
        changes: list[KeyChange] = []
        ordered = sorted(since.undo)
        for start in range(0, len(ordered), DIFF_BATCH):  # a few round trips per batch
            batch = ordered[start : start + DIFF_BATCH]
            nows = await read_values(self.client, batch)
            thens = await values_at_checkpoint(
                self.client, self.keys, nows, [since.undo[key] for key in batch]
            )
            for key, then, now in zip(batch, thens, nows, strict=True):
                change = compare(then, now)
                if change is None:
                    continue  # changed and changed back
                change.key, change.tier = key, self.keys.tier(key)
                if not values:
                    change.fields, change.added, change.removed = [], [], []
                getattr(tiers.setdefault(change.tier, TierChanges()), change.change).append(key)
                changes.append(change)
        return Diff(checkpoint, since.entries, tiers, changes)

    async def undo_since(self, checkpoint: Checkpoint) -> UndoSince:
        """Each key changed since a checkpoint and the inverse ops back to it, in undo order."""
        per_entry: dict[str, list[list[list[bytes]]]] = {}  # key -> its inverses, per entry
        since = UndoSince()
        async for entry in entries_after(self.client, self.keys.journal(), checkpoint.journal_pos):
            since.entries += 1
            per_key: dict[str, list[list[bytes]]] = {}
            for op in entry.inverse():
                per_key.setdefault(text(op[1]), []).append(op)
            for key in entry.touched_keys():
                per_entry.setdefault(key, []).append(per_key.get(key, []))
            for tier in {self.keys.tier(key) for key in entry.touched_keys()}:
                since.tier_entries[tier] = since.tier_entries.get(tier, 0) + 1
        since.undo = {
            key: [op for ops in reversed(entries) for op in ops]
            for key, entries in per_entry.items()
        }
        return since

    def _admin_lock(self) -> StateLock:
        return StateLock(
            self.client,
            self.keys.admin_lock(),
            ttl_s=LOCK_TTL_S,
            busy="another rollback, undo or restore is running on namespace "
            f"{self.keys.ns!r} (lock {self.keys.admin_lock()} is held); nothing changed, "
            "try again when it finishes",
        )

    async def rollback_to(
        self, id_or_prefix: str, actor: str = "cli", reason: str = "rollback"
    ) -> RollbackResult:
        """Restore the exact state at a checkpoint, all or nothing; journaled, so undoable.

        A checkpoint of the current state is taken first (``undo`` returns to it). The
        work goes in steps of at most ``budget_ms``; writes wait meanwhile.

        Raises:
            NotFoundError / AmbiguousIdError: the id does not name one kept checkpoint.
            ConcurrentAdminError: another rollback, undo or restore is running.
            CheckpointError: the rollback failed; its steps were reversed, nothing changed.
            BusyError: in a Redis Cluster, the agent's slot is being migrated.
        """
        target = await self.resolve(id_or_prefix)
        if isinstance(self.client, SlotRedis):  # it reads keys it cannot declare
            await self.client.ensure_settled()
        async with self._admin_lock() as lock:
            await self._finish(lock)
            pre = await self.create(
                label=f"before {reason} to {target.id}",
                reason=f"pre-{reason}",
                actor=actor,
                prune=False,
            )
            try:
                begun = await self._begin(lock, target, pre, actor, reason)
            except ResponseError as e:
                raise CheckpointError(
                    f"{reason} to {target.id} failed, nothing changed: {e}"
                ) from e
            result = RollbackResult(target, pre, None, 0, 0)
            if begun:
                try:
                    result = await self._steps(lock, target, pre)
                except ResponseError as e:
                    await self._abort(lock, target, pre, actor, reason, e)
                    raise CheckpointError(
                        f"{reason} to {target.id} failed, nothing changed: {e}"
                    ) from e
            await self._record(result, reason, actor)
        log.info(f"{reason} done", **result.to_dict())
        await self.prune()
        return result

    async def _begin(
        self,
        lock: StateLock,
        target: Checkpoint,
        pre: Checkpoint,
        actor: str,
        reason: str,
        *,
        replace: bool = False,
    ) -> bool:
        return await self.functions.rollback_begin(
            lock.token,
            target.id,
            target.journal_pos,
            actor,
            reason,
            replace=replace,
            pre_id=pre.id,
        )

    async def _step(self, lock: StateLock, budget_ms: int) -> Any:
        """One step of the rollback in the write hold: ``[state, last id, undone, ops]``."""
        return await self.functions.rollback_step(lock.token, budget_ms)

    async def _steps(self, lock: StateLock, target: Checkpoint, pre: Checkpoint) -> RollbackResult:
        """Run the steps of the rollback in the write hold until it is done."""
        steps = 0
        while True:
            try:
                reply = await self._step(lock, self.budget_ms)
            except UnavailableError as e:
                raise CheckpointError(
                    "Redis became unreachable during the rollback; writes stay held and "
                    "the rollback is finished by the next 'aether checkpoint rollback' or "
                    f"'undo', or when the daemon starts: {e}"
                ) from e
            steps += 1
            state, last, undone, ops = text(reply[0]), text(reply[1]), reply[2], reply[3]
            if state == "done":
                log.debug("rollback steps", steps=steps)
                if self.signer is not None:
                    await sign_head(self.client, self.keys, self.signer)
                return RollbackResult(target, pre, last or None, int(undone), int(ops))
            await lock.extend()

    async def _abort(
        self,
        lock: StateLock,
        target: Checkpoint,
        pre: Checkpoint,
        actor: str,
        reason: str,
        error: Exception,
    ) -> None:
        """Reverse the steps of a failed rollback: roll back to the checkpoint taken first."""
        log.error(f"{reason} failed; reversing its steps", target=target.id, error=str(error))
        try:
            if await self._begin(lock, pre, pre, actor, f"{reason}-aborted", replace=True):
                await self._steps(lock, pre, pre)
        except (RedisError, CheckpointError) as e:
            raise CheckpointError(
                f"{reason} to {target.id} failed ({error}) and reversing its steps failed too "
                f"({e}); writes stay held; finish with 'aether checkpoint rollback {pre.id}'"
            ) from e

    async def _record(self, result: RollbackResult, reason: str, actor: str) -> None:
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

    async def finish_interrupted(self) -> RollbackResult | None:
        """Finish a rollback that a crash or an outage cut short (writes wait until then).

        Returns what it finished, or ``None`` when none was interrupted.

        Raises:
            ConcurrentAdminError: a rollback is running now (it is not interrupted).
        """
        if not await self.client.exists(self.keys.write_hold()):
            return None
        async with self._admin_lock() as lock:
            return await self._finish(lock)

    async def _finish(self, lock: StateLock) -> RollbackResult | None:
        raw = await self.client.hgetall(self.keys.write_hold())
        hold = {text(k): text(v) for k, v in raw.items()}
        if not hold:
            return None
        if hold.get("kind") == "erase":
            raise ConcurrentAdminError(
                f"an erasure holds the writes of namespace {self.keys.ns!r}; it is finished by "
                "'aether erase resume' or when the daemon starts, then try again"
            )
        target_id, pre_id = hold.get("label", ""), hold.get("pre", "")
        reason, actor = hold.get("reason", "rollback"), hold.get("actor", "aether")
        log.warning("finishing a rollback that was interrupted", target=target_id)
        target = Checkpoint(target_id, 0, "", reason, actor, hold.get("target", ""))
        pre = Checkpoint(pre_id, 0, "", f"pre-{reason}", actor, "")
        result = await self._steps(lock, target, pre)
        await self._record(result, reason, actor)
        return result

    async def rollbacks(self, limit: int = 20) -> builtins.list[dict[str, Any]]:
        """The latest rollback records (undos included), newest first."""
        raw = await self.client.lrange(self.keys.rollbacks(), 0, limit - 1)
        return [json.loads(r) for r in raw]

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

        The journal is trimmed only once retention has pruned a checkpoint (now or
        before). Until then it reaches back to the namespace's first change, so "as of"
        answers for any moment of its life; a trim would have saved only the stretch
        before the first checkpoint. It is never trimmed past what the PostgreSQL archive
        has copied, when an archive cursor exists. Returns the pruned ids.
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
        if doomed or await self.client.exists(self.keys.checkpoints_pruned()):
            await self._trim_journal()
        return doomed

    async def _trim_journal(self) -> None:
        if await self.client.exists(self.keys.write_hold()):
            return  # a rollback in progress reads the journal: trim next time
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
        await JournalChain(self.client, self.keys).anchor_trim(limit)  # before: a crash between
        await self.client.xtrim(self.keys.journal(), minid=limit, approximate=False)

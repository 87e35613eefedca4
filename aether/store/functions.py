"""aether's Redis Functions, one typed method per function.

The functions live in three libraries, one per concern: the journal (``journal.lua``),
retrieval's reads (``reads.lua``) and coordination between processes
(``coordination.lua``).

Every caller reaches the library through :class:`Functions`: each method names the keys
its function declares, from the namespace's :class:`~aether.keys.Keyspace`, and counts
them, so no layer writes a function's name or ``numkeys`` by hand. Read-only functions
go through ``FCALL_RO`` (replicas may serve them).

The error replies the library raises (``ERR aether: ...``) map to aether's errors in one
table, :data:`REFUSALS`; :func:`refusal` looks a reply up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgpack
from redis.asyncio import Redis
from redis.exceptions import RedisError

from aether.errors import (
    AetherError,
    ArchiveError,
    CheckpointError,
    ConcurrentAdminError,
    ConflictError,
    InvalidOperationError,
)
from aether.keys import Keyspace

__all__ = ["FUNCTIONS", "REFUSALS", "Functions", "loaded_version", "refusal"]

Arg = str | bytes | int | float

REFUSALS: tuple[tuple[str, type[AetherError]], ...] = (
    ("aether: exists ", ConflictError),
    ("aether: admin lock not held", ConcurrentAdminError),
    ("aether: an interrupted rollback must be finished first", ConcurrentAdminError),
    ("aether: checkpoint was pruned meanwhile", CheckpointError),
    ("aether: checkpoint id exists", CheckpointError),
    ("aether: no rollback in progress", CheckpointError),
    ("aether: entry ", ArchiveError),
    ("aether: ", InvalidOperationError),
)
"""Prefixes of the library's error replies (after the error code) and aether's error for
each, most specific first; the last is every other refusal of a malformed change."""

FUNCTIONS: dict[str, bool] = {
    "aether_version": True,
    "aether_reads_version": True,
    "aether_coordination_version": True,
    "aether_apply": False,
    "aether_checkpoint": False,
    "aether_rollback_begin": False,
    "aether_rollback_step": False,
    "aether_replay": False,
    "aether_snapshot": True,
    "aether_digests": True,
    "aether_get_fields": True,
    "aether_neighbours": True,
    "aether_unlock": False,
    "aether_reply": False,
    "aether_expand": True,
}
"""Every function of the libraries and whether it is read-only (``no-writes``)."""


def refusal(error: RedisError) -> type[AetherError] | None:
    """The aether error class for one of the library's error replies, if it is one."""
    message = str(error)
    code, _, rest = message.partition(" ")
    for text in (message, rest if code.isupper() else message):
        for prefix, cls in REFUSALS:
            if text.startswith(prefix):
                return cls
    return None


async def loaded_version(client: Redis, version_function: str = "aether_version") -> str:
    """The version of a library loaded in the server (it needs no namespace).

    ``version_function`` names the library: ``aether_version`` is the journal's.

    Raises:
        redis.ResponseError: no library is loaded.
    """
    raw = await client.fcall_ro(version_function, 0)
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class Functions:
    """The library's functions over one namespace's keys.

    Args:
        client: the verified client.
        keys: the namespace's keyspace.
    """

    def __init__(self, client: Redis, keys: Keyspace) -> None:
        self.client = client
        self.keys = keys

    async def _call(self, name: str, keys: Sequence[str | bytes], *args: Arg) -> Any:
        if FUNCTIONS[name]:
            return await self.client.fcall_ro(name, len(keys), *keys, *args)
        return await self.client.fcall(name, len(keys), *keys, *args)

    async def apply(
        self,
        touched: Sequence[str],
        actor: str,
        reason: str,
        payload: bytes,
        hold_token: str = "",
        exact: str = "",
    ) -> Any:
        """Apply msgpacked ops all or nothing and journal them; the entry id.

        ``hold_token`` lets an erasure's own changes through the write hold it set;
        ``exact`` names (1-based, comma-separated) the ops whose document text RedisJSON
        keeps as written (:attr:`aether.store.state.Op.exact`).
        """
        keys = [
            self.keys.journal(),
            self.keys.write_hold(),
            self.keys.archive_cursor(),
            *touched,
        ]
        return await self._call(
            "aether_apply", keys, self.keys.prefix, actor, reason, payload, hold_token, exact
        )

    async def checkpoint(
        self, checkpoint_id: str, created_ms: int, label: str, reason: str, actor: str
    ) -> Any:
        """Record a checkpoint at the journal's current position; that position."""
        keys = [
            self.keys.journal(),
            self.keys.checkpoint(checkpoint_id),
            self.keys.checkpoints(),
            self.keys.write_hold(),
        ]
        return await self._call(
            "aether_checkpoint", keys, checkpoint_id, created_ms, label, reason, actor
        )

    async def rollback_begin(
        self,
        token: str,
        target_id: str,
        target_position: str,
        actor: str,
        reason: str,
        *,
        replace: bool,
        pre_id: str,
    ) -> bool:
        """Hold writes and record a rollback to begin; whether there is anything to undo."""
        keys = [
            self.keys.journal(),
            self.keys.admin_lock(),
            self.keys.write_hold(),
            self.keys.checkpoint(target_id),
        ]
        begun = await self._call(
            "aether_rollback_begin",
            keys,
            token,
            target_position,
            actor,
            reason,
            target_id,
            "1" if replace else "0",
            pre_id,
        )
        return bool(begun)

    async def rollback_step(self, token: str, budget_ms: int) -> Any:
        """One bounded step of the rollback in progress: ``[state, last id, undone, ops]``."""
        keys = [
            self.keys.journal(),
            self.keys.admin_lock(),
            self.keys.write_hold(),
            self.keys.archive_cursor(),
        ]
        return await self._call("aether_rollback_step", keys, token, budget_ms)

    async def replay(
        self,
        touched: Sequence[str | bytes],
        position: str,
        skip: Sequence[str | bytes],
        fields: Sequence[Arg],
    ) -> Any:
        """Re-apply one archived entry under its own id, except on the ``skip`` keys."""
        keys = [self.keys.journal(), *touched]
        return await self._call(
            "aether_replay", keys, self.keys.prefix, position, len(skip), *skip, *fields
        )

    async def snapshot_page(self, cursor: bytes | str, budget_ms: int) -> Any:
        """One page of a base snapshot: ``[next cursor, position, key, dump, ...]``."""
        return await self._call(
            "aether_snapshot",
            [self.keys.journal()],
            cursor,
            self.keys.every_key,
            msgpack.packb(self.keys.non_state_names()),
            msgpack.packb(self.keys.non_state_prefixes()),
            budget_ms,
        )

    async def digests(self, keys: Sequence[str]) -> list[str]:
        """Each key's content digest as the journal's chain records it (``""``: absent)."""
        if not keys:
            return []
        replies = await self._call("aether_digests", [self.keys.journal()], *keys)
        return [r.decode() if isinstance(r, bytes) else str(r) for r in replies]

    async def get_fields(self, keys: Sequence[str], paths: Sequence[str]) -> Any:
        """``JSON.GET`` of ``paths`` for each key (false for a missing key), one round trip."""
        return await self._call("aether_get_fields", keys, *paths)

    async def neighbours(self, lists: Sequence[str], reach: int, pairs: Sequence[str]) -> Any:
        """The ids around each (1-based list index, entry id) pair, ``reach`` either side."""
        return await self._call("aether_neighbours", lists, str(reach), *pairs)

    async def unlock(self, key: str, token: bytes | str) -> int:
        """Delete the lock ``key`` only while it holds ``token``; 1 when it was deleted."""
        return int(await self._call("aether_unlock", [key], token))

    async def reply(
        self, group: str, message_id: str, outbox_maxlen: int, fields: Sequence[str]
    ) -> Any:
        """Acknowledge an inbox message and add its reply to the outbox, atomically."""
        keys = [self.keys.inbox(), self.keys.outbox()]
        return await self._call("aether_reply", keys, group, message_id, outbox_maxlen, *fields)

    async def expand(self, seeds: Sequence[str], depth: int, per_node: int, max_nodes: int) -> Any:
        """The entity graph within ``depth`` hops of ``seeds``: ``[edges, nodes]``."""
        return await self._call(
            "aether_expand",
            [self.keys.entity_names()],
            self.keys.prefix,
            depth,
            per_node,
            max_nodes,
            *seeds,
        )

"""The journaled state API: the one way agent state changes.

Every mutation of identity, daily logs, long-term memory, beliefs, chat sessions and
episodes is a batch of :class:`Op` applied by the ``aether_apply`` Redis Function,
which appends the batch and its inverse to ``ns:journal`` in the same atomic step.
A batch is all or nothing: when one op fails, the ones before it are undone.

Example:
    >>> async with store.mutation("memory.log") as m:      # doctest: +SKIP
    ...     m.json_set(keys.daily_entry(eid), entry)
    ...     m.rpush(keys.daily(day), eid)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgpack
from redis.asyncio import Redis
from redis.exceptions import RedisError

from aether.errors import (
    BusyError,
    CapacityError,
    InvalidOperationError,
    StoreError,
    UnavailableError,
)
from aether.keys import Keyspace
from aether.store.boundary import translate
from aether.store.functions import Functions, refusal
from aether.store.json_text import document_text, redisjson_exact
from aether.store.signing import Signer, sign_head

Arg = str | bytes | int | float

STRUCTURAL_COMMANDS = frozenset(
    {"RPUSH", "LPUSH", "RPOP", "LPOP", "RPUSHCAP", "ZADD", "ZREM", "ZINCRBY"}
)
IMAGE_COMMANDS = frozenset(
    {
        "SET",
        "DEL",
        "HSET",
        "HDEL",
        "HINCRBY",
        "HINCRBYFLOAT",
        "JSON.SET",
        "JSON.DEL",
        "JSON.MERGE",
        "JSON.ARRAPPEND",
        "JSON.NUMINCRBY",
        "JSON.STRAPPEND",
        "SADD",
        "SREM",
        "RESTORE",
    }
)
# a guard changes nothing; it refuses the whole batch when its key exists
GUARD_COMMANDS = frozenset({"ABSENT"})
SUPPORTED_COMMANDS = STRUCTURAL_COMMANDS | IMAGE_COMMANDS | GUARD_COMMANDS
MAX_MUTATION_BYTES = 16 * 1024 * 1024
WRITE_WAIT_S = 30.0
T = TypeVar("T")


async def while_busy(call: Callable[[], Awaitable[T]], what: str, wait_s: float) -> T:
    """Run ``call``, again after a short back-off while Redis answers busy.

    A rollback in progress holds writes back (its steps answer ``TRYAGAIN``); a script
    past its time answers ``BUSY``. Both pass, so a write waits up to ``wait_s``.

    Raises:
        BusyError: still busy after ``wait_s`` (retryable).
    """
    deadline = time.monotonic() + wait_s
    pause = 0.02
    while True:
        try:
            return await call()
        except RedisError as e:
            error = translate(e)
            if not isinstance(error, BusyError):
                if error is e:
                    raise
                raise error from e
            if time.monotonic() + pause > deadline:
                raise BusyError(f"{what} waited {wait_s:g} s; Redis is still busy: {error}") from e
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.5)


def _arg(value: Arg) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bool):
        raise InvalidOperationError("booleans are not Redis values; use '1'/'0'")
    if isinstance(value, float):
        return repr(value).encode()
    return str(value).encode()


@dataclass(frozen=True)
class Op:
    """One state operation: a Redis command on one key of the namespace.

    Attributes:
        cmd: the command, one of :data:`SUPPORTED_COMMANDS` (``RPUSHCAP key cap v...``
            appends and trims the list to its last ``cap`` items).
        key: the key it changes.
        args: the command's remaining arguments.
        exact: a whole-document ``JSON.SET`` whose text ``JSON.GET`` will return unchanged
            (:func:`aether.store.json_text.redisjson_exact`): the journal digests the
            document from it instead of reading it back.
    """

    cmd: str
    key: str
    args: tuple[bytes, ...] = ()
    exact: bool = False

    def pack(self) -> list[bytes]:
        """The op as the Lua library reads it."""
        return [self.cmd.encode(), self.key.encode(), *self.args]


@dataclass
class Mutation:
    """A batch of ops under construction; applied by :meth:`Store.apply`."""

    ops: list[Op] = field(default_factory=list)

    def add(self, cmd: str, key: str, *args: Arg) -> Mutation:
        """Append an op; ``cmd`` must be a supported command."""
        name = cmd.upper()
        if name not in SUPPORTED_COMMANDS:
            raise InvalidOperationError(f"unsupported state command {cmd!r}")
        self.ops.append(Op(name, key, tuple(_arg(a) for a in args)))
        return self

    def absent(self, key: str) -> Mutation:
        """Refuse the whole batch (:class:`ConflictError`) if ``key`` exists when applied."""
        return self.add("ABSENT", key)

    def set(self, key: str, value: Arg) -> Mutation:
        """SET a string key."""
        return self.add("SET", key, value)

    def delete(self, key: str) -> Mutation:
        """DEL a key (its inverse restores it)."""
        return self.add("DEL", key)

    def hset(self, key: str, mapping: Mapping[str, Arg]) -> Mutation:
        """HSET fields of a hash."""
        if not mapping:
            raise InvalidOperationError("hset needs at least one field")
        flat: list[Arg] = []
        for name, value in mapping.items():
            flat.extend((name, value))
        return self.add("HSET", key, *flat)

    def hdel(self, key: str, *fields: str) -> Mutation:
        """HDEL fields of a hash."""
        return self.add("HDEL", key, *fields)

    def json_set(self, key: str, value: Any, path: str = "$") -> Mutation:
        """JSON.SET a document (or the part at ``path``).

        The text is compact JSON with UTF-8 kept, as RedisJSON itself writes it; a whole
        document whose text RedisJSON keeps as written is marked so (:attr:`Op.exact`).
        """
        exact = path in ("$", ".") and redisjson_exact(value)
        args = (_arg(path), _arg(document_text(value)))
        self.ops.append(Op("JSON.SET", key, args, exact=exact))
        return self

    def rpush(self, key: str, *values: Arg) -> Mutation:
        """Append to a list; the inverse is a trim."""
        return self.add("RPUSH", key, *values)

    def rpush_capped(self, key: str, cap: int, *values: Arg) -> Mutation:
        """Append to a list and keep only its last ``cap`` items."""
        if cap < 1:
            raise InvalidOperationError("cap must be >= 1")
        return self.add("RPUSHCAP", key, cap, *values)

    def zadd(self, key: str, mapping: Mapping[str, float], *, gt: bool = False) -> Mutation:
        """ZADD members with scores (``gt``: an existing score only ever rises)."""
        flat: list[Arg] = ["GT"] if gt else []
        for member, score in mapping.items():
            flat.extend((score, member))
        return self.add("ZADD", key, *flat)

    def zincrby(self, key: str, amount: float, member: str) -> Mutation:
        """ZINCRBY one member (a counter; its inverse restores the old score)."""
        return self.add("ZINCRBY", key, amount, member)

    def zrem(self, key: str, *members: str) -> Mutation:
        """ZREM members."""
        return self.add("ZREM", key, *members)

    def sadd(self, key: str, *members: Arg) -> Mutation:
        """SADD members."""
        return self.add("SADD", key, *members)

    def srem(self, key: str, *members: Arg) -> Mutation:
        """SREM members."""
        return self.add("SREM", key, *members)


class Store:
    """Applies mutations to agent state, journaled, on one namespace.

    Args:
        client: a client from :func:`aether.store.client.connect`.
        keys: the namespace's keyspace.
        actor: who is changing state (recorded in the journal), e.g. ``cli`` or ``agent``.
        signer: the journal key: each change's head is signed with it (``None``: unsigned).
    """

    def __init__(
        self,
        client: Redis,
        keys: Keyspace,
        actor: str = "aether",
        write_wait_s: float = WRITE_WAIT_S,
        signer: Signer | None = None,
    ) -> None:
        self.client = client
        self.signer = signer
        self.keys = keys
        self.functions = Functions(client, keys)
        self.actor = actor
        self.write_wait_s = write_wait_s
        self.before_first_write: Callable[[], Awaitable[None]] | None = None
        """Run once before this store's first change (a fresh namespace's indexes)."""

    async def apply(
        self,
        mutation: Mutation,
        reason: str,
        actor: str | None = None,
        *,
        hold_token: str = "",
    ) -> str:
        """Apply a batch atomically and journal its inverse.

        Args:
            mutation: the ops, applied in order.
            reason: what the change is (``memory.log``, ``identity.set``...).
            actor: overrides the store's actor for this change.
            hold_token: an erasure's token: its own changes pass the write hold it set.

        Returns:
            The journal entry id.

        Raises:
            InvalidOperationError: an op names a key outside the namespace's state, or the
                server refused an op (wrong type, invalid JSON...); nothing was changed.
            ConflictError: an :meth:`Mutation.absent` guard found its key; nothing was changed.
            BusyError: Redis stayed busy (or a rollback held writes back) for
                ``write_wait_s``; nothing was changed, try again.
            CapacityError: Redis is out of memory; nothing was changed.
            UnavailableError: Redis cannot be reached; the change may or may not have
                been applied (the journal says).
        """
        if not mutation.ops:
            raise InvalidOperationError("empty mutation")
        for op in mutation.ops:
            if not self.keys.is_state(op.key):
                raise InvalidOperationError(
                    f"{op.key!r} is not journaled agent state of namespace {self.keys.ns!r}"
                )
        if self.before_first_write is not None:
            await self.before_first_write()  # kept until it succeeds
            self.before_first_write = None
        touched = list(dict.fromkeys(op.key for op in mutation.ops))
        payload = msgpack.packb([op.pack() for op in mutation.ops], use_bin_type=False)
        exact = ",".join(str(i) for i, op in enumerate(mutation.ops, 1) if op.exact)
        if len(payload) > MAX_MUTATION_BYTES:
            raise InvalidOperationError(
                f"state change {reason!r} is too large ({len(payload)} bytes > "
                f"{MAX_MUTATION_BYTES}); store large blobs outside agent state"
            )

        async def call() -> Any:
            return await self.functions.apply(
                touched, actor or self.actor, reason, payload, hold_token, exact
            )

        try:
            entry = await while_busy(call, f"state change {reason!r}", self.write_wait_s)
        except (BusyError, CapacityError, UnavailableError):
            raise
        except RedisError as e:
            error = refusal(e) or InvalidOperationError
            raise error(f"state change {reason!r} refused: {e}") from e
        if self.signer is not None:
            await sign_head(self.client, self.keys, self.signer)
        return _text(entry)

    @asynccontextmanager
    async def mutation(self, reason: str, actor: str | None = None) -> AsyncIterator[Mutation]:
        """Collect ops in a block and apply them together when it exits without error."""
        batch = Mutation()
        yield batch
        await self.apply(batch, reason, actor)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    if value is None:
        raise StoreError("the server returned no value")
    return str(value)


def decode_ops(packed: bytes) -> list[list[bytes]]:
    """Decode a journal entry's ``f`` or ``i`` field into ops (lists of bytes)."""
    raw = msgpack.unpackb(packed, raw=True)
    if isinstance(raw, dict):  # Lua packs an empty table as a map
        return []
    return [list(op) for op in raw]

"""One lock for every mutual exclusion: admin actions, maintenance, registry, job slots.

A thin layer over redis-py's :class:`redis.asyncio.lock.Lock` (SET NX PX to take it, a
Lua script to release or extend it only while the token still matches, so a holder whose
lock expired can never delete someone else's). What aether adds: a token it can read
(``aether_rollback_step`` checks that the caller still holds the admin lock) and a refusal
that is a :class:`~aether.errors.ConcurrentAdminError` with a message saying who waits
for what.
"""

from __future__ import annotations

import secrets
from types import TracebackType

import structlog
from redis.asyncio import Redis
from redis.exceptions import LockError

from aether.errors import ConcurrentAdminError

log = structlog.get_logger(__name__)


class StateLock:
    """A named lock in Redis with an expiry.

    Args:
        client: the namespace's client.
        key: the lock's key.
        ttl_s: how long the lock lives without :meth:`extend` (a crashed holder's lock
            frees itself after this).
        wait_s: how long :meth:`acquire` waits for a held lock (0: refuse at once).
        busy: the message of the :class:`ConcurrentAdminError` raised by ``async with``
            when the lock stays held.
        token: the value stored in the lock (random by default).
    """

    def __init__(
        self,
        client: Redis,
        key: str,
        *,
        ttl_s: float,
        wait_s: float = 0.0,
        busy: str = "",
        token: str | None = None,
    ) -> None:
        self.key = key
        self.busy = busy or f"{key} is held by another process; try again when it is released"
        self.token = token or secrets.token_hex(16)
        self._wait_s = wait_s
        self._lock = client.lock(
            key,
            timeout=ttl_s,
            sleep=0.02,
            blocking=wait_s > 0,
            blocking_timeout=wait_s or None,
            thread_local=False,
        )

    async def acquire(self) -> bool:
        """Take the lock (waiting up to ``wait_s``); ``False`` when someone else holds it."""
        return bool(await self._lock.acquire(token=self.token))

    async def extend(self) -> None:
        """Reset the expiry to the full ``ttl_s`` (a long action calls it as it goes)."""
        await self._lock.reacquire()

    async def release(self) -> None:
        """Release the lock if this holder still has it (atomically)."""
        try:
            await self._lock.release()
        except LockError:
            log.warning("lock expired before it was released", key=self.key)

    async def __aenter__(self) -> StateLock:
        if not await self.acquire():
            raise ConcurrentAdminError(self.busy)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.release()

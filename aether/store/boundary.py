"""Where redis-py's errors become aether's: the client every entry point gets.

:func:`aether.store.client.connect` returns an :class:`AetherRedis`; its commands and
pipelines raise :class:`~aether.errors.UnavailableError` when Redis cannot be reached,
:class:`~aether.errors.BusyError` when it is busy (a script past its time, loading, a
rollback holding writes back), :class:`~aether.errors.CapacityError` when it is out of
memory and :class:`~aether.errors.RefusedError` for any other refusal. Each is also the
redis-py class it replaces, so redis-py's own machinery (retries, ``NOSCRIPT`` fallback,
locks) and redisvl keep working; subclasses of ``ResponseError`` that carry protocol
meaning (``NOSCRIPT``, ``MOVED``...) pass through untouched.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import OutOfMemoryError, ResponseError, TryAgainError

from aether.errors import BusyError, CapacityError, RefusedError, UnavailableError
from aether.store.packing import pack_with_hiredis

# prefixes of error replies that mean "busy now, the same call may succeed later"
BUSY_PREFIXES = ("BUSY", "MASTERDOWN")


def translate(error: redis.RedisError) -> Exception:
    """Aether's error for a redis-py error (the error itself when it is already ours)."""
    if isinstance(error, BusyError | CapacityError | RefusedError | UnavailableError):
        return error
    message = str(error)
    if isinstance(error, redis.ConnectionError | redis.TimeoutError):
        return UnavailableError(f"Redis is unreachable: {message}")
    if isinstance(error, OutOfMemoryError) or message.startswith("OOM"):
        return CapacityError(
            f"Redis is out of memory (maxmemory reached), nothing changed: {message}"
        )
    if isinstance(error, TryAgainError) or message.startswith(BUSY_PREFIXES):
        return BusyError(f"Redis is busy, nothing changed; try again: {message}")
    if type(error) is ResponseError:
        return RefusedError(message)
    return error


class AetherPipeline(Pipeline):
    """A pipeline whose ``execute`` raises aether's errors."""

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Run the queued commands (see redis-py's ``Pipeline.execute``)."""
        try:
            return await super().execute(raise_on_error)
        except redis.RedisError as e:
            raise translate(e) from e


class AetherRedis(Redis):
    """redis-py's asyncio client, with errors translated at the boundary.

    Its connections pack commands with hiredis (:mod:`aether.store.packing`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        pack_with_hiredis(self.connection_pool)

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        """Run one command (see redis-py's ``Redis.execute_command``)."""
        try:
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except redis.RedisError as e:
            raise translate(e) from e

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        """A pipeline that raises aether's errors (see redis-py's ``Redis.pipeline``)."""
        return AetherPipeline(
            self.connection_pool, self.response_callbacks, transaction, shard_hint
        )

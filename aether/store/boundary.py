"""Where redis-py's errors become aether's: the client every entry point gets.

:func:`aether.store.client.connect` returns an :class:`AetherRedis`; its commands and
pipelines raise :class:`~aether.errors.UnavailableError` when Redis cannot be reached,
:class:`~aether.errors.BusyError` when it is busy (a script past its time, loading, a
rollback holding writes back), :class:`~aether.errors.CapacityError` when it is out of
memory and :class:`~aether.errors.RefusedError` for any other refusal. Each is also the
redis-py class it replaces, so redis-py's own machinery (retries, ``NOSCRIPT`` fallback,
locks) and redisvl keep working; subclasses of ``ResponseError`` that carry protocol
meaning (``NOSCRIPT``, ``MOVED``...) pass through untouched.

Its connections come from an :class:`AetherPool`: a bounded pool where a call waits for
a free connection (up to a timeout) instead of failing at once when many calls run
together; one that waits too long raises :class:`~aether.errors.PoolExhaustedError`,
which names the pool and its settings, not Redis.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.asyncio.connection import BlockingConnectionPool
from redis.exceptions import OutOfMemoryError, ResponseError, TryAgainError

from aether.errors import (
    BusyError,
    CapacityError,
    PoolExhaustedError,
    RefusedError,
    UnavailableError,
)
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


class AetherPool(BlockingConnectionPool):
    """redis-py's blocking pool: at most ``max_connections``, a call waits ``timeout`` s.

    Args:
        max_connections: the pool's size (``AETHER_REDIS_POOL_SIZE``).
        timeout: how long a call waits for a connection (``AETHER_REDIS_POOL_TIMEOUT_S``).
        **kwargs: the connections' arguments (redis-py's ``ConnectionPool``).
    """

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        """A free connection, waiting for one (see redis-py's ``BlockingConnectionPool``).

        Raises:
            PoolExhaustedError: none was free within the pool's timeout.
        """
        try:
            return await super().get_connection(*args, **kwargs)  # type: ignore[no-untyped-call]
        except redis.ConnectionError as e:
            if not isinstance(e.__cause__, TimeoutError):
                raise  # Redis itself did not answer: the caller's translation applies
            raise PoolExhaustedError(
                f"all {self.max_connections} connections of this process's Redis pool "
                f"stayed busy for {self.timeout:g} s: too many calls at once (raise "
                "AETHER_REDIS_POOL_SIZE or AETHER_REDIS_POOL_TIMEOUT_S, or run fewer)"
            ) from e


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

    @classmethod
    def bounded(cls, template: Redis, size: int, timeout: float) -> AetherRedis:
        """A client with ``template``'s connection settings over an :class:`AetherPool`.

        ``template`` is an unconnected client made the usual way (``Redis(...)`` or
        ``Redis.from_url``), so the connections keep redis-py's defaults (its retry on a
        timed-out read among them); it is not used afterwards.
        """
        model = template.connection_pool
        pool = AetherPool(
            connection_class=model.connection_class,
            max_connections=size,
            timeout=timeout,
            **model.connection_kwargs,
        )
        return cls.from_pool(pool)  # type: ignore[return-value]

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

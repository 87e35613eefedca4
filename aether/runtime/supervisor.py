"""Keeps the daemon's long-running tasks alive through Redis outages and their own bugs.

Each task (inbox, beat, events, embedding service, MCP) runs under :meth:`Supervisor.start`:

* a Redis error (connection lost, timeout, a server still loading its data) is an
  outage: it is logged once, whichever task sees it first; one task probes Redis with a
  capped exponential back-off while the others wait; when Redis answers, what a restart
  may have lost is re-created (``recover``: consumer group, Functions library, search
  index) and every task resumes;
* any other exception is a bug: it is logged with its traceback and the task restarts
  after a back-off, its name shown in the daemon's health until it runs again.

A task that returns has finished (the daemon is stopping).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from aether.errors import REDIS_OUTAGE, describe
from aether.runtime.health import Health

log = structlog.get_logger(__name__)

OUTAGE = REDIS_OUTAGE
FIRST_BACKOFF_S = 0.2
MAX_BACKOFF_S = 10.0
# a task that ran this long before failing again starts its back-off afresh
STABLE_S = 30.0


class Supervisor:
    """Runs tasks until ``stop`` is set, through outages and crashes.

    Args:
        client: the client whose server is probed during an outage.
        health: where outages and restarts are recorded.
        stop: set when the daemon stops.
        recover: re-creates what a Redis restart may have lost (idempotent).
        max_backoff_s: the longest pause between two tries.
    """

    def __init__(
        self,
        client: Redis,
        health: Health,
        stop: asyncio.Event,
        recover: Callable[[], Awaitable[None]],
        max_backoff_s: float = MAX_BACKOFF_S,
    ) -> None:
        self.client = client
        self.health = health
        self.stop = stop
        self.recover = recover
        self.max_backoff_s = max_backoff_s
        self._probe = asyncio.Lock()
        self.tasks: list[asyncio.Task[None]] = []

    def start(self, name: str, work: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Run ``work`` under supervision, as a task named ``name``."""
        task = asyncio.create_task(self._keep(name, work), name=name)
        self.tasks.append(task)
        return task

    async def _keep(self, name: str, work: Callable[[], Awaitable[None]]) -> None:
        backoff = FIRST_BACKOFF_S
        while not self.stop.is_set():
            began = time.monotonic()
            try:
                await work()
                self.health.restarting.pop(name, None)
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:
                lost = isinstance(e, OUTAGE) or _redis_gone(e)
                if lost and await self.outage(e, task=name):
                    continue  # Redis was away and is back: resume at once
                if self.stop.is_set():
                    return
                if time.monotonic() - began > STABLE_S:
                    backoff = FIRST_BACKOFF_S
                self.health.restarting[name] = describe(e)
                log.error("task failed; restarting it", task=name, backoff_s=backoff, exc_info=True)
            if await self._pause(backoff):
                return
            backoff = min(backoff * 2, self.max_backoff_s)

    async def outage(self, error: BaseException, task: str = "") -> bool:
        """Wait out a Redis outage (one prober at a time), then recover.

        Returns True when Redis was away and answers again, or answered at once after a
        connection error (another task had already waited the outage out); False when the
        error was not Redis's, or the daemon stopped meanwhile.
        """
        async with self._probe:
            backoff = FIRST_BACKOFF_S
            while not self.stop.is_set():
                try:
                    await self.client.ping()
                    await self.recover()
                except OUTAGE as e:
                    if self.health.redis_lost(e if str(e) else error):
                        log.warning(
                            "redis unavailable; waiting for it to come back",
                            task=task,
                            error=describe(error),
                        )
                    if await self._pause(backoff):
                        return False
                    backoff = min(backoff * 2, self.max_backoff_s)
                    continue
                if self.health.redis_down_since is not None:
                    away = self.health.redis_back()
                    log.warning("redis is back; resuming", after_s=round(away, 1))
                    return True
                return isinstance(error, RedisConnectionError | RedisTimeoutError)
            return False

    async def _pause(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless the daemon stops first (True: it stopped)."""
        try:
            await asyncio.wait_for(self.stop.wait(), timeout=seconds)
        except TimeoutError:
            return False
        return True

    async def wait(self) -> None:
        """Wait for every supervised task to finish."""
        await asyncio.gather(*self.tasks, return_exceptions=True)


def _redis_gone(error: BaseException) -> bool:
    """An error that hides a lost connection (a driver error re-raised as ours)."""
    context = error.__context__
    return isinstance(context, OUTAGE)

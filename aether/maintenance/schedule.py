"""Periodic jobs of the daemon: apscheduler 3.x ``AsyncIOScheduler`` plus a Redis claim.

Job ids are fixed (``replace_existing``), so starting twice never doubles a job inside
one process. Across processes, each run first claims its slot with ``SET NX EX`` on
``ns:lock:job:<id>`` for 90 % of the interval and the claim is left to expire: when two
daemons serve one namespace, only one of them runs each slot of each job.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from redis.asyncio import Redis

from aether.errors import REDIS_OUTAGE, AetherError
from aether.keys import Keyspace
from aether.store.lock import StateLock

log = structlog.get_logger(__name__)

Job = Callable[[], Awaitable[object]]


class Schedule:
    """The daemon's periodic jobs.

    Args:
        client: the Redis client (for the claims).
        keys: the namespace's keyspace.
    """

    def __init__(self, client: Redis, keys: Keyspace) -> None:
        self.client = client
        self.keys = keys
        self.owner = secrets.token_hex(6)
        self.scheduler = AsyncIOScheduler(timezone=UTC)
        # every run is logged by the job itself; apscheduler's own INFO lines are noise
        logging.getLogger("apscheduler").setLevel(logging.WARNING)
        self.runs: dict[str, int] = {}

    def add(
        self, job_id: str, interval_s: float, job: Job, first_in_s: float | None = None
    ) -> None:
        """Run ``job`` every ``interval_s`` (first after ``first_in_s``, default one interval)."""
        first = datetime.now(UTC) + timedelta(
            seconds=interval_s if first_in_s is None else first_in_s
        )
        self.scheduler.add_job(
            self._guarded,
            "interval",
            seconds=interval_s,
            id=job_id,
            args=[job_id, interval_s, job],
            replace_existing=True,
            name=job_id,
            max_instances=1,
            coalesce=True,
            next_run_time=first,
            misfire_grace_time=max(1, int(interval_s)),
        )

    async def claim(self, job_id: str, interval_s: float) -> bool:
        """Claim this slot of ``job_id`` for this process (``False``: another has it)."""
        # held, never released, for 90 % of the interval: one run per slot across daemons
        slot = StateLock(
            self.client,
            self.keys.job_lock(job_id),
            ttl_s=max(0.1, interval_s * 0.9),
            token=self.owner,
        )
        return await slot.acquire()

    async def _guarded(self, job_id: str, interval_s: float, job: Job) -> None:
        try:
            claimed = await self.claim(job_id, interval_s)
        except REDIS_OUTAGE:
            log.debug("job skipped: Redis is unavailable", job=job_id)
            return
        if not claimed:
            log.debug("job slot taken by another daemon", job=job_id)
            return
        self.runs[job_id] = self.runs.get(job_id, 0) + 1
        try:
            await job()
        except AetherError as e:
            log.error("scheduled job failed", job=job_id, error=str(e))

    def start(self) -> None:
        """Start running jobs (on the running event loop)."""
        self.scheduler.start()

    def shutdown(self) -> None:
        """Stop; a job running now is not waited for."""
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

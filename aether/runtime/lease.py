"""One daemon per namespace: a lease in Redis that the running daemon keeps renewing.

The lease is ``ns:daemon:alive``: set if absent with an expiry, its value the holder
(pid, host, start time, instance id) as JSON. The daemon renews it every third of the
lease period and releases it on exit; a daemon that dies lets it expire, so a standby
takes over within one lease period. A daemon restarted on the same host after a crash
does not wait: the holder's pid is gone, so the stale lease is removed (only if it still
names that holder) and taken. Taking, renewing and releasing go through redis-py's
``Lock``, whose renewal and release check the holder's token atomically (a Lua script):
a daemon that lost its lease (paused past the expiry while another took over) can
neither renew nor release the new holder's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import structlog
from redis.asyncio import Redis
from redis.exceptions import LockError

from aether.codec import text
from aether.errors import AetherError
from aether.keys import Keyspace
from aether.runtime.health import Health
from aether.store.functions import Functions

log = structlog.get_logger(__name__)

LEASE_S = 15.0


class LeaseHeldError(AetherError):
    """Another daemon holds the namespace's lease."""


class LeaseLostError(AetherError):
    """This daemon's lease expired and another daemon took the namespace."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lease: enough for an operator to find the process."""

    pid: int
    host: str
    started_at: str
    instance: str

    @classmethod
    def this_process(cls) -> Holder:
        """The current process, with a fresh instance id."""
        return cls(
            pid=os.getpid(),
            host=socket.gethostname(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            instance=uuid.uuid4().hex[:12],
        )

    def describe(self) -> str:
        """``pid 4242 on host-a since 2026-11-23T19:05:00+00:00``."""
        return f"pid {self.pid} on {self.host} since {self.started_at}"


def parse_holder(raw: bytes | str | None) -> Holder | None:
    """The holder in a lease's value (None when absent or not aether's)."""
    if raw is None:
        return None
    try:
        data = json.loads(text(raw))
        return Holder(
            int(data["pid"]), str(data["host"]), str(data["started_at"]), str(data["instance"])
        )
    except (ValueError, KeyError, TypeError):
        return None


class DaemonLease:
    """The lease of one namespace, as one daemon instance sees it.

    Args:
        client: the namespace's client.
        keys: the namespace's keyspace.
        holder: this instance.
        lease_s: how long the lease lasts without a renewal.
    """

    def __init__(
        self, client: Redis, keys: Keyspace, holder: Holder, lease_s: float = LEASE_S
    ) -> None:
        self.client = client
        self.keys = keys
        self.holder = holder
        self.lease_s = lease_s
        self.token = json.dumps(asdict(holder), sort_keys=True)
        self._lock = client.lock(
            keys.daemon_presence(), timeout=lease_s, blocking=False, thread_local=False
        )

    async def acquire(self) -> None:
        """Take the lease now.

        Raises:
            LeaseHeldError: another daemon holds it (the message says who).
        """
        if await self._take():
            return
        current = parse_holder(await self.client.get(self.keys.daemon_presence()))
        who = current.describe() if current else "another process"
        raise LeaseHeldError(
            f"another daemon runs namespace {self.keys.ns!r}: {who}; stop it first, or "
            "start this one with --standby to take over when it stops"
        )

    async def _take(self) -> bool:
        """Take the lease if it is free, or held by a daemon of this host that died."""
        if await self._lock.acquire(token=self.token):
            return True
        raw = await self.client.get(self.keys.daemon_presence())
        current = parse_holder(raw)
        if raw is None or current is None or not self._died_here(current):
            return False
        # a crashed daemon of this host: its lease is stale, no need to wait it out
        await Functions(self.client, self.keys).unlock(self.keys.daemon_presence(), raw)
        log.warning("took over the lease of a daemon that died", holder=current.describe())
        return bool(await self._lock.acquire(token=self.token))

    def _died_here(self, holder: Holder) -> bool:
        """Whether ``holder`` ran on this host and its process is gone."""
        if holder.host != self.holder.host or holder.pid == os.getpid():
            return False
        try:
            os.kill(holder.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False  # alive, another user's
        return False

    async def wait(self, stop: asyncio.Event) -> bool:
        """Stand by until the lease is free and take it (False: stopped before that)."""
        while not stop.is_set():
            if await self._take():
                return True
            try:
                await asyncio.wait_for(stop.wait(), timeout=self.lease_s / 5)
            except TimeoutError:
                continue
        return False

    async def renew(self) -> None:
        """Extend the lease by a whole period from now.

        Raises:
            LeaseLostError: it expired and another daemon holds it now.
        """
        try:
            await self._lock.reacquire()
        except LockError as e:
            if await self._lock.acquire(token=self.token):
                return  # it expired (Redis restarted empty, say) and nobody took it
            raise LeaseLostError(
                f"this daemon lost namespace {self.keys.ns!r} to another one: {e}"
            ) from e

    async def release(self) -> None:
        """Give the lease back (nothing happens when it is no longer this daemon's)."""
        with contextlib.suppress(LockError):
            await self._lock.release()


async def reclaim(lease: DaemonLease, health: Health) -> None:
    """Take the lease again and publish ``health`` at once (Redis is back after an outage).

    A lease that expired during the outage is taken again here rather than at the next
    renewal, so ``aether send`` finds the daemon as soon as it answers again. A lease
    another daemon took meanwhile is left alone: ``keep_alive`` stops this one.
    """
    with contextlib.suppress(LeaseLostError):
        await lease.renew()
        await publish(lease, health)


async def publish(lease: DaemonLease, health: Health) -> None:
    """Write ``health`` for ``aether status`` (nothing while the daemon is starting)."""
    if health.ready:
        payload = json.dumps(health.to_dict(), sort_keys=True)
        await lease.client.set(lease.keys.daemon_health(), payload, px=int(lease.lease_s * 1000))


async def keep_alive(lease: DaemonLease, health: Health, stop: asyncio.Event) -> None:
    """Renew the lease and publish ``health`` every third of a lease period, until stopped.

    A lease lost to another daemon stops this one (two would answer the same inbox).
    """
    while not stop.is_set():
        try:
            await lease.renew()
        except LeaseLostError as e:
            log.error("stopping: another daemon took over this namespace", error=str(e))
            stop.set()
            return
        await publish(lease, health)
        try:
            await asyncio.wait_for(stop.wait(), timeout=lease.lease_s / 3)
        except TimeoutError:
            continue
    await lease.client.delete(lease.keys.daemon_health())

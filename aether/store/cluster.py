"""One agent in a Redis Cluster: a client pinned to the shard that owns its hash slot.

Every key of a namespace carries its hash tag (``{agent-a}:...``), so all of one agent's
state is in one slot, on one primary at a time. :class:`SlotRedis` is therefore an
ordinary :class:`~aether.store.boundary.AetherRedis` connected to that primary, which
follows the cluster's redirections:

- ``MOVED`` (the slot now lives elsewhere): it reconnects to the new owner, tells its
  move listeners (the search indexes are ensured there), and runs the call again;
- ``ASK`` (the slot is being migrated and this key has already left): it sends
  ``ASKING`` and the call to the importing node on one connection;
- a pipeline that meets ``MOVED`` runs again whole on the new owner; one that meets
  ``ASK`` (a migration in flight) waits briefly and runs again.

Why not redis-py's ``RedisCluster`` for every call: one agent never spans two slots, and
everything aether does (transactions, Functions, ``FT.*`` commands, redisvl) works on a
plain client connected to the slot's owner, where the cluster client would route each of
these differently (transactions and keyless module commands in particular). redis-py's
cluster client is used for what it is for: discovering the topology
(:func:`open_slot_client`) and reaching every primary (:func:`each_primary`), where the
Functions library is loaded.

The search module of open-source Redis 8 hashes an index name like a key: an agent's
index exists on the primary that owns its slot and cannot be created elsewhere ahead of
a migration. After a move the index is created on the new owner, which indexes the
migrated documents in the background (searches see them as they are indexed).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import structlog
from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import AskError, MovedError

from aether.codec import text
from aether.errors import AetherError, BusyError, ConfigError, UnavailableError
from aether.store.boundary import AetherPipeline, AetherPool, AetherRedis
from aether.store.packing import pack_with_hiredis

log = structlog.get_logger(__name__)

MAX_REDIRECTS = 16
"""Redirections one call follows before giving up (a slot moving back and forth)."""
ASK_PAUSE_S = 0.05
"""How long a pipeline waits for a migration in flight before running again."""
_HASH_TAG = re.compile(r"\{[^{}]+\}")

MoveListener = Callable[[], Awaitable[None]]
UNDECLARED_READS = frozenset(
    {
        "aether_rollback_begin",
        "aether_rollback_step",
        "aether_snapshot",
        "aether_expand",
    }
)
"""Functions that read keys found at run time (in the journal, by a scan, along the
graph): never sent to a node importing the slot, where some of those keys are not yet."""

MIGRATING = "the agent's hash slot is being migrated; try again when the move is done"


def require_hash_tag(namespace: str) -> str:
    """The namespace's hash tag, e.g. ``{agent-a}``.

    Raises:
        ConfigError: the namespace has no non-empty ``{...}``: its keys would spread over
            the cluster's slots and no multi-key call (a journaled write, a rollback, an
            inbox reply) could run.
    """
    found = _HASH_TAG.search(namespace)
    if found is None or namespace.find("{") != found.start():
        raise ConfigError(
            f"namespace {namespace!r} has no hash tag: in a Redis Cluster set "
            "AETHER_NAMESPACE to a name in braces, e.g. AETHER_NAMESPACE={agent-a}, so that "
            "all of one agent's keys share one hash slot"
        )
    return found.group(0)


def node_url(url: str, host: str, port: int) -> str:
    """``url`` (credentials, options) pointed at another node."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{host}:{port}" if credentials else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


class SlotPipeline(AetherPipeline):
    """A pipeline of :class:`SlotRedis` that runs again after a redirection."""

    owner: SlotRedis

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Run the queued commands on the slot's owner (see redis-py's ``execute``)."""
        stack = list(self.command_stack)
        for _ in range(MAX_REDIRECTS):
            try:
                return await super().execute(raise_on_error)
            except AskError as e:
                if not isinstance(e, MovedError):
                    await asyncio.sleep(ASK_PAUSE_S)
                else:
                    await self.owner.follow(e)
            self.connection_pool = self.owner.connection_pool
            self.command_stack = list(stack)
        raise UnavailableError("the agent's hash slot keeps moving; try again")


class SlotRedis(AetherRedis):
    """An :class:`AetherRedis` on the primary that owns one hash slot, following moves.

    Args:
        url: the cluster's URL (any node; credentials and options are reused).
        host: the owner's host.
        port: the owner's port.
        slot: the agent's hash slot.
        pool_size: connections to the owner at most; more calls wait (``AetherPool``).
        pool_timeout: how long a call waits for one.
    """

    def __init__(
        self,
        url: str,
        host: str,
        port: int,
        slot: int,
        pool_size: int = 64,
        pool_timeout: float = 30.0,
    ) -> None:
        self.pool_size, self.pool_timeout = pool_size, pool_timeout
        super().__init__(connection_pool=self._pool((host, port), url))
        self.url = url
        self.slot = slot
        self.owner_address = (host, port)
        self._retired: list[ConnectionPool] = []
        self._listeners: dict[str, MoveListener] = {}
        self._moving = asyncio.Lock()

    def on_move(self, name: str, listener: MoveListener) -> None:
        """Call ``listener`` after each move to a new owner (one listener per ``name``)."""
        self._listeners[name] = listener

    async def ensure_settled(self) -> None:
        """Refuse (busy) while the agent's slot is being migrated from or to its owner.

        Called before an admin action that reads keys it cannot declare (a rollback, a
        restore): on a half-migrated slot it would miss the keys that already left.

        Raises:
            BusyError: the slot is migrating; retry once the move is done.
        """
        nodes = text(await self.execute_command("CLUSTER", "NODES"))
        myself = next((line for line in nodes.splitlines() if "myself" in line), "")
        if f"[{self.slot}->-" in myself or f"[{self.slot}-<-" in myself:
            raise BusyError(MIGRATING)

    def _pool(self, address: tuple[str, int], url: str) -> ConnectionPool:
        """A bounded pool to one node (calls wait for a free connection)."""
        return AetherPool.from_url(
            node_url(url, *address), max_connections=self.pool_size, timeout=self.pool_timeout
        )

    async def follow(self, moved: MovedError) -> None:
        """Reconnect to the slot's new owner, named by a ``MOVED`` reply."""
        address = (str(moved.host), int(moved.port))
        async with self._moving:
            if address == self.owner_address:
                return  # another call already followed it
            log.info("hash slot moved", slot=moved.slot_id, to=f"{address[0]}:{address[1]}")
            self._retired.append(self.connection_pool)
            self.connection_pool = pack_with_hiredis(self._pool(address, self.url))
            self.owner_address = address
        for name, listener in list(self._listeners.items()):
            try:
                await listener()
            except AetherError as e:  # a listener's failure must not fail the moved call
                log.warning("after a slot move", listener=name, error=str(e))

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        """Run one command on the slot's owner, following ``MOVED`` and ``ASK``."""
        for _ in range(MAX_REDIRECTS):
            try:
                return await super().execute_command(*args, **options)
            except AskError as e:
                if isinstance(e, MovedError):
                    await self.follow(e)
                    continue
                return await self._asking(e, args, options)
        raise UnavailableError("the agent's hash slot keeps moving; try again")

    async def _asking(self, ask: AskError, args: tuple[Any, ...], options: dict[str, Any]) -> Any:
        """Send one command to the node importing the slot, after ``ASKING``.

        Raises:
            BusyError: the call is a function that reads keys it cannot declare (a
                rollback step, a snapshot, a graph expansion): on a half-migrated slot
                it would miss the keys not moved yet, so it waits for the move to end.
        """
        call = text(args[0]).upper()
        if call in ("FCALL", "FCALL_RO") and len(args) > 1 and text(args[1]) in UNDECLARED_READS:
            raise BusyError(MIGRATING)
        target = AetherRedis.from_url(node_url(self.url, str(ask.host), int(ask.port)))
        try:
            pipe = target.pipeline(transaction=False)
            pipe.execute_command("ASKING")
            pipe.execute_command(*args, **options)
            return (await pipe.execute())[1]
        finally:
            await target.aclose()

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        """A pipeline that follows the slot (see redis-py's ``Redis.pipeline``)."""
        pipe = SlotPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.owner = self
        return pipe

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        """Close the connections to the current and every former owner."""
        for pool in self._retired:
            await pool.disconnect()
        self._retired.clear()
        await super().aclose(close_connection_pool)


async def open_slot_client(
    url: str, namespace: str, pool_size: int = 64, pool_timeout: float = 30.0
) -> SlotRedis:
    """A client on the primary that owns ``namespace``'s hash slot (a bounded pool).

    Raises:
        ConfigError: the namespace has no hash tag.
        redis.RedisError: the cluster cannot be reached.
    """
    tag = require_hash_tag(namespace)
    cluster = RedisCluster.from_url(url)
    try:
        await cluster.initialize()
        owner = cluster.get_node_from_key(tag)
        if owner is None:
            raise UnavailableError(f"no primary of the cluster serves the slot of {tag}")
        slot = cluster.keyslot(tag)
        return SlotRedis(url, owner.host, int(owner.port), slot, pool_size, pool_timeout)
    finally:
        await cluster.aclose()


async def each_primary(url: str, work: Callable[[Redis], Awaitable[None]]) -> int:
    """Run ``work`` with a client on every primary of the cluster; returns how many."""
    cluster = RedisCluster.from_url(url)
    try:
        await cluster.initialize()
        primaries = cluster.get_primaries()
    finally:
        await cluster.aclose()
    async with AsyncExitStack() as stack:
        for node in primaries:
            client = AetherRedis.from_url(node_url(url, node.host, int(node.port)))
            stack.push_async_callback(client.aclose)
            await work(client)
    return len(primaries)

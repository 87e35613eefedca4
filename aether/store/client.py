"""Client factory: one verified async Redis connection per entry point.

Embedded unless ``AETHER_REDIS_URL`` is set; the embedded server is started on demand.
Every connection, embedded or external, is checked for Redis >= 7.4 with the search
and JSON modules, and gets aether's Functions library loaded.
"""

from __future__ import annotations

import asyncio
from importlib import resources
from urllib.parse import urlsplit, urlunsplit

import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from aether.codec import command
from aether.config import Settings
from aether.errors import ConfigError, IncompatibleServerError, ServerError, StoreError
from aether.server.compat import verify_server
from aether.server.embedded import EmbeddedRedis
from aether.store.boundary import AetherRedis
from aether.store.cluster import each_primary, open_slot_client
from aether.store.functions import loaded_version

log = structlog.get_logger(__name__)

LIBRARIES = (
    ("journal.lua", "aether_version"),
    ("reads.lua", "aether_reads_version"),
    ("coordination.lua", "aether_coordination_version"),
)
"""aether's Functions libraries (one per concern) and the function that names the version
each has loaded."""


def library_source(name: str = "journal.lua") -> str:
    """The Lua source of one of aether's Functions libraries."""
    return resources.files("aether.store").joinpath(name).read_text(encoding="utf-8")


def _library_version(source: str, name: str) -> str:
    for line in source.splitlines():
        if line.startswith("local VERSION = "):
            return line.split("=", 1)[1].strip().strip("'\"")
    raise StoreError(f"{name} has no VERSION line")


def describe_url(url: str) -> str:
    """A URL with its password removed, to name a server in messages."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


async def load_library(client: Redis) -> None:
    """Load (or upgrade) each Functions library; a no-op for one whose version is loaded."""
    for name, version_function in LIBRARIES:
        source = library_source(name)
        wanted = _library_version(source, name)
        try:
            if await loaded_version(client, version_function) == wanted:
                continue
        except ResponseError:
            pass
        try:
            await command(client, "FUNCTION", "LOAD", "REPLACE", source)
        except ResponseError as e:
            raise StoreError(f"cannot load aether's Redis Functions library {name}: {e}") from e


async def connect(settings: Settings, *, start: bool = True) -> Redis:
    """Open a verified client (bytes in, bytes out) with the library loaded.

    Its errors are aether's (:mod:`aether.store.boundary`): ``UnavailableError``,
    ``BusyError``, ``CapacityError``, ``RefusedError``.

    Args:
        settings: the effective settings.
        start: start the embedded server when it is not running.

    Raises:
        IncompatibleServerError: the server lacks the version or modules.
        ServerError: the server cannot be reached or started.
        ConfigError: cluster mode without a URL, or a namespace without a hash tag.
    """
    if settings.redis_cluster and settings.redis_url is None:
        raise ConfigError("AETHER_REDIS_CLUSTER needs AETHER_REDIS_URL (a node of the cluster)")
    if settings.redis_url is not None:
        url = settings.redis_url.get_secret_value()
        where = describe_url(url)
        if settings.redis_cluster:
            return await _connect_cluster(url, settings, where)
        client: Redis = AetherRedis.bounded(
            Redis.from_url(url, decode_responses=False),
            settings.redis_pool_size,
            settings.redis_pool_timeout_s,
        )
    else:
        server = EmbeddedRedis(settings)
        if start:
            status = await asyncio.to_thread(server.start)
        else:
            status = await asyncio.to_thread(server.status)
            if not status.running:
                raise ServerError("the embedded Redis is not running: run 'aether redis start'")
        endpoint = status.endpoint
        where = f"unix://{endpoint.unix_socket}"
        client = AetherRedis.bounded(
            Redis(
                unix_socket_path=str(endpoint.unix_socket),
                password=endpoint.password,
                decode_responses=False,
            ),
            settings.redis_pool_size,
            settings.redis_pool_timeout_s,
        )
    try:
        await verify_server(client, where)
        await load_library(client)
    except IncompatibleServerError:
        await client.aclose()
        raise
    except RedisError as e:
        await client.aclose()
        raise ServerError(f"cannot use Redis at {where}: {e}") from e
    return client


_PREPARED_CLUSTERS: set[str] = set()
"""Clusters whose primaries this process has checked and loaded the library on (a fleet
of agents in one process prepares its cluster once)."""


async def _connect_cluster(url: str, settings: Settings, where: str) -> Redis:
    """A client on the shard owning the namespace's slot; the library on every primary."""

    async def prepare(node: Redis) -> None:
        await verify_server(node, where)
        await load_library(node)

    try:
        if url not in _PREPARED_CLUSTERS:
            await each_primary(url, prepare)
            _PREPARED_CLUSTERS.add(url)
        client = await open_slot_client(
            url, settings.namespace, settings.redis_pool_size, settings.redis_pool_timeout_s
        )
    except RedisError as e:
        raise ServerError(f"cannot use the Redis Cluster at {where}: {e}") from e
    return client

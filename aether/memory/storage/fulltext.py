"""The full-text index ``ns:memory:idx`` (redisvl), created idempotently.

One JSON index over every memory kind (daily entries, long-term memories, beliefs,
events, decisions, failures): content TEXT (weight 2.0, stemmed),
kind/source/tags/session/status/scope/pattern/hash TAG, timestamp/score NUMERIC
sortable. Vectors live in their own hashes and index (``aether.memory.storage.vectors``). When
the wanted schema changes, the index is rebuilt over the same documents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from redis.asyncio import Redis
from redisvl.index import AsyncSearchIndex
from redisvl.query import BaseQuery

from aether.codec import text
from aether.keys import Keyspace
from aether.memory.storage.index_schemas import fingerprint
from aether.memory.storage.index_schemas import text_schema as schema

log = structlog.get_logger(__name__)


def search_command(index: AsyncSearchIndex, query: BaseQuery) -> list[Any]:
    """The ``FT.SEARCH`` command of a redisvl query, to send in a pipeline.

    The query string and its parameters are redisvl's (escaped, never raw user text);
    the reply is left raw, which is cheaper to read than redis-py's documents
    (:func:`search_results` reads it).
    """
    args: list[Any] = ["FT.SEARCH", index.name, *query.query.get_args()]
    if query.params:
        args += ["PARAMS", 2 * len(query.params)]
        for name, value in query.params.items():
            args += [name, value]
    return args


def search_results(reply: Any, *, scores: bool, fields: bool) -> list[tuple[str, float, Any]]:
    """(id, score, returned fields) of a raw ``FT.SEARCH`` reply, best first.

    A RESP3 reply (what redis-py speaks by default) is a map; a RESP2 one a flat list
    whose shape depends on ``WITHSCORES`` (``scores``) and on returned fields (``fields``).
    The score is 0.0 without ``WITHSCORES``; the fields are a map of bytes. A query that
    ran into RediSearch's timeout may hold a row without an id: it is left out.
    """
    if isinstance(reply, dict):
        return [
            (
                text(row[b"id"]),
                float(row.get(b"score", 0.0)),
                row.get(b"extra_attributes", {}),
            )
            for row in reply[b"results"]
            if b"id" in row
        ]
    step = 1 + scores + fields
    out = []
    for at in range(1, len(reply), step):
        score = float(reply[at + 1]) if scores else 0.0
        pairs = reply[at + step - 1] if fields else []
        out.append((text(reply[at]), score, dict(zip(pairs[::2], pairs[1::2], strict=True))))
    return out


def search_index(client: Redis, keys: Keyspace) -> AsyncSearchIndex:
    """The index object (not created)."""
    return AsyncSearchIndex.from_dict(schema(keys), redis_client=client)


async def ensure_index(
    client: Redis,
    keys: Keyspace,
    percent: Callable[[float], None] | None = None,
) -> AsyncSearchIndex:
    """Create the index if missing, rebuild it if its schema changed; idempotent.

    Args:
        client: the namespace's client.
        keys: the namespace's keyspace.
        percent: told how much of the existing documents a new index has scanned (0-100).
    """
    return await ensure_schema(client, schema(keys), keys.memory_index_schema(), percent)


async def ensure_schema(
    client: Redis,
    wanted: dict[str, Any],
    fingerprint_key: str,
    percent: Callable[[float], None] | None = None,
) -> AsyncSearchIndex:
    """Create the index ``wanted`` describes, or rebuild it when its schema changed.

    The schema's fingerprint is kept at ``fingerprint_key``; a rebuild keeps the
    documents (they are indexed again).
    """
    wanted_print = fingerprint(wanted)
    index = AsyncSearchIndex.from_dict(wanted, redis_client=client)
    exists = await index.exists()
    current = await client.get(fingerprint_key)
    if exists and current is not None and text(current) == wanted_print:
        return index
    if exists:
        log.info("index schema changed; rebuilding", index=index.name)
        await index.delete(drop=False)
    await index.create(overwrite=False)
    await client.set(fingerprint_key, wanted_print)
    await wait_indexed(index, percent)
    return index


async def wait_indexed(
    index: AsyncSearchIndex,
    percent: Callable[[float], None] | None = None,
    timeout_s: float = 120.0,
) -> None:
    """Wait while a new index scans the documents that existed before it.

    Documents written after creation are indexed as they are written; those already
    there are scanned in the background, and a search meanwhile would miss them.
    """
    import asyncio
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = await index.info()
        if percent is not None:
            percent(100.0 * float(info.get("percent_indexed", 1) or 0))
        if not int(float(info.get("indexing", 0) or 0)):
            return
        await asyncio.sleep(0.05)
    log.warning(
        "the memory index is still scanning documents; searches may miss some", index=index.name
    )

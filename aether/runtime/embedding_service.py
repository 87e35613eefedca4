"""The daemon's embedding service: one loaded model answers every local process.

``aether up`` loads the model once and answers requests on ``ns:rpc:embed``; a CLI
command asks it instead of loading the model itself (seconds), and falls back to a local
load when no daemon answers in time. ``ns:daemon:health`` says whether one runs and is
ready (it appears once the model is loaded).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import structlog
from redis.asyncio import Redis

from aether.codec import byte_map, text
from aether.keys import Keyspace
from aether.memory.storage.embeddings import Embedder

log = structlog.get_logger(__name__)
REPLY_TTL_S = 30
STREAM_MAXLEN = 1000


async def serve(client: Redis, keys: Keyspace, embedder: Embedder, stop: asyncio.Event) -> None:
    """Answer embedding requests until ``stop`` is set."""
    last = "$"
    while not stop.is_set():
        batches: Any = await client.xread({keys.embed_requests(): last}, count=32, block=500)
        for _stream, entries in batches or []:
            for entry_id, fields in entries:
                last = text(entry_id)
                await _answer(client, keys, embedder, byte_map(fields))


async def _answer(
    client: Redis, keys: Keyspace, embedder: Embedder, fields: dict[bytes, bytes]
) -> None:
    request = fields.get(b"id", b"").decode()
    payload: dict[str, Any]
    try:
        texts = json.loads(fields[b"texts"])
        model = fields.get(b"model", b"").decode()
        if model != embedder.model_name:
            payload = {"error": f"daemon embeds with {embedder.model_name}, not {model}"}
        else:
            payload = {"vectors": await embedder.embed_many([str(t) for t in texts])}
    except (KeyError, ValueError, TypeError) as e:
        payload = {"error": f"bad request: {e}"}
    if request:
        pipe = client.pipeline(transaction=True)
        pipe.lpush(keys.embed_reply(request), json.dumps(payload))
        pipe.expire(keys.embed_reply(request), REPLY_TTL_S)
        await pipe.execute()


class DaemonEmbedder:
    """Asks a running daemon for vectors; loads the model itself only when none answers.

    Args:
        client: the Redis client.
        keys: the namespace's keyspace.
        local: the embedder to fall back on (its model loads on first use).
        timeout_s: how long to wait for the daemon's answer.
    """

    def __init__(self, client: Redis, keys: Keyspace, local: Embedder, timeout_s: float = 10.0):
        self.client = client
        self.keys = keys
        self.local = local
        self.model_name = local.model_name
        self.dims = local.dims
        self.timeout_s = timeout_s
        self.served_by_daemon = 0

    async def embed_many(self, texts: list[str]) -> list[list[float]]:
        """Vectors from the daemon when it runs, else from the local model."""
        if await self.client.exists(self.keys.daemon_health()):
            request = uuid.uuid4().hex
            await self.client.xadd(
                self.keys.embed_requests(),
                {"id": request, "model": self.model_name, "texts": json.dumps(texts)},
                maxlen=STREAM_MAXLEN,
                approximate=True,
            )
            reply = await self.client.blpop(
                [self.keys.embed_reply(request)], timeout=self.timeout_s
            )
            if reply is not None:
                payload = json.loads(reply[1])
                if "vectors" in payload:
                    self.served_by_daemon += 1
                    return [list(map(float, v)) for v in payload["vectors"]]
                log.warning("daemon refused an embedding request", error=payload.get("error"))
            else:
                log.warning("daemon did not answer an embedding request; loading the model")
        return await self.local.embed_many(texts)


def through_daemon(client: Redis, keys: Keyspace) -> Callable[[Embedder], Embedder]:
    """A ``wrap_local`` for ``make_embedder``: a running daemon's model answers first."""

    def wrap(local: Embedder) -> Embedder:
        return DaemonEmbedder(client, keys, local)

    return wrap

"""What every memory tier shares: the journaled store, the settings and the embedder."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from redis.asyncio import Redis
from redisvl.index import AsyncSearchIndex
from redisvl.query.filter import FilterExpression

from aether.codec import command, text
from aether.config import MemorySettings, Settings
from aether.keys import Keyspace
from aether.memory.storage import vectors
from aether.memory.storage.embeddings import CachedEmbedder, Embedder, make_embedder
from aether.memory.storage.fulltext import search_index
from aether.memory.storage.readings import embedding_texts
from aether.memory.storage.records import MemoryDoc, MemoryRecord
from aether.store.functions import Functions
from aether.store.signing import Signer
from aether.store.state import Mutation, Store

if TYPE_CHECKING:
    from aether.memory.storage.qdrant_mirror import QdrantMirror


def mget_command(keys: list[str]) -> list[Any]:
    """The raw command that reads whole JSON documents (read by :func:`read_mget`)."""
    return ["JSON.MGET", *keys, "$"]


def read_mget(raw: list[Any]) -> list[Any]:
    """The documents of a :func:`mget_command` reply (``None`` where missing).

    Each found document is a one-element JSON array; they are parsed as one array of
    arrays, one parser call instead of one per document.
    """
    found = [item.encode() if isinstance(item, str) else item for item in raw if item is not None]
    values = iter(json.loads(b"[" + b",".join(found) + b"]") if found else [])
    out: list[Any] = []
    for item in raw:
        value = None if item is None else next(values)
        out.append(value[0] if isinstance(value, list) and value else None)
    return out


@dataclass
class MemoryLayer:
    """The memory of one namespace.

    Attributes:
        store: the journaled store every state change goes through.
        settings: memory limits and defaults.
        embedder: the cached embedder, or ``None`` for full-text only.
        mirror: the Qdrant mirror every vector is also written to, when configured.
        qdrant_search: whether the vector half of search asks the mirror.
    """

    store: Store
    settings: MemorySettings
    embedder: CachedEmbedder | None = None
    mirror: QdrantMirror | None = None
    qdrant_search: bool = False
    _indexes: dict[str, AsyncSearchIndex] = field(default_factory=dict, repr=False)
    _unindexed: bool = field(default=False, repr=False)

    @classmethod
    def open(
        cls,
        settings: Settings,
        client: Redis,
        actor: str = "aether",
        *,
        wrap_local: Callable[[Embedder], Embedder] | None = None,
    ) -> MemoryLayer:
        """The memory layer of the configured namespace and embedder.

        ``wrap_local``: wraps the local model (see ``make_embedder``), e.g. so that a
        running daemon embeds for a CLI command.
        """
        keys = Keyspace(settings.namespace)
        embedder = make_embedder(settings, client, keys, wrap_local=wrap_local)
        mirror = None
        if embedder is not None and (settings.qdrant_url or settings.qdrant_path):
            from aether.memory.storage.qdrant_mirror import QdrantMirror

            mirror = QdrantMirror(settings, keys, embedder.dims)
        return cls(
            Store(client, keys, actor, signer=Signer.from_settings(settings)),
            settings.memory,
            embedder,
            mirror,
            settings.qdrant_search and mirror is not None,
        )

    @property
    def client(self) -> Redis:
        """The Redis client."""
        return self.store.client

    @property
    def keys(self) -> Keyspace:
        """The namespace's keyspace."""
        return self.store.keys

    async def get_docs(
        self, keys: list[str], fields: tuple[str, ...] | None = None
    ) -> list[MemoryDoc | None]:
        """Memory documents by key (``None`` where missing), in one round trip.

        With ``fields``, only those top-level fields are read.
        """
        return await self.get_json(keys, fields)

    async def get_json(self, keys: list[str], fields: tuple[str, ...] | None = None) -> list[Any]:
        """JSON objects by key (``None`` where missing), in one round trip.

        With ``fields``, only those top-level fields are read.
        """
        if not keys:
            return []
        if fields:
            paths = [f"$.{name}" for name in fields]
            replies = await Functions(self.client, self.keys).get_fields(keys, paths)
            partial: list[Any] = []
            for item in replies:
                if not item:
                    partial.append(None)
                    continue
                values = json.loads(item)
                if isinstance(values, list):  # one path: JSON.GET answers its array alone
                    values = {paths[0]: values}
                partial.append({p[2:]: v[0] for p, v in values.items() if v})
            return partial
        return read_mget(await command(self.client, *mget_command(keys)))

    async def attach_embeddings(self, docs: Sequence[MemoryRecord]) -> None:
        """Give each document its content's vector, in one batch (no-op without embedder).

        A chat turn is embedded with the end of the turn before it in the batch, and a
        long text as passages (see :func:`aether.memory.storage.readings.embedding_texts`).
        The vectors ride in ``doc["embedding"]`` (and ``doc["passage_embeddings"]``)
        until :meth:`put` stores them in their hashes.
        """
        if self.embedder is None or not docs:
            return
        texts = embedding_texts(docs)
        found = await self.embedder.embed_many([t for parts in texts for t in parts])
        at = 0
        for doc, parts in zip(docs, texts, strict=True):
            doc["embedding"] = found[at]
            if len(parts) > 1:
                doc["passage_embeddings"] = found[at + 1 : at + len(parts)]
            at += len(parts)
        if self.mirror is not None:
            await self.mirror.upsert(docs)

    def defer_indexes(self, create: Callable[[], Awaitable[None]]) -> None:
        """A fresh namespace: its indexes are made by its first write, not by opening it.

        Until then :meth:`indexed` says whether another process made them; a read that
        finds none returns nothing (there is nothing to find).
        """
        lock = asyncio.Lock()

        async def first_write() -> None:
            async with lock:
                if self._unindexed:
                    await create()
                    self._unindexed = False

        self._unindexed = True
        self.store.before_first_write = first_write

    async def indexed(self) -> bool:
        """Whether the memory index exists (one round trip only while it is deferred)."""
        if self._unindexed:
            names = await command(self.client, "FT._LIST")
            self._unindexed = self.keys.memory_index() not in {text(n) for n in names}
        return not self._unindexed

    def text_index(self) -> AsyncSearchIndex:
        """The full-text index over the memory documents (not created)."""
        if "text" not in self._indexes:
            self._indexes["text"] = search_index(self.client, self.keys)
        return self._indexes["text"]

    def vector_index(self) -> AsyncSearchIndex | None:
        """The vector index (not created); ``None`` without an embedder."""
        if self.embedder is None:
            return None
        dims, datatype = self.embedder.dims, self.settings.vector_datatype
        name = f"vectors:{dims}:{datatype}"  # the embedder may be swapped (benches do)
        if name not in self._indexes:
            self._indexes[name] = vectors.vector_index(self.client, self.keys, dims, datatype)
        return self._indexes[name]

    async def nearest(
        self, vector: list[float], flt: FilterExpression | None, num: int
    ) -> list[tuple[str, float]]:
        """The ``num`` memories nearest ``vector`` (document key, cosine similarity)."""
        index = self.vector_index()
        if index is None or not await self.indexed():
            return []
        return await vectors.nearest(
            self.client, index, self.keys, vector, flt, num, self.settings.vector_datatype
        )

    def put(self, m: Mutation, key: str, doc: MemoryRecord) -> Mutation:
        """Add the writes of a memory document (and its vector, if it has one) to ``m``."""
        return vectors.put(m, self.keys, key, doc, self.settings.vector_datatype)

    def remove(self, m: Mutation, key: str) -> Mutation:
        """Add the deletion of a memory document and its vector to ``m``."""
        return vectors.remove(m, self.keys, key)

    async def embed(self, text: str) -> list[float] | None:
        """The text's vector, or ``None`` without an embedder."""
        return None if self.embedder is None else await self.embedder.embed(text)

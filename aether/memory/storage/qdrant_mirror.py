"""The Qdrant mirror: memory vectors also written to Qdrant, which search can use.

Configured by ``AETHER_QDRANT_URL`` (a server) or ``AETHER_QDRANT_PATH`` (qdrant-client's
local mode); ``AETHER_QDRANT_SEARCH=true`` makes the vector half of hybrid search ask
Qdrant instead of the Redis index. Redis stays the source of truth: every hit is read
back from Redis, so a vector whose document was deleted or rolled back is dropped (and
removed from Qdrant); a mirror that cannot be written is logged once and never blocks
a memory write.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import structlog
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ApiException, ResponseHandlingException

from aether.config import Settings
from aether.keys import Keyspace
from aether.logging import log_once
from aether.memory.storage.records import MemoryRecord, record_key
from aether.store.redaction import Needle

log = structlog.get_logger(__name__)
_NAMESPACE_UUID = uuid.UUID("6f7a2b4e-8d1c-4e5f-9a3b-2c1d0e9f8a7b")
PAYLOAD_FIELDS = ("id", "kind", "source", "tags", "session", "timestamp", "scope")


def point_id(doc_id: str) -> str:
    """The Qdrant point id of a memory document (a UUID derived from its id)."""
    return str(uuid.uuid5(_NAMESPACE_UUID, doc_id))


class QdrantMirror:
    """One namespace's vectors in one Qdrant collection."""

    def __init__(self, settings: Settings, keys: Keyspace, dims: int) -> None:
        if settings.qdrant_url:
            self.client = AsyncQdrantClient(url=settings.qdrant_url, timeout=10)
        elif settings.qdrant_path:
            settings.qdrant_path.mkdir(parents=True, exist_ok=True)
            self.client = AsyncQdrantClient(path=str(settings.qdrant_path))
        else:
            raise ValueError("no Qdrant configured")
        safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in keys.ns)
        self.collection = f"{safe}_memory"
        self.keys = keys
        self.dims = dims
        self._ready = False

    async def ensure(self) -> None:
        """Create the collection (cosine, the embedder's size) when missing."""
        if self._ready:
            return
        if not await self.client.collection_exists(self.collection):
            await self.client.create_collection(
                self.collection,
                vectors_config=models.VectorParams(size=self.dims, distance=models.Distance.COSINE),
            )
        self._ready = True

    def _warn(self, error: Exception) -> None:
        log_once(
            log, "qdrant", "Qdrant mirror unavailable; Redis keeps the vectors", error=str(error)
        )

    async def upsert(self, docs: Sequence[MemoryRecord]) -> None:
        """Write the documents' vectors (those that have one)."""
        points = [
            models.PointStruct(
                id=point_id(d.get("id", "")),
                vector=d.get("embedding", []),
                payload={k: v for k, v in d.items() if k in PAYLOAD_FIELDS},
            )
            for d in docs
            if d.get("embedding")
        ]
        if not points:
            return
        try:
            await self.ensure()
            await self.client.upsert(self.collection, points=points, wait=True)
        except (ApiException, ResponseHandlingException, OSError, ValueError) as e:
            self._warn(e)

    async def delete(self, doc_ids: list[str]) -> None:
        """Remove documents' vectors."""
        if not doc_ids:
            return
        try:
            await self.ensure()
            await self.client.delete(
                self.collection,
                points_selector=models.PointIdsList(points=[point_id(i) for i in doc_ids]),
            )
        except (ApiException, ResponseHandlingException, OSError, ValueError) as e:
            self._warn(e)

    async def holding(self, needle: Needle) -> list[str]:
        """Ids of the documents whose point's payload holds the needle (an erasure's check)."""
        try:
            await self.ensure()
            out: list[str] = []
            offset: Any = None
            while True:
                points, offset = await self.client.scroll(
                    self.collection, limit=256, offset=offset, with_payload=True, with_vectors=False
                )
                for point in points:
                    payload = point.payload or {}
                    if needle.in_text(json.dumps(payload, ensure_ascii=False)):
                        out.append(str(payload.get("id", point.id)))
                if offset is None:
                    return out
        except (ApiException, ResponseHandlingException, OSError, ValueError) as e:
            self._warn(e)
            return []

    async def search(
        self, vector: list[float], limit: int, criteria: dict[str, Any]
    ) -> list[tuple[str, float]]:
        """(Redis key, cosine similarity) of the nearest documents matching ``criteria``."""
        await self.ensure()
        must: list[Any] = []
        field, match = models.FieldCondition, models.MatchValue
        for name in ("kind", "source", "session"):
            if criteria.get(name):
                must.append(field(key=name, match=match(value=criteria[name])))
        for name, key in (("tags", "tags"), ("scopes", "scope")):
            if criteria.get(name):
                must.append(field(key=key, match=models.MatchAny(any=criteria[name])))
        if criteria.get("since") is not None:
            must.append(field(key="timestamp", range=models.Range(gte=criteria["since"])))
        result = await self.client.query_points(
            self.collection,
            query=vector,
            limit=limit,
            query_filter=models.Filter(must=must) if must else None,
            with_payload=True,
        )
        out = []
        for point in result.points:
            payload = point.payload or {}
            if payload.get("kind") and payload.get("id"):
                out.append(
                    (record_key(self.keys, payload["kind"], payload["id"]), float(point.score))
                )
        return out

    async def close(self) -> None:
        """Close the client."""
        await self.client.close()

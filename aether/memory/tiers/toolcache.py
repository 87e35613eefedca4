"""Tier 6, tool schema cache per session: JSON with a 24 h TTL (not journaled)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from aether.ids import check_id
from aether.memory.storage.layer import MemoryLayer
from aether.messages import ToolSchema

Schemas = list[ToolSchema]


class ToolSchemaCache:
    """Serialised tool schemas, so they are not rebuilt on every LLM call."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory

    async def get(self, session: str) -> Schemas | None:
        """The cached schemas, or ``None``."""
        raw = await self.memory.client.get(self.memory.keys.tools(check_id(session, "session id")))
        return None if raw is None else list(json.loads(raw))

    async def set(self, session: str, schemas: Schemas) -> None:
        """Cache schemas for the TTL (default 24 h)."""
        await self.memory.client.set(
            self.memory.keys.tools(check_id(session, "session id")),
            json.dumps(schemas),
            ex=self.memory.settings.tools_ttl_s,
        )

    async def get_or_build(self, session: str, build: Callable[[], Awaitable[Schemas]]) -> Schemas:
        """The cached schemas, building and caching them on a miss."""
        cached = await self.get(session)
        if cached is not None:
            return cached
        schemas = await build()
        await self.set(session, schemas)
        return schemas

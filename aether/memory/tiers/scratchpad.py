"""Tier 4, scratchpads: ephemeral working memory with a TTL (not journaled)."""

from __future__ import annotations

from aether.codec import text
from aether.errors import InvalidOperationError
from aether.ids import check_id
from aether.memory.storage.layer import MemoryLayer


class Scratchpads:
    """Short-lived notes; every key carries a TTL (default one hour)."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory

    async def set(self, pad_id: str, value: str, ttl_s: int | None = None) -> None:
        """Write a scratchpad with a TTL.

        Raises:
            InvalidOperationError: bad id, TTL or size.
        """
        ttl = self.memory.settings.scratchpad_ttl_s if ttl_s is None else ttl_s
        if ttl < 1:
            raise InvalidOperationError("a scratchpad TTL is at least 1 second")
        if len(value.encode()) > self.memory.settings.max_content_bytes:
            raise InvalidOperationError("scratchpad value over the size limit")
        await self.memory.client.set(self.memory.keys.scratchpad(check_id(pad_id)), value, ex=ttl)

    async def get(self, pad_id: str) -> str | None:
        """The value, or ``None`` when missing or expired."""
        raw = await self.memory.client.get(self.memory.keys.scratchpad(check_id(pad_id)))
        return None if raw is None else text(raw)

    async def delete(self, pad_id: str) -> bool:
        """Delete; returns whether it existed."""
        return bool(await self.memory.client.delete(self.memory.keys.scratchpad(check_id(pad_id))))

    async def ttl(self, pad_id: str) -> int:
        """Seconds left (-2 missing)."""
        return int(await self.memory.client.ttl(self.memory.keys.scratchpad(check_id(pad_id))))

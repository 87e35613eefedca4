"""Tier 5, tool-call episodes per session, capped (default 50) in one round trip."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime

from typing_extensions import TypedDict

from aether.errors import InvalidOperationError
from aether.ids import check_id
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import check_timestamp
from aether.store.redaction import is_tombstone
from aether.store.state import Mutation


class Episode(TypedDict):
    """One tool call of a session, as stored."""

    tool: str
    arguments: dict[str, object]
    output: str
    truncated: bool
    success: bool
    duration_ms: float
    timestamp: float


class Episodes:
    """What tools the agent called in a session, and what came back."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory

    async def record(
        self,
        session: str,
        tool: str,
        arguments: Mapping[str, object] | None,
        output: str,
        success: bool,
        duration_ms: float,
        timestamp: datetime | float | None = None,
    ) -> Episode:
        """Append a tool call (output truncated) and cap the list, atomically and journaled."""
        if not tool or len(tool) > 128:
            raise InvalidOperationError("tool name must be 1-128 characters")
        limit = self.memory.settings.episode_output_chars
        episode = Episode(
            tool=tool,
            arguments=dict(arguments or {}),
            output=output[:limit],
            truncated=len(output) > limit,
            success=bool(success),
            duration_ms=round(float(duration_ms), 3),
            timestamp=check_timestamp(timestamp),
        )
        payload = json.dumps(episode, ensure_ascii=False, default=str)
        key = self.memory.keys.episode(check_id(session, "session id"))
        await self.memory.store.apply(
            Mutation().rpush_capped(key, self.memory.settings.episode_cap, payload),
            "memory.episode",
        )
        return episode

    async def list(self, session: str) -> list[Episode]:
        """The session's episodes, oldest first."""
        key = self.memory.keys.episode(check_id(session, "session id"))
        raw = await self.memory.client.lrange(key, 0, -1)
        return [json.loads(item) for item in raw if not is_tombstone(item)]

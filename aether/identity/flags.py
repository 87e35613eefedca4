"""The heartbeat state: liveness, the rotation of its checks, its alerts (not journaled)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import WatchError

from aether.codec import byte_map
from aether.keys import Keyspace

_FEATURE = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
ALERT_HISTORY = 50


@dataclass(frozen=True)
class Heartbeat:
    """A snapshot of ``ns:system:heartbeat_state``."""

    last_beat: datetime | None
    beats: int
    rotation: int
    last_check: str | None
    alerts: list[dict[str, Any]] = field(default_factory=list)


class HeartbeatState:
    """``ns:system:heartbeat_state``: last beat, check rotation, alert history.

    Liveness data, outside the rolled-back state: written directly, not journaled.
    """

    def __init__(self, client: Redis, keys: Keyspace) -> None:
        self.client = client
        self.key = keys.heartbeat_state()

    async def get(self) -> Heartbeat:
        """The current heartbeat state."""
        raw = {
            k.decode(): v.decode() for k, v in byte_map(await self.client.hgetall(self.key)).items()
        }
        last = raw.get("last_beat")
        return Heartbeat(
            last_beat=datetime.fromisoformat(last) if last else None,
            beats=int(raw.get("beats", 0)),
            rotation=int(raw.get("rotation", 0)),
            last_check=raw.get("last_check"),
            alerts=json.loads(raw.get("alerts", "[]")),
        )

    async def beat(self, checks: list[str], now: datetime | None = None) -> str | None:
        """Record a beat and return the check whose turn it is (round-robin)."""
        stamp = (now or datetime.now(UTC)).isoformat()
        pipe = self.client.pipeline(transaction=True)
        pipe.hincrby(self.key, "beats", 1)
        pipe.hincrby(self.key, "rotation", 1)
        pipe.hset(self.key, "last_beat", stamp)
        _, rotation, _ = await pipe.execute()
        if not checks:
            return None
        check = checks[(int(rotation) - 1) % len(checks)]
        await self.client.hset(self.key, "last_check", check)
        return check

    async def alert(
        self, message: str, level: str = "warning", now: datetime | None = None
    ) -> None:
        """Append an alert to the history (the last 50 are kept)."""
        entry = {"at": (now or datetime.now(UTC)).isoformat(), "level": level, "message": message}
        async with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(self.key)
                    current = json.loads((await pipe.hget(self.key, "alerts")) or b"[]")
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.hset(self.key, "alerts", json.dumps([*current, entry][-ALERT_HISTORY:]))
                    await pipe.execute()
                    return
                except WatchError:
                    continue  # another writer changed the alerts: read them again

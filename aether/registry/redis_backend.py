"""The registry and the ledger in Redis (the default backend).

Registry: ``ns:registry:<name>`` (LIST, one JSON per version, oldest first) and
``ns:registry`` (ZSET, name -> latest version), journaled like all agent state; a
registration holds ``ns:lock:registry:<name>`` so two never race to one version number.
Ledger: the stream ``ns:ledger``, append-only and outside the rolled-back state (what
the agent did and spent stays recorded when its memory is rolled back).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Any

from aether.codec import byte_map, text, texts
from aether.errors import NotFoundError
from aether.keys import Keyspace
from aether.registry.model import (
    EVERY,
    LedgerEntry,
    LedgerQuery,
    ToolRecord,
    check_tool,
    pick_version,
    totals_of,
)
from aether.store.lock import StateLock
from aether.store.redaction import is_tombstone
from aether.store.state import Mutation, Store

LOCK_TTL_S = 5.0
LEDGER_MAXLEN = 1_000_000


class RedisToolRegistry:
    """Versioned tools in Redis."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.client = store.client
        self.keys: Keyspace = store.keys

    async def register(self, name: str, description: str, schema: dict[str, Any]) -> ToolRecord:
        """Register a tool (see :class:`aether.registry.model.ToolRegistry`)."""
        canonical = check_tool(name, description, schema)
        lock = StateLock(
            self.client,
            self.keys.registry_lock(name),
            ttl_s=LOCK_TTL_S,
            wait_s=1.0,
            busy=f"tool {name!r} is being registered by someone else",
        )
        async with lock:
            last = await self.client.lindex(self.keys.registry_tool(name), -1)
            if last is not None:
                current = ToolRecord(**json.loads(last))
                same = json.dumps(current.schema, sort_keys=True, separators=(",", ":"))
                if same == canonical and current.description == description.strip():
                    return current
            version = 1 if last is None else ToolRecord(**json.loads(last)).version + 1
            record = ToolRecord(
                name, version, description.strip(), json.loads(canonical), time.time()
            )
            m = Mutation().rpush(self.keys.registry_tool(name), json.dumps(asdict(record)))
            m.zadd(self.keys.registry(), {name: version})
            await self.store.apply(m, "registry.register")
            return record

    async def versions(self, name: str) -> list[ToolRecord]:
        """Every version, oldest first."""
        raw = texts(await self.client.lrange(self.keys.registry_tool(name), 0, -1))
        if not raw:
            raise NotFoundError(f"no tool {name!r} in the registry")
        return [ToolRecord(**json.loads(item)) for item in raw if not is_tombstone(item)]

    async def get(self, name: str, version: int | None = None) -> ToolRecord:
        """The latest (or given) version."""
        return pick_version(await self.versions(name), name, version)

    async def tools(self) -> list[ToolRecord]:
        """The latest version of every tool, by name."""
        names = sorted(texts(await self.client.zrange(self.keys.registry(), 0, -1)))
        pipe = self.client.pipeline(transaction=False)
        for name in names:
            pipe.lindex(self.keys.registry_tool(name), -1)
        return [ToolRecord(**json.loads(raw)) for raw in await pipe.execute() if raw]


class RedisAgentLedger:
    """The append-only ledger as a Redis stream."""

    def __init__(self, client: Any, keys: Keyspace) -> None:
        self.client = client
        self.keys = keys

    async def append(self, entry: LedgerEntry) -> LedgerEntry:
        """Add an entry."""
        await self.client.xadd(
            self.keys.ledger(),
            {"e": json.dumps(asdict(entry), default=str)},
            maxlen=LEDGER_MAXLEN,
            approximate=True,
        )
        return entry

    async def entries(self, query: LedgerQuery = EVERY) -> list[LedgerEntry]:
        """The entries ``query`` asks for, newest first."""
        kind, since, before = query.kind, query.since, query.before
        limit = query.limit or 10**9
        low = f"{int(since * 1000)}-0" if since is not None else "-"
        out: list[LedgerEntry] = []
        # the stream's ids are the server's clock, an entry's ``at`` the writer's: read a
        # little past ``before`` and decide by ``at``
        high = f"{round(before * 1000) + 5000}" if before is not None else "+"
        while len(out) < limit:
            page = await self.client.xrevrange(self.keys.ledger(), max=high, min=low, count=500)
            if not page:
                break
            for entry_id, fields in page:
                entry = LedgerEntry(**json.loads(byte_map(fields)[b"e"]))
                if before is not None and entry.at >= before:
                    high = f"({text(entry_id)}"
                    continue
                if kind is None or entry.kind == kind:
                    out.append(entry)
                high = f"({text(entry_id)}"
            if len(page) < 500:
                break
        return out[:limit]

    async def totals(self, since: float | None = None) -> dict[str, float]:
        """Sums since a time."""
        return totals_of(await self.entries(LedgerQuery(since=since, limit=0)))

"""The registry and the ledger in MongoDB (``AETHER_MONGO_URL``).

Through pymongo's asyncio client. Collections ``<namespace>_tools`` (one document per
tool version; a unique index on name + version settles concurrent registrations) and
``<namespace>_ledger`` (insert-only).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from typing import Any, ParamSpec, TypeVar

from pymongo import ASCENDING, DESCENDING, AsyncMongoClient
from pymongo.errors import AutoReconnect, ConnectionFailure, DuplicateKeyError, PyMongoError

from aether.errors import ConcurrentAdminError, NotFoundError, StoreError, UnavailableError
from aether.registry import model
from aether.registry.model import EVERY, LedgerEntry, LedgerQuery, ToolRecord

RETRIES = 5
P = ParamSpec("P")
R = TypeVar("R")


def translated(
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Pymongo's errors as aether's: unreachable is retryable ``UnavailableError``."""

    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except (ConnectionFailure, AutoReconnect) as e:
            raise UnavailableError(f"MongoDB is unreachable: {e}") from e
        except PyMongoError as e:
            raise StoreError(f"MongoDB refused the request: {e}") from e

    return call


class MongoBackend:
    """One connection, both collections."""

    def __init__(self, url: str, namespace: str) -> None:
        self.client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            url, serverSelectionTimeoutMS=5000
        )
        db = self.client.get_default_database(default="aether")
        safe = namespace.replace("{", "").replace("}", "").replace(".", "_")
        self.tools = db[f"{safe}_tools"]
        self.ledger = db[f"{safe}_ledger"]
        self._ready = False

    @translated
    async def ready(self) -> None:
        """Create the indexes (once)."""
        if self._ready:
            return
        await self.tools.create_index([("name", ASCENDING), ("version", ASCENDING)], unique=True)
        await self.ledger.create_index([("at", DESCENDING)])
        self._ready = True

    async def close(self) -> None:
        """Close the connection."""
        await self.client.close()


def _record(doc: dict[str, Any]) -> ToolRecord:
    return ToolRecord(
        doc["name"],
        doc["version"],
        doc["description"],
        json.loads(doc["schema"]),
        doc["registered_at"],
    )


class MongoToolRegistry:
    """Versioned tools in MongoDB."""

    def __init__(self, backend: MongoBackend) -> None:
        self.backend = backend

    @translated
    async def register(self, name: str, description: str, schema: dict[str, Any]) -> ToolRecord:
        """Register a tool (see :class:`aether.registry.model.ToolRegistry`)."""
        import time

        canonical = model.check_tool(name, description, schema)
        await self.backend.ready()
        for _ in range(RETRIES):
            last = await self.backend.tools.find_one({"name": name}, sort=[("version", -1)])
            if last and last["schema"] == canonical and last["description"] == description.strip():
                return _record(last)
            version = 1 if last is None else int(last["version"]) + 1
            doc = {
                "name": name,
                "version": version,
                "description": description.strip(),
                "schema": canonical,
                "registered_at": time.time(),
            }
            try:
                await self.backend.tools.insert_one(doc)
                return _record(doc)
            except DuplicateKeyError:
                continue  # another registration took this version: look again
        raise ConcurrentAdminError(f"tool {name!r} is being registered by someone else")

    @translated
    async def versions(self, name: str) -> list[ToolRecord]:
        """Every version, oldest first."""
        await self.backend.ready()
        docs = [d async for d in self.backend.tools.find({"name": name}, sort=[("version", 1)])]
        if not docs:
            raise NotFoundError(f"no tool {name!r} in the registry")
        return [_record(d) for d in docs]

    async def get(self, name: str, version: int | None = None) -> ToolRecord:
        """The latest (or given) version."""
        return model.pick_version(await self.versions(name), name, version)

    @translated
    async def tools(self) -> list[ToolRecord]:
        """The latest version of every tool, by name."""
        await self.backend.ready()
        names = sorted(await self.backend.tools.distinct("name"))
        return [await self.get(name) for name in names]


class MongoAgentLedger:
    """The append-only ledger as a MongoDB collection."""

    def __init__(self, backend: MongoBackend) -> None:
        self.backend = backend

    @translated
    async def append(self, entry: LedgerEntry) -> LedgerEntry:
        """Add an entry."""
        await self.backend.ready()
        await self.backend.ledger.insert_one({"_id": entry.id, **asdict(entry)})
        return entry

    @translated
    async def entries(self, query: LedgerQuery = EVERY) -> list[LedgerEntry]:
        """The entries ``query`` asks for, newest first."""
        await self.backend.ready()
        found: dict[str, Any] = {}
        if query.kind is not None:
            found["kind"] = query.kind
        if query.since is not None or query.before is not None:
            found["at"] = {}
            if query.since is not None:
                found["at"]["$gte"] = query.since
            if query.before is not None:
                found["at"]["$lt"] = query.before
        order = [("at", -1), ("_id", -1)]
        cursor = self.backend.ledger.find(found, sort=order, limit=query.limit)
        return [LedgerEntry(**{k: v for k, v in d.items() if k != "_id"}) async for d in cursor]

    async def totals(self, since: float | None = None) -> dict[str, float]:
        """Sums since a time."""
        return model.totals_of(await self.entries(LedgerQuery(since=since, limit=0)))

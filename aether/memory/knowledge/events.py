"""Events (episodic memory): what happened, with causal chains and outcomes.

An event is a JSON document ``ns:event:<id>`` in the memory index (its ``content`` is
its searchable text; ``payload`` keeps structured data such as a file's path and text)
and a member of its session's timeline ``ns:timeline:<session>``. ``record`` runs the
archetype's extractors and writes the event, its entities and relations in one journaled
change.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from aether.codec import texts
from aether.errors import InvalidOperationError, NotFoundError
from aether.ids import check_id
from aether.memory.knowledge.archetypes.base import Archetype, run_extractors
from aether.memory.knowledge.graph import EntityIn, Graph, RelationIn
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import Event, MemoryDoc, base_record, check_timestamp
from aether.memory.storage.scopes import check_scope
from aether.memory.tiers.memory_index import count_ops

OUTCOMES = ("success", "failure", "partial")
ACTORS = ("user", "agent", "system")
MAX_CHAIN = 100
TEXT_CHARS = 4000


@dataclass
class Recorded:
    """What ``record`` stored."""

    event: Event
    entities: list[EntityIn] = field(default_factory=list)
    relations: list[RelationIn] = field(default_factory=list)


def event_text(kind: str, summary: str | None, payload: Mapping[str, object]) -> str:
    """The searchable text of an event."""
    parts = [summary] if summary else []
    for key in ("path", "message", "command", "query", "text"):
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(value if key != "text" else value[:TEXT_CHARS])
    return "\n".join(parts) or kind


class Events:
    """The events of one namespace, read through an archetype."""

    def __init__(self, memory: MemoryLayer, archetype: Archetype) -> None:
        self.memory = memory
        self.keys = memory.keys
        self.archetype = archetype
        self.graph = Graph(memory)

    async def record(
        self,
        kind: str,
        *,
        payload: Mapping[str, object] | None = None,
        summary: str | None = None,
        actor: str = "agent",
        session: str = "main",
        outcome: str | None = None,
        parent: str | None = None,
        duration_ms: float | None = None,
        keywords: list[str] | None = None,
        scope: str | None = None,
        timestamp: datetime | float | None = None,
    ) -> Recorded:
        """Store one event with what the archetype extracts from it, atomically.

        Raises:
            InvalidOperationError: an event type the archetype does not know, a bad actor,
                outcome, scope, session or duration, a parent that does not exist, or a
                payload over the size limit; nothing is written.
        """
        if kind not in self.archetype.event_types:
            known = ", ".join(self.archetype.event_types)
            raise InvalidOperationError(
                f"the {self.archetype.name} archetype has no event type {kind!r}: use {known}"
            )
        if actor not in ACTORS:
            raise InvalidOperationError(f"actor must be one of {', '.join(ACTORS)}")
        if outcome is not None and outcome not in OUTCOMES:
            raise InvalidOperationError(f"outcome must be one of {', '.join(OUTCOMES)}")
        if duration_ms is not None and not 0 <= duration_ms < 1e10:
            raise InvalidOperationError("duration_ms must be a non-negative number")
        check_id(session, "session id")
        payload = dict(payload or {})
        if len(json.dumps(payload, default=str)) > self.memory.settings.max_content_bytes:
            raise InvalidOperationError("the event payload is over the size limit")
        if parent is not None and not await self.memory.client.exists(
            self.keys.event(check_id(parent))
        ):
            raise InvalidOperationError(f"parent event {parent!r} does not exist")
        ts = check_timestamp(timestamp) if timestamp is not None else time.time()
        doc = base_record(
            "event",
            event_text(kind, summary, payload),
            max_bytes=self.memory.settings.max_content_bytes,
            source=actor,
            tags=[kind],
            score=0.5,
            timestamp=ts,
            record_id=None,
        )
        doc.update(
            {
                "type": kind,
                "actor": actor,
                "payload": payload,
                "summary": summary or "",
                "outcome": outcome or "",
                "parent": parent or "",
                "duration_ms": duration_ms,
                "keywords": [k.lower() for k in keywords or []][:20],
                "scope": check_scope(scope),
                "session": session,
            }
        )
        entities, relations = run_extractors(self.archetype, doc)
        m = await self.graph.upsert(entities, relations, evidence=doc["id"], now=ts)
        await self.memory.attach_embeddings([doc])
        self.memory.put(m, self.keys.event(doc["id"]), doc)
        m.zadd(self.keys.timeline(session), {doc["id"]: ts})
        count_ops(m, self.keys, [doc])
        await self.memory.store.apply(m, f"event.{kind}")
        doc.pop("embedding", None)
        return Recorded(doc, entities, relations)

    async def get(self, event_id: str) -> MemoryDoc:
        """One event.

        Raises:
            NotFoundError: no such event.
        """
        doc = (await self.memory.get_docs([self.keys.event(check_id(event_id))]))[0]
        if doc is None:
            raise NotFoundError(f"no event {event_id!r}")
        doc.pop("embedding", None)
        return doc

    async def chain(self, event_id: str) -> list[MemoryDoc]:
        """The causal chain ending at ``event_id``: the root first."""
        out = [await self.get(event_id)]
        while out[-1].get("parent") and len(out) < MAX_CHAIN:
            out.append(await self.get(out[-1]["parent"]))
        return list(reversed(out))

    async def recent(
        self, session: str, limit: int = 20, scopes: list[str] | None = None
    ) -> list[MemoryDoc]:
        """The session's latest events, newest first."""
        ids = texts(
            await self.memory.client.zrevrange(self.keys.timeline(check_id(session)), 0, limit - 1)
        )
        fields = (
            "id",
            "type",
            "actor",
            "summary",
            "content",
            "outcome",
            "parent",
            "duration_ms",
            "keywords",
            "scope",
            "timestamp",
        )
        docs = [
            d for d in await self.memory.get_docs([self.keys.event(i) for i in ids], fields) if d
        ]
        if scopes:
            wanted = {check_scope(s) for s in scopes}
            docs = [d for d in docs if d.get("scope") in wanted]
        return docs

"""Entities and relations (docs/design.md, "Entity graph and events"), in Redis.

An entity is a hash ``ns:entity:<id>`` whose id derives from (scope, type, name), so
recording the same thing twice updates one entity: mention count, last seen, salience.
A relation is a hash ``ns:relation:<id>`` (type, source, target, weight, evidence event
ids) and one member in each endpoint's adjacency zset (``ns:rel:out:<id>`` and
``ns:rel:in:<id>``, scored by weight), so a 2-hop expansion is one call of the
read-only ``aether_expand`` function. Names and aliases are found through
``ns:entities:names`` (lexicographic). Every change goes through the journaled store.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Required

from typing_extensions import TypedDict

from aether.codec import byte_map, text
from aether.errors import InvalidOperationError, NotFoundError
from aether.memory.retrieval.text import query_tokens
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.scopes import check_scope
from aether.store.functions import Functions
from aether.store.state import Mutation

SEP = "\x1f"
MAX_EVIDENCE = 20
MAX_NAME = 300


def entity_id(kind: str, name: str, scope: str = "global") -> str:
    """The stable id of an entity: the same (scope, type, name) is the same entity."""
    key = f"{scope}{SEP}{kind}{SEP}{name.strip().lower()}"
    return hashlib.sha1(key.encode()).hexdigest()[:20]


def relation_id(kind: str, source: str, target: str) -> str:
    """The stable id of a relation."""
    return hashlib.sha1(f"{kind}{SEP}{source}{SEP}{target}".encode()).hexdigest()[:20]


def salience_of(mentions: int, base: float) -> float:
    """Importance: the extractor's base, closing half the gap to 1 every 5 mentions."""
    return round(base + (1 - base) * (1 - math.pow(0.5, mentions / 5)), 4)


@dataclass
class EntityIn:
    """An entity as an extractor reports it."""

    type: str
    name: str
    aliases: list[str] = field(default_factory=list)
    properties: dict[str, object] = field(default_factory=dict)
    salience: float = 0.3
    scope: str = "global"

    @property
    def id(self) -> str:
        """Its stable id."""
        return entity_id(self.type, self.name, self.scope)


@dataclass
class RelationIn:
    """A relation as an extractor reports it (endpoints by entity id)."""

    type: str
    source: str
    target: str
    weight: float = 1.0


class Entity(TypedDict, total=False):
    """A stored entity, decoded (``hop``: its distance when an expansion reached it)."""

    id: Required[str]
    type: Required[str]
    name: Required[str]
    scope: str
    aliases: list[str]
    properties: dict[str, object]
    mention_count: int
    salience: float
    base_salience: str
    first_seen: float
    last_seen: float
    hop: int


@dataclass
class Expansion:
    """What a graph expansion reached."""

    nodes: dict[str, Entity]
    edges: list[tuple[str, str, str, float, int]]


def _check(value: str, what: str, limit: int = 64) -> str:
    if not value or len(value) > limit or any(ord(c) < 32 for c in value):
        raise InvalidOperationError(f"{what} {value[:40]!r}: 1-{limit} printable characters")
    return value


def _decode_entity(raw: Any) -> Entity | None:
    doc = {text(k): text(v) for k, v in byte_map(raw).items()}
    if not doc or "id" not in doc:
        return None
    return Entity(
        id=doc["id"],
        type=doc.get("type", ""),
        name=doc.get("name", ""),
        scope=doc.get("scope", "global"),
        aliases=json.loads(doc.get("aliases", "[]")),
        properties=json.loads(doc.get("properties", "{}")),
        mention_count=int(doc.get("mention_count", 0)),
        salience=float(doc.get("salience", 0)),
        base_salience=doc.get("base_salience", ""),
        first_seen=float(doc.get("first_seen", 0)),
        last_seen=float(doc.get("last_seen", 0)),
    )


class Graph:
    """The entity graph of one namespace."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys
        self.client = memory.client

    async def upsert(
        self,
        entities: list[EntityIn],
        relations: list[RelationIn],
        evidence: str | None = None,
        now: float | None = None,
    ) -> Mutation:
        """The journaled ops that record ``entities`` and ``relations`` (one read first).

        Entities seen again get a mention, a later last-seen, merged aliases and
        properties; relations seen again get weight and evidence.

        Raises:
            InvalidOperationError: a bad type, name or scope, or a relation to an entity
                that is neither given nor stored.
        """
        when = now or time.time()
        merged: dict[str, EntityIn] = {}
        for e in entities:
            _check(e.type, "entity type")
            _check(e.name.strip(), "entity name", MAX_NAME)
            e.scope = check_scope(e.scope)
            if e.id in merged:
                merged[e.id].aliases += e.aliases
                merged[e.id].properties.update(e.properties)
            else:
                merged[e.id] = e
        rels: dict[str, RelationIn] = {}
        for r in relations:
            _check(r.type, "relation type")
            rid = relation_id(r.type, r.source, r.target)
            if rid in rels:
                rels[rid].weight += r.weight
            else:
                rels[rid] = RelationIn(r.type, r.source, r.target, r.weight)
        pipe = self.client.pipeline(transaction=False)
        for eid in merged:
            pipe.hmget(
                self.keys.entity(eid),
                ["first_seen", "mention_count", "aliases", "properties", "base_salience"],
            )
        for rid in rels:
            pipe.hmget(self.keys.relation(rid), ["weight", "evidence"])
        endpoints = {x for r in rels.values() for x in (r.source, r.target)} - set(merged)
        for eid in endpoints:
            pipe.exists(self.keys.entity(eid))
        replies = await pipe.execute()
        m = Mutation()
        for (eid, e), (first, count, aliases, props, sal) in zip(
            merged.items(), replies, strict=False
        ):
            mentions = int(count or 0) + 1
            known = json.loads(aliases) if aliases else []
            all_aliases = list(dict.fromkeys([*known, *[a for a in e.aliases if a != e.name]]))
            properties = {**(json.loads(props) if props else {}), **e.properties}
            base = max(e.salience, float(sal) if sal else 0.0)
            m.hset(
                self.keys.entity(eid),
                {
                    "id": eid,
                    "type": e.type,
                    "name": e.name.strip(),
                    "scope": e.scope,
                    "aliases": json.dumps(all_aliases[:20], ensure_ascii=False),
                    "properties": json.dumps(properties, ensure_ascii=False, default=str),
                    "first_seen": float(first) if first else when,
                    "last_seen": when,
                    "mention_count": mentions,
                    "salience": salience_of(mentions, base),
                    "base_salience": base,
                },
            )
            names = {e.name.strip().lower(), *[a.lower() for a in all_aliases[:20]]}
            # each word of a longer name too: "Silva" finds "Dr Silva"
            names |= {w for n in list(names) if " " in n for w in n.split() if len(w) > 2}
            m.zadd(self.keys.entity_names(), {f"{n}{SEP}{eid}": 0 for n in names})
        offset = len(merged)
        for i, (rid, r) in enumerate(rels.items()):
            weight_raw, evidence_raw = replies[offset + i]
            m.zincrby(self.keys.relations_out(r.source), r.weight, f"{r.type}{SEP}{r.target}")
            m.zincrby(self.keys.relations_in(r.target), r.weight, f"{r.type}{SEP}{r.source}")
            kept = json.loads(evidence_raw) if evidence_raw else []
            if evidence and evidence not in kept:
                kept = [*kept, evidence][-MAX_EVIDENCE:]
            weight = float(weight_raw or 0) + r.weight
            m.hset(
                self.keys.relation(rid),
                {
                    "id": rid,
                    "type": r.type,
                    "source": r.source,
                    "target": r.target,
                    "weight": weight,
                    "evidence": json.dumps(kept),
                },
            )
        for eid, exists in zip(endpoints, replies[offset + len(rels) :], strict=True):
            if not exists:
                raise InvalidOperationError(f"a relation names an unknown entity {eid!r}")
        return m

    async def record(
        self, entities: list[EntityIn], relations: list[RelationIn], evidence: str | None = None
    ) -> None:
        """Record entities and relations in one journaled change."""
        m = await self.upsert(entities, relations, evidence)
        if m.ops:
            await self.memory.store.apply(m, "graph.record")

    async def retire_replaced(
        self, m: Mutation, relations: list[RelationIn], replaced: list[str], now: float
    ) -> int:
        """Add to ``m`` the retirement of relations a superseded fact stated.

        A stored relation of the same source and type as one of ``relations`` whose
        target is named in a ``replaced`` statement (and not the new target) is taken out
        of the traversal sets; its hash stays, ``status: superseded`` with ``valid_to``:
        the graph supersedes, never overwrites. Returns how many.
        """
        if not relations or not replaced:
            return 0
        old_words = [set(re.findall(r"\w+", r.lower())) for r in replaced]
        sources = sorted({r.source for r in relations})
        pipe = self.client.pipeline(transaction=False)
        for source in sources:
            pipe.zrange(self.keys.relations_out(source), 0, -1)
        stored = dict(zip(sources, await pipe.execute(), strict=True))
        fresh = {(r.source, r.type, r.target) for r in relations}
        kinds = {(r.source, r.type) for r in relations}
        stale = []
        for source, members in stored.items():
            for member in map(text, members):
                kind, _, target = member.partition(SEP)
                if (source, kind) in kinds and (source, kind, target) not in fresh:
                    stale.append((source, kind, target))
        if not stale:
            return 0
        pipe = self.client.pipeline(transaction=False)
        for _, _, target in stale:
            pipe.hget(self.keys.entity(target), "name")
        retired = 0
        for (source, kind, target), name in zip(stale, await pipe.execute(), strict=True):
            words = set(re.findall(r"\w+", text(name or "").lower()))
            if not words or not any(words <= old for old in old_words):
                continue
            m.zrem(self.keys.relations_out(source), f"{kind}{SEP}{target}")
            m.zrem(self.keys.relations_in(target), f"{kind}{SEP}{source}")
            m.hset(
                self.keys.relation(relation_id(kind, source, target)),
                {"status": "superseded", "valid_to": now},
            )
            m.zadd(self.keys.relations_retired(source), {f"{kind}{SEP}{target}": now})
            retired += 1
        return retired

    async def retired(self, entity_ids: list[str]) -> list[tuple[str, str, str, float]]:
        """The retired outgoing relations of entities: (source, type, target, valid_to)."""
        pipe = self.client.pipeline(transaction=False)
        for eid in entity_ids:
            pipe.zrange(self.keys.relations_retired(eid), 0, -1, withscores=True)
        out = []
        for eid, members in zip(entity_ids, await pipe.execute(), strict=True):
            for member, at in members:
                kind, _, target = text(member).partition(SEP)
                out.append((eid, kind, target, float(at)))
        return out

    async def names(self, entity_ids: list[str]) -> dict[str, str]:
        """Entity id -> name (ids without an entity are left out)."""
        pipe = self.client.pipeline(transaction=False)
        for eid in entity_ids:
            pipe.hget(self.keys.entity(eid), "name")
        found = await pipe.execute()
        return {eid: text(n) for eid, n in zip(entity_ids, found, strict=True) if n}

    async def get(self, eid: str) -> Entity:
        """One entity.

        Raises:
            NotFoundError: no such entity.
        """
        doc = _decode_entity(await self.client.hgetall(self.keys.entity(eid)))
        if not doc:
            raise NotFoundError(f"no entity {eid!r}")
        return doc

    async def names_of_type(self, kind: str, limit: int = 12) -> list[str]:
        """The names of the entities of one type, most salient first.

        A scan of the entities: for the rare question that asks to list a kind of thing.
        """
        keys = [k async for k in self.client.scan_iter(match=self.keys.entity("*"), count=1000)]
        found: list[tuple[float, str]] = []
        for start in range(0, len(keys), 500):
            pipe = self.client.pipeline(transaction=False)
            for key in keys[start : start + 500]:
                pipe.hmget(key, ["type", "name", "salience"])
            for type_, name, salience in await pipe.execute():
                if type_ is not None and text(type_) == kind and name:
                    found.append((float(salience or 0), text(name)))
        found.sort(key=lambda pair: pair[0], reverse=True)
        return list(dict.fromkeys(name for _, name in found))[:limit]

    async def find(
        self, query: str, limit: int = 10, scopes: list[str] | None = None
    ) -> list[Entity]:
        """Entities whose name or alias starts with a word of ``query``, most salient first."""
        words = [w for w in query_tokens(query) if len(w) > 2][:12]
        if not words:
            return []
        pipe = self.client.pipeline(transaction=False)
        for word in words:
            pipe.zrangebylex(self.keys.entity_names(), f"[{word}", f"[{word}\xff", 0, 50)
        ids = list(
            dict.fromkeys(
                text(member).rsplit(SEP, 1)[1] for rows in await pipe.execute() for member in rows
            )
        )
        pipe = self.client.pipeline(transaction=False)
        for eid in ids:
            pipe.hgetall(self.keys.entity(eid))
        docs = [d for d in map(_decode_entity, await pipe.execute()) if d is not None]
        if scopes:
            wanted = {check_scope(s) for s in scopes}
            docs = [d for d in docs if d.get("scope") in wanted]
        docs.sort(
            key=lambda d: (d.get("salience", 0), d.get("mention_count", 0), d.get("last_seen", 0)),
            reverse=True,
        )
        return docs[:limit]

    async def expand(
        self, seeds: list[str], depth: int = 2, per_node: int = 20, max_nodes: int = 200
    ) -> Expansion:
        """Everything within ``depth`` hops of ``seeds``: one round trip."""
        if not seeds:
            return Expansion({}, [])
        if not 1 <= depth <= 4:
            raise InvalidOperationError("depth is 1 to 4")
        edges_raw, nodes_raw = await Functions(self.client, self.keys).expand(
            seeds, depth, per_node, max_nodes
        )
        nodes: dict[str, Entity] = {}
        for eid, hop, raw in nodes_raw:
            flat = [text(x) for x in raw]
            doc = _decode_entity(dict(zip(flat[::2], flat[1::2], strict=True)))
            if doc is not None:
                doc["hop"] = int(hop)
                nodes[text(eid)] = doc
        edges: dict[tuple[str, str, str], tuple[str, str, str, float, int]] = {}
        for source, kind, target, weight, hop in edges_raw:
            key = (text(source), text(kind), text(target))
            if key not in edges or edges[key][4] > int(hop):
                edges[key] = (*key, float(weight), int(hop))
        return Expansion(nodes, sorted(edges.values(), key=lambda e: (e[4], -e[3])))

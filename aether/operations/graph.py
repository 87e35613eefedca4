"""Graph operations: find entities, and what is related to them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from aether.errors import InvalidOperationError
from aether.identifiers import IdentifierMatcher
from aether.memory.knowledge.extraction import MAX_NAME, clean_name
from aether.memory.knowledge.graph import Entity, EntityIn
from aether.operations.base import AsOf, Caller, not_for_agent, operation
from aether.operations.parts import Parts
from aether.operations.ranges import DEPTH

__all__ = [
    "AliasArgs",
    "Entities",
    "Related",
    "RelationRow",
    "graph_alias",
    "graph_expand",
    "graph_find",
]

FIND_LIMIT = 20
EntityType = Literal["person", "place", "organisation", "date", "thing"]
"""The types the extractors give (``extraction.ENTITY_TYPES``)."""
EXPAND_SEEDS = 5


class FindArgs(BaseModel):
    """Arguments of ``graph_find``."""

    query: str = Field(description="A name, or words starting entity names or aliases.")


class Entities(BaseModel):
    """Entities found, most salient first."""

    entities: list[Entity]


def _entity_lines(found: Entities) -> str:
    lines = [f"[{e['id']}] {e['type']} {e['name']}" for e in found.entities]
    return "\n".join(lines) or "no entities found"


@operation(read_only=True, brief=_entity_lines, memory="search_memory")
async def graph_find(parts: Parts, caller: Caller, args: FindArgs) -> Entities:
    """Entities (people, places, projects, tools) whose name or alias starts a query word."""
    return Entities(entities=await parts.graph.find(args.query, limit=FIND_LIMIT))


class RelationRow(TypedDict):
    """One relation an expansion reached, endpoints by name."""

    source: str
    type: str
    target: str
    weight: float
    hop: int
    retired: bool


class ExpandArgs(BaseModel):
    """Arguments of ``graph_expand``."""

    query: str = Field(description="The entities to start from, by name.")
    depth: Annotated[int, DEPTH.field("Hops from them.")] = 2
    include_retired: bool = Field(
        default=False,
        description="Also the relations later facts retired (superseded), marked retired.",
        json_schema_extra=not_for_agent(),
    )
    as_of: AsOf = None


class Related(BaseModel):
    """The relations within ``depth`` hops of the entities a query finds."""

    relations: list[RelationRow]


def _relation_lines(found: Related) -> str:
    lines = [f"{r['source']} {r['type']} {r['target']}" for r in found.relations]
    return "\n".join(lines) or "no relations found"


@operation(read_only=True, brief=_relation_lines, memory="search_memory")
async def graph_expand(parts: Parts, caller: Caller, args: ExpandArgs) -> Related:
    """How the entities a query names relate to others, within a few hops."""
    seeds = [d["id"] for d in await parts.graph.find(args.query, limit=EXPAND_SEEDS)]
    found = await parts.graph.expand(seeds, depth=args.depth)
    names = {eid: node["name"] for eid, node in found.nodes.items()}
    rows = [
        RelationRow(
            source=names.get(s, s), type=t, target=names.get(d, d), weight=w, hop=h, retired=False
        )
        for s, t, d, w, h in found.edges
    ]
    if args.include_retired:
        retired = await parts.graph.retired(list(found.nodes))
        names.update(await parts.graph.names([d for _, _, d, _ in retired if d not in names]))
        hops = {eid: int(node.get("hop", 0)) for eid, node in found.nodes.items()}
        rows += [
            RelationRow(
                source=names.get(s, s),
                type=t,
                target=names.get(d, d),
                weight=0.0,
                hop=hops.get(s, 0) + 1,
                retired=True,
            )
            for s, t, d, _ in retired
        ]
    return Related(relations=rows)


class AliasArgs(BaseModel):
    """Arguments of ``graph_alias``."""

    name: str = Field(min_length=1, max_length=MAX_NAME, description="The entity's name.")
    alias: str = Field(
        min_length=1,
        max_length=MAX_NAME,
        description="Another name it goes by (a nickname, a spelling, the name in another "
        "script): search, forget --about and erase find it by this too.",
    )
    type: EntityType | None = Field(
        default=None, description="Its type, when the entity is new (default: person)."
    )


@operation(read_only=False, agent=False)
async def graph_alias(parts: Parts, caller: Caller, args: AliasArgs) -> Entities:
    """Record that an entity is also known by another name (created if new)."""
    name, alias = clean_name(args.name), clean_name(args.alias)
    if not name or not alias:
        raise InvalidOperationError("a name and an alias need letters or digits")
    matcher = IdentifierMatcher([name])
    known = [
        e
        for e in await parts.graph.find(name, limit=FIND_LIMIT)
        if matcher.in_text(e["name"]) and IdentifierMatcher([e["name"]]).in_text(name)
    ]
    kind = args.type or (known[0]["type"] if known else "person")
    await parts.graph.record([EntityIn(kind, known[0]["name"] if known else name, [alias])], [])
    return Entities(entities=await parts.graph.find(name, limit=1))

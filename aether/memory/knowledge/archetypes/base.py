"""The archetype Protocol: event types, extractors and a context strategy."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from aether.memory.knowledge.graph import EntityIn, RelationIn
from aether.memory.storage.records import Event

EntityExtractor = Callable[[Event], list[EntityIn]]
RelationExtractor = Callable[[Event, list[EntityIn]], list[RelationIn]]
BUDGET_PARTS = ("recent", "semantic", "entities", "relations")


@dataclass(frozen=True)
class ContextStrategy:
    """How context assembly weighs and budgets memory for this domain.

    Why: docs/design.md, "Archetypes".

    ``budget`` gives each part a percentage of the memory budget: recent events,
    semantic (hybrid search) hits, salient entities, relations around them.
    """

    recency_weight: float = 0.3
    relevance_weight: float = 0.5
    salience_weight: float = 0.2
    budget: Mapping[str, int] = field(
        default_factory=lambda: {"recent": 25, "semantic": 45, "entities": 15, "relations": 15}
    )

    def __post_init__(self) -> None:
        if set(self.budget) != set(BUDGET_PARTS) or sum(self.budget.values()) != 100:
            raise ValueError(f"a budget gives {', '.join(BUDGET_PARTS)} percentages summing to 100")


class Archetype(Protocol):
    """A domain: its event types, the extractors of their entities and relations, a strategy."""

    @property
    def name(self) -> str:
        """Its name."""
        ...

    @property
    def event_types(self) -> tuple[str, ...]:
        """The events its agent records."""
        ...

    @property
    def extractors(self) -> Mapping[str, EntityExtractor]:
        """Event type -> the entities in such an event."""
        ...

    @property
    def relation_extractors(self) -> Mapping[str, RelationExtractor]:
        """Event type -> the relations among an event's entities."""
        ...

    @property
    def strategy(self) -> ContextStrategy:
        """Scoring weights and the memory budget's split."""
        ...

    @property
    def tools(self) -> tuple[str, ...]:
        """The workspace tools its agent is offered (``aether.runtime.tools.workspace``)."""
        ...


def run_extractors(archetype: Archetype, event: Event) -> tuple[list[EntityIn], list[RelationIn]]:
    """The entities and relations ``archetype`` finds in ``event``."""
    kind = str(event.get("type", ""))
    entities = archetype.extractors[kind](event) if kind in archetype.extractors else []
    for entity in entities:
        if entity.scope == "global":
            entity.scope = str(event.get("scope") or "global")
    relate = archetype.relation_extractors.get(kind)
    relations = relate(event, entities) if relate else []
    return entities, relations

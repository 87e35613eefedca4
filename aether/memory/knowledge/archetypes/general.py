"""The general archetype: names and keywords of any event, and what co-occurs."""

from __future__ import annotations

import re
from itertools import combinations
from types import MappingProxyType

from aether.memory.knowledge.archetypes.base import ContextStrategy
from aether.memory.knowledge.graph import EntityIn, RelationIn
from aether.memory.storage.records import Event

# Capitalised words not opening a sentence: "met Alice Smith in Lisbon" -> Alice Smith, Lisbon
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
MAX_NAMES = 8


def event_text(event: Event) -> str:
    """An event's text: its content."""
    return str(event.get("content") or "")


def names_and_keywords(event: Event) -> list[EntityIn]:
    """People, places and things named in the text, and the event's keywords as topics."""
    found = list(dict.fromkeys(_NAME.findall(event_text(event))))[:MAX_NAMES]
    entities = [EntityIn("name", name, salience=0.3) for name in found]
    entities += [EntityIn("topic", k.lower(), salience=0.2) for k in event.get("keywords") or []]
    return entities


def co_occurrence(event: Event, entities: list[EntityIn]) -> list[RelationIn]:
    """Entities named in one event are related."""
    ids = list(dict.fromkeys(e.id for e in entities))
    return [RelationIn("co_occurs", a, b, 0.5) for a, b in combinations(ids, 2)]


class GeneralArchetype:
    """For any agent: conversations, actions, observations."""

    name = "general"
    event_types = ("message", "action", "observation", "tool_call", "error", "decision")
    extractors = MappingProxyType(dict.fromkeys(event_types, names_and_keywords))
    relation_extractors = MappingProxyType(dict.fromkeys(event_types, co_occurrence))
    strategy = ContextStrategy()
    # notes and files in its workspace; no shell (a coding agent has one)
    tools = ("read_file", "write_file", "edit_file", "glob", "grep")

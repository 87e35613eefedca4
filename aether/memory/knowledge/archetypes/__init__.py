"""Archetypes: what an agent's domain adds to the memory framework.

Why: docs/design.md, "Archetypes".
"""

from __future__ import annotations

from collections.abc import Callable

from aether.errors import InvalidOperationError
from aether.memory.knowledge.archetypes.base import Archetype, ContextStrategy
from aether.memory.knowledge.archetypes.coding import CodingArchetype
from aether.memory.knowledge.archetypes.general import GeneralArchetype

ARCHETYPES: dict[str, Callable[[], Archetype]] = {
    "general": GeneralArchetype,
    "coding": CodingArchetype,
}


def archetype(name: str) -> Archetype:
    """The archetype called ``name``.

    Raises:
        InvalidOperationError: no such archetype.
    """
    if name not in ARCHETYPES:
        raise InvalidOperationError(f"unknown archetype {name!r}: use {', '.join(ARCHETYPES)}")
    return ARCHETYPES[name]()


__all__ = ["ARCHETYPES", "Archetype", "ContextStrategy", "archetype"]

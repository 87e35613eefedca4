"""Questions about a kind of thing: "which people did we talk about", "what cities".

Such a question names no one, so neither its words nor its vector find the facts it asks
for. :func:`asked_kind` reads the entity type it asks about (the graph's types: person,
place, organisation); :class:`~aether.memory.retrieval.search.MemorySearch` then looks
for the facts that name the graph's entities of that type. A question about one thing
("who is Marta engaged to?") is not one of these.
"""

from __future__ import annotations

import re

__all__ = ["asked_kind"]

_LISTING = r"\b(?:which|what|any|all|list|name|tell me)\b[^?]*?\b"
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "person",
        re.compile(
            rf"{_LISTING}(?:people|persons|friends|colleagues|contacts|customers|clients|"
            r"family members|coworkers|co-workers)\b"
            r"|^\s*who\s+(?:have|did|do|had)\s+(?:i|we|you)\b[^?]*\b(?:mention(?:ed)?|talk(?:ed)?"
            r"|met|meet|discuss(?:ed)?|know|name[ds]?|bring|brought)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "place",
        re.compile(
            rf"{_LISTING}(?:places|cities|countries|towns|locations|destinations)\b"
            r"|^\s*where\s+have\s+(?:i|we|you)\s+(?:been|travell?ed|lived)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "organisation",
        re.compile(
            rf"{_LISTING}(?:companies|organisations|organizations|employers|firms|"
            r"businesses|orgs|vendors|suppliers)\b",
            re.IGNORECASE,
        ),
    ),
)


def asked_kind(query: str) -> str | None:
    """The entity type a question asks to list, or ``None`` for any other question."""
    for kind, pattern in _KINDS:
        if pattern.search(query):
            return kind
    return None

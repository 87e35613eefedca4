"""Words of a text as retrieval compares them: lower case, stopwords left out."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aether.memory.retrieval.stopwords import STOPWORDS

__all__ = ["coverage", "held", "sentences", "words"]

_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
STEM_CHARS = 5
"""Two words that share their first five letters count as one ("deploy", "deployed")."""


def words(text: str) -> set[str]:
    """The meaningful words of ``text``: lower case, stopwords removed."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def coverage(query: Sequence[str], found: set[str]) -> float:
    """The share of the query's words found among ``found`` (0.0 for an empty query).

    Args:
        query: the query's meaningful words (``aether.memory.retrieval.search.query_tokens``).
        found: a memory's :func:`words`.
    """
    if not query:
        return 0.0
    return len(held(query, found)) / len(query)


def held(query: Sequence[str], found: set[str], stems: set[str] | None = None) -> list[str]:
    """The query's words found among ``found``, a word or its first letters (``STEM_CHARS``).

    Args:
        query: the query's meaningful words (``aether.memory.retrieval.search.query_tokens``).
        found: a memory's :func:`words`.
        stems: ``found``'s first letters, when the caller has them already.
    """
    if stems is None:
        stems = {w[:STEM_CHARS] for w in found}
    return [q for q in query if q in found or q[:STEM_CHARS] in stems]


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (cut after ``.``, ``!`` or ``?`` and at line breaks), stripped."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]

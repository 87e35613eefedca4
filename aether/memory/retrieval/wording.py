"""Words of a text as retrieval compares them: lower case, stopwords left out."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aether.memory.retrieval.stopwords import STOPWORDS
from aether.memory.storage.conversation import windows

__all__ = ["best_passage", "coverage", "held", "sentences", "words"]

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


def best_passage(query: Sequence[str], text: str) -> tuple[str, float]:
    """The passage of ``text`` that holds most of the query's words, and its coverage.

    A text within the embedding window is its own one passage; a longer one is cut as its
    vectors read it, to its end (:func:`~aether.memory.storage.conversation.windows`:
    beyond the passages that have vectors, full text still finds it), and the first of
    equals wins. Coverage of the whole of a long text counts words wherever they lie:
    a 4,000-character reply holds a few of any question's words by its length alone, a
    statement that answers holds them together. So a long memory covers the query as
    well as its best passage does (BEAM dev recall@10 +0.010, information extraction
    +0.025; LoCoMo's turns are one passage each and unchanged: README, Benchmarks).

    Args:
        query: the query's meaningful words (``aether.memory.retrieval.search.query_tokens``).
        text: a memory's content.
    """
    scored = ((window, coverage(query, words(window))) for window in windows(text))
    return max(scored, key=lambda pair: pair[1])


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

"""Newest statement first: when results disagree about the same thing, the newer leads.

The belief lifecycle supersedes extracted facts, but most of what an agent remembers is
raw text: chat turns, notes. When two results of one search are about the same thing
and state different values of it (a number, a date, a name), the newer one is what
holds now, so it ranks directly above the older one, and the older one is marked
(``SearchHit.earlier``) so a context can show it as an earlier statement.

"About the same thing", without an LLM, is judged on the sentence of each result that
best matches the query (a long message says many things; only one is the answer): both
sentences contain most of the query's meaningful words (:data:`QUERY_COVERAGE`), and
either they hold mostly the same ones (:data:`SHARED_QUERY_WORDS`: the part of the
question each answers is the same part) or they are near-duplicates of each other
(:data:`SHARED_WORDS`, Jaccard over their words outside the stopwords). An update is
rarely a rephrasing of what it replaces ("I've reached 65 % coverage" and, weeks later,
"coverage has recently improved to 78 %" share little but the subject the question asks
about), which is why the first test counts the question's own words. "Different values":
for a kind of value both sentences state (numbers with the same unit, bare numbers, or
names), each holds one the other does not: 65 % and 78 % disagree, 65 % and "60 calls"
are about different things. These are properties of the two texts and the query alone,
not of any dataset.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from aether.memory.retrieval.wording import coverage, sentences, words

if TYPE_CHECKING:
    from aether.memory.retrieval.search import SearchHit

__all__ = ["newest_first", "values_of"]

QUERY_COVERAGE = 0.5
"""Share of the query's meaningful words each of the two results must contain."""
SHARED_WORDS = 0.2
"""Jaccard similarity of the two sentences' meaningful words (near-duplicate phrasing)."""
SHARED_QUERY_WORDS = 0.5
"""Jaccard similarity of the sets of query words the two sentences contain."""


_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:/]\d+)*(?:\s?%|\s?[a-zA-Z]{1,4}\b)?")
_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][\w.+-]+")
"""A capitalised word inside a sentence (not after a colon: "user: My..." starts one)."""


def values_of(text: str) -> set[str]:
    """The numbers (with a unit when one follows) and mid-sentence capitalised names.

    A name has two letters or more ("I" is no name).
    """
    numbers = {" ".join(m.split()).lower() for m in _NUMBER.findall(text)}
    return numbers | {m.lower() for m in _NAME.findall(text)}


def _kind(value: str) -> str:
    """A value's kind: its unit (``"%"``, ``"ms"``), ``"#"`` for a bare number, else a name."""
    if not value[:1].isdigit():
        return "name"
    unit = re.sub(r"^[\d.,:/]+\s?", "", value)
    return unit or "#"


def _by_kind(values: set[str]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for value in values:
        kinds.setdefault(_kind(value), set()).add(value)
    return kinds


def _disagree(a: set[str], b: set[str], names: bool) -> bool:
    """Whether two sets of values state different values of one kind (see module docs).

    ``names``: whether names count (only between near-duplicate sentences: technical text
    is full of capitalised words, and two sentences that merely answer the same part of
    a question differ in them by chance).
    """
    kinds_a, kinds_b = _by_kind(a), _by_kind(b)
    if not names:
        kinds_a.pop("name", None)
    return any(
        kinds_a[kind] - kinds_b[kind] and kinds_b[kind] - kinds_a[kind]
        for kind in kinds_a.keys() & kinds_b.keys()
    )


def _jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def _query_words(query: Sequence[str], found: set[str]) -> set[str]:
    """The query's words that ``found`` holds (as :func:`coverage` counts them)."""
    return {q for q in query if coverage([q], found) > 0}


def _conflict(
    vocabulary: tuple[set[str], set[str]], values: tuple[set[str], set[str]], query: Sequence[str]
) -> bool:
    """Whether two best sentences state different values of the same thing."""
    a, b = vocabulary
    if _jaccard(a, b) >= SHARED_WORDS:  # near-duplicates: names count too
        return _disagree(*values, names=True)
    shared = _jaccard(_query_words(query, a), _query_words(query, b))
    return shared >= SHARED_QUERY_WORDS and _disagree(*values, names=False)


def newest_first(hits: list[SearchHit], query: Sequence[str]) -> list[SearchHit]:
    """``hits`` (best first) with each older statement placed after a newer disagreeing one.

    Args:
        hits: ranked results.
        query: the query's meaningful words (``aether.memory.retrieval.search.query_tokens``).

    Returns:
        The same hits; an older hit that a newer one contradicts is marked ``earlier``
        and follows it.
    """
    # a sentence never covers more of the query than its whole text: skip the rest
    best = [
        _best_sentence(h.content, query) if _coverage_of(h) >= QUERY_COVERAGE else "" for h in hits
    ]
    vocabulary = [words(sentence) for sentence in best]
    values = [values_of(sentence) for sentence in best]
    about = [coverage(query, w) >= QUERY_COVERAGE for w in vocabulary]
    order = list(range(len(hits)))
    earlier: set[int] = set()
    for i in range(len(hits)):
        for j in range(len(hits)):
            if i == j or not (about[i] and about[j]):
                continue
            if _timestamp(hits[j]) <= _timestamp(hits[i]):
                continue  # j must be newer than i
            if not _conflict((vocabulary[i], vocabulary[j]), (values[i], values[j]), query):
                continue
            earlier.add(i)
            at_i, at_j = order.index(i), order.index(j)
            if at_j > at_i:  # the newer one moves directly above the older
                order.pop(at_j)
                order.insert(at_i, j)
    return [replace(hits[k], earlier=True) if k in earlier else hits[k] for k in order]


def _best_sentence(text: str, query: Sequence[str]) -> str:
    """The sentence of ``text`` that contains the most of the query's words (the first)."""
    found = sentences(text) or [text]
    return max(found, key=lambda s: coverage(query, words(s)))


def _coverage_of(hit: SearchHit) -> float:
    """What search measured of the hit's coverage (a neighbour without one: full)."""
    return hit.coverage if hit.coverage is not None else 1.0


def _timestamp(hit: SearchHit) -> float:
    return float(hit.doc.get("timestamp", 0) or 0)

"""Newest statement first: when results disagree about the same thing, the newer leads.

The belief lifecycle supersedes extracted facts, but most of what an agent remembers is
raw text: chat turns, notes. When two results of one search are about the same thing
and state different values of it (a number, a date, a name), the newer one is what
holds now, so it ranks directly above the older one, and the older one is marked
(``SearchHit.earlier``) so a context can show it as an earlier statement.

"About the same thing", without an LLM, is judged on the sentence of each result that
best matches the query (a long message says many things; only one is the answer). Either
both sentences contain most of the query's meaningful words (:data:`QUERY_COVERAGE`), two
at least (one word, even half of a two-word query, is a coincidence), and they hold
mostly the same ones (:data:`SHARED_QUERY_WORDS`: the part of the question each answers
is the same part) or are near-duplicates of each other (:data:`SHARED_WORDS`,
Jaccard over their words outside the stopwords); or the older one contains most of the
query's words, the newer names nothing of the query the older does not (at least
:data:`RESTATED_WORDS` of them) and says that something changed (:data:`CHANGE_WORDS`:
"new", "now", "increased"...). An update is rarely a rephrasing of what it replaces
("I've reached 65 % coverage" and, weeks later, "coverage has recently improved to
78 %" share little but the subject the question asks about), which is why these tests
count the question's own words; and it often restates only the subject, leaning on what
was said before ("the new April 25 deadline" for "my April 20 deadline for the draft for
the writing group"), which is why the last test asks the full statement of the older
one only, and a word of change of the newer.

"Different values": for a kind of value both sentences state (days of a month, numbers
that measure or count the same thing, and between near-duplicates also bare numbers and
names), each holds one the other does not: 65 % and 78 % disagree, 65 % and "60 calls"
are about different things; a bare number counts what the other sentence's number
counts when its own sentence names that too. These are properties of the two texts and
the query alone, not of any dataset (what it changed is in
docs/decisions/0005-figures-behind-the-rules.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from aether.memory.retrieval.text import STEM_CHARS, STOPWORDS, coverage, held, sentences, words

if TYPE_CHECKING:
    from aether.memory.retrieval.hit import SearchHit

__all__ = ["newest_first", "values_of"]

QUERY_COVERAGE = 0.5
"""Share of the query's meaningful words each of the two results must contain."""
SHARED_WORDS = 0.2
"""Jaccard similarity of the two sentences' meaningful words (near-duplicate phrasing)."""
SHARED_QUERY_WORDS = 0.5
"""Jaccard similarity of the sets of query words the two sentences contain."""
RESTATED_WORDS = 2
"""Query words a result's sentence must hold to be about the query at all, and a short
restatement must share with the full one: one is a coincidence."""


_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATE = re.compile(
    rf"\b({_MONTH})\.?\s+{_DAY}\b(?:,?\s+\d{{4}})?|\b{_DAY}\s+(?:of\s+)?({_MONTH})\b(?:,?\s+\d{{4}})?",
    re.IGNORECASE,
)
"""A day of a month ("April 25", "25th of April, 2024"): one value of kind ``date``."""
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,:/]\d+)*)(?:\s?(%)|\s?([a-zA-Z]+)\b)?")
"""A number and the word that follows it: its unit or what it counts ("5 interviews")."""
_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][\w.+-]+")
"""A capitalised word inside a sentence (not after a colon: "user: My..." starts one)."""
CHANGE_WORDS = frozenset(
    [
        "new",
        "now",
        "updated",
        "update",
        "changed",
        "change",
        "moved",
        "instead",
        "increased",
        "decreased",
        "improved",
        "raised",
        "lowered",
        "reduced",
        "dropped",
        "grew",
        "extended",
        "shortened",
        "pushed",
        "postponed",
        "rescheduled",
        "revised",
        "recently",
        "latest",
        "switched",
        "upgraded",
        "downgraded",
        "anymore",
        "currently",
    ]
)
"""Words with which a statement says it replaces an earlier one ("the new April 25
deadline", "has recently improved to 78 %"): what a short restatement must carry."""
_NO_UNIT = STOPWORDS | {"st", "nd", "rd", "th"}  # a stopword or an ordinal's ending
LOOSE_KINDS = frozenset({"#", "name"})
"""Kinds too common to tell two statements apart unless the two are near-duplicates: bare
numbers (years, versions, list items) and names."""


def values_of(text: str) -> set[str]:
    """The dates, numbers (with what they measure or count) and mid-sentence names.

    A date is ``"apr 25"``; a number keeps the word after it unless that is a stopword
    (``"400 ms"``, ``"5 interviews"``, ``"2.3"``); a name has two letters or more ("I" is
    no name).
    """
    found: set[str] = set()

    def date(match: re.Match[str]) -> str:
        month, day = (match[1], match[2]) if match[1] else (match[4], match[3])
        found.add(f"{month[:3].lower()} {int(day)}")
        return " "

    rest = _DATE.sub(date, text)
    for number, percent, word in _NUMBER.findall(rest):
        unit = percent or (word.lower() if word and word.lower() not in _NO_UNIT else "")
        found.add(f"{number} {unit}" if unit else number)
    return found | {m.lower() for m in _NAME.findall(rest)}


def _kind(value: str) -> str:
    """A value's kind: ``date``, what a number measures or counts, ``#`` or ``name``.

    What a number measures is its unit (``"%"``, ``"ms"``) or the first letters of what it
    counts (``"inter"`` for interviews and interview); ``#`` is a bare number.
    """
    number, _, unit = value.partition(" ")
    if not number[:1].isdigit():
        return "date" if unit.isdigit() else "name"
    return unit[:STEM_CHARS] if unit else "#"


def _by_kind(values: set[str]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for value in values:
        kinds.setdefault(_kind(value), set()).add(value)
    return kinds


@dataclass(frozen=True)
class _Statement:
    """What the pairwise tests read of one result's best sentence, computed once."""

    vocabulary: set[str]
    stems: set[str]
    values: set[str]
    asked: set[str]
    """The query's words it holds (:func:`held`)."""
    share: float
    """Its :func:`coverage` of the query."""

    @classmethod
    def of(cls, sentence: str, query: Sequence[str]) -> _Statement:
        vocabulary = words(sentence)
        stems = {word[:STEM_CHARS] for word in vocabulary}
        found = held(query, vocabulary, stems)
        share = len(found) / len(query) if query else 0.0
        return cls(vocabulary, stems, values_of(sentence), set(found), share)

    @property
    def full(self) -> bool:
        """Whether it holds most of the query's words (:data:`QUERY_COVERAGE`)."""
        return self.share >= QUERY_COVERAGE


def _disagree(older: _Statement, newer: _Statement, loose: bool) -> bool:
    """Whether two sentences state different values of one kind (see module docs).

    A bare number counts what the other sentence's number counts when its own sentence
    names that too ("commits ... now reached 165" against "150 commits").
    ``loose``: whether the :data:`LOOSE_KINDS` count (only between near-duplicate
    sentences: technical text is full of capitalised words, and two sentences that merely
    answer the same part of a question differ in them by chance).
    """
    kinds_a, kinds_b = _by_kind(older.values), _by_kind(newer.values)
    _adopt(kinds_a, kinds_b, older.stems)
    _adopt(kinds_b, kinds_a, newer.stems)
    return any(
        kinds_a[kind] - kinds_b[kind] and kinds_b[kind] - kinds_a[kind]
        for kind in kinds_a.keys() & kinds_b.keys()
        if loose or kind not in LOOSE_KINDS
    )


def _adopt(kinds: dict[str, set[str]], other: dict[str, set[str]], stems: set[str]) -> None:
    """Give ``kinds``' bare numbers each counted kind of ``other`` its sentence names."""
    bare = kinds.get("#")
    if not bare:
        return
    for kind in other.keys() - kinds.keys():
        if kind.isalpha() and kind not in ("date", "name") and kind in stems:
            kinds[kind] = bare


def _jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def _conflict(older: _Statement, newer: _Statement) -> bool:
    """Whether two best sentences, the older first, state different values of one thing."""
    both = older.full and newer.full
    if both and _jaccard(older.vocabulary, newer.vocabulary) >= SHARED_WORDS:
        return _disagree(older, newer, loose=True)  # near-duplicates: names count too
    if both and _jaccard(older.asked, newer.asked) >= SHARED_QUERY_WORDS:
        return _disagree(older, newer, loose=False)
    restated = older.full and len(newer.asked) >= RESTATED_WORDS
    restated = restated and newer.asked <= older.asked and bool(newer.vocabulary & CHANGE_WORDS)
    return restated and _disagree(older, newer, loose=False)


def newest_first(hits: list[SearchHit], query: Sequence[str]) -> list[SearchHit]:
    """``hits`` (best first) with each older statement placed after a newer disagreeing one.

    Args:
        hits: ranked results.
        query: the query's meaningful words (``aether.memory.retrieval.search.query_tokens``).

    Returns:
        The same hits; an older hit that a newer one contradicts is marked ``earlier``
        and follows it.
    """
    # a sentence never holds more of the query than its whole text: skip the rest
    least = min(QUERY_COVERAGE, RESTATED_WORDS / len(query)) if query else QUERY_COVERAGE
    best = [_best_sentence(h.content, query) if _coverage_of(h) >= least else "" for h in hits]
    said = [_Statement.of(sentence, query) for sentence in best]
    # one shared word is a coincidence, even when it is half of a two-word query (a name
    # that every chat turn of a speaker carries: "What did Caroline research?")
    need = min(len(query), RESTATED_WORDS)
    about = [statement.share >= least and len(statement.asked) >= need for statement in said]
    order = list(range(len(hits)))
    earlier: set[int] = set()
    for i in range(len(hits)):
        for j in range(len(hits)):
            if i == j or not (about[i] and about[j]):
                continue
            if _timestamp(hits[j]) <= _timestamp(hits[i]):
                continue  # j must be newer than i
            if not _conflict(said[i], said[j]):
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

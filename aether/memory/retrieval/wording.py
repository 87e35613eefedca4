"""Words of a text as retrieval compares them: lower case, stopwords left out."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterator, Sequence

from aether.memory.retrieval.stopwords import STOPWORDS
from aether.memory.storage.conversation import window_spans, windows

__all__ = [
    "best_passage",
    "coverage",
    "held",
    "sentences",
    "word_count",
    "words",
    "words_to_cover",
]

_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
STEM_CHARS = 5
"""Two words that share their first five letters count as one ("deploy", "deployed")."""


def words(text: str) -> set[str]:
    """The meaningful words of ``text``: lower case, stopwords removed."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def _stems(query: Sequence[str]) -> Counter[str]:
    """How many of the query's words each stem (:data:`STEM_CHARS`) stands for."""
    return Counter(word[:STEM_CHARS] for word in query)


def word_count(text: str) -> int:
    """How many words ``text`` has, stopwords included (the words :func:`words` reads)."""
    return len(_WORD.findall(text))


def words_to_cover(query: Sequence[str], share: float) -> int:
    """The fewest words a text must have to hold ``share`` of the query's words (at least 1).

    Each word of a text holds one stem (:data:`STEM_CHARS`), which may stand for several
    of the query's words ("deploy", "deployed"): a text with fewer words cannot reach
    ``share``, and need not be searched for it.
    """
    target = share * len(query)
    held_words = 0
    needed = 1
    for needed, count in enumerate(sorted(_stems(query).values(), reverse=True), start=1):
        held_words += count
        if held_words >= target:
            return needed
    return needed


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
    lower = text.lower()
    if len(lower) != len(text):  # lower case moved the characters: cut and read each window
        scored = ((window, coverage(query, words(window))) for window in windows(text))
        return max(scored, key=lambda pair: pair[1])
    # a query word is held where a word of the text starts with its first letters
    # (:func:`held`): find those words once, then count the ones inside each window
    wanted = _stems(query)
    found = sorted(place for stem in wanted for place in _places(lower, stem))
    starts = [at for at, _, _ in found]
    best, most = (0, len(text)), -1
    for start, end in window_spans(text):
        first, last = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
        inside = {stem for _, until, stem in found[first:last] if until <= end}
        count = sum(wanted[stem] for stem in inside)
        if count > most:
            best, most = (start, end), count
    return text[best[0] : best[1]], (most / len(query) if query else 0.0)


def _places(lower: str, stem: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, stem) of each word of ``lower`` that :func:`held` reads as ``stem``.

    ``str.find`` scans for the stem; a hit counts where a word starts and that word,
    not a stopword, begins with exactly the stem (a stem shorter than
    :data:`STEM_CHARS` is a whole word).
    """
    at = lower.find(stem)
    while at != -1:
        if at == 0 or not _is_word_char(lower[at - 1]):
            match = _WORD.match(lower, at)
            word = match.group() if match else ""
            if word[:STEM_CHARS] == stem and word not in STOPWORDS:
                yield at, at + len(word), stem
        at = lower.find(stem, at + 1)


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


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

"""Words of a text as retrieval compares them: lower case, stopwords left out.

Every part that compares a query with a text reads words here: search's tokens
(:func:`query_tokens`), coverage and the best passage of a long text, the newest-first
ordering's sentences, the context's scoring and the graph's lookups. English stopwords
are bundled (:data:`STOPWORDS`: nothing is downloaded).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterator, Sequence

from aether.memory.storage.readings import window_spans, windows

__all__ = [
    "STEM_CHARS",
    "STOPWORDS",
    "best_passage",
    "coverage",
    "held",
    "query_tokens",
    "sentences",
    "word_count",
    "words",
    "words_to_cover",
]

_WORDS = """a about above after again against all am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do does
doesn't doing don't down during each few for from further had hadn't has hasn't have
haven't having he he'd he'll he's her here here's hers herself him himself his how how's
i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
myself no nor not of off on once only or other ought our ours ourselves out over own same
shan't she she'd she'll she's should shouldn't so some such than that that's the their
theirs them themselves then there there's these they they'd they'll they're they've this
those through to too under until up very was wasn't we we'd we'll we're we've were
weren't what what's when when's where where's which while who who's whom why why's with
won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
s t d ll m re ve"""

STOPWORDS = frozenset(_WORDS.split())
"""English stopwords: never a meaningful word of a query or a text."""

_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
STEM_CHARS = 5
"""Two words that share their first five letters count as one ("deploy", "deployed")."""


def query_tokens(text: str) -> list[str]:
    """Lower-case word tokens of user text, stopwords removed, order kept, no duplicates."""
    return list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if w not in STOPWORDS))


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
        query: the query's meaningful words (the :func:`query_tokens`).
        found: a memory's :func:`words`.
    """
    if not query:
        return 0.0
    return len(held(query, found)) / len(query)


def best_passage(query: Sequence[str], text: str) -> tuple[str, float]:
    """The passage of ``text`` that holds most of the query's words, and its coverage.

    A text within the embedding window is its own one passage; a longer one is cut as its
    vectors read it, to its end (:func:`~aether.memory.storage.readings.windows`:
    beyond the passages that have vectors, full text still finds it), and the first of
    equals wins. Coverage of the whole of a long text counts words wherever they lie:
    a 4,000-character reply holds a few of any question's words by its length alone, a
    statement that answers holds them together. So a long memory covers the query as
    well as its best passage does (docs/decisions/0005-figures-behind-the-rules.md).

    Args:
        query: the query's meaningful words (the :func:`query_tokens`).
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
        query: the query's meaningful words (the :func:`query_tokens`).
        found: a memory's :func:`words`.
        stems: ``found``'s first letters, when the caller has them already.
    """
    if stems is None:
        stems = {w[:STEM_CHARS] for w in found}
    return [q for q in query if q in found or q[:STEM_CHARS] in stems]


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (cut after ``.``, ``!`` or ``?`` and at line breaks), stripped."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]

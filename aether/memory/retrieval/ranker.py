"""The learned ranker: LightGBM (LambdaMART) ordering fusion's candidates by their features.

Fusion (:mod:`.fusion`) combines a dozen signals with hand-set constants. With
``memory.ranker = "learned"`` (the default) a gradient-boosted ranking model orders the same
candidates from the same signals: :func:`features` turns what fusion computed for one search
into one row per candidate (:data:`FEATURES`), and :class:`LearnedRanker` scores the rows with the
model shipped beside this module (:data:`MODEL_FILE`, LightGBM's text format, trained by
``bench/train_ranker.py`` on the dev splits only). The model sees nothing fusion does not:
no question metadata, only the candidates, their documents and the query's words.

The learned order does not change the scale of a search's scores: :func:`reordered` hands
the candidates fusion's own scores, sorted, in the learned order, so every floor and blend
downstream (recency, the context's relative floor) means what it meant. Without the model
file, without LightGBM, or with an embedder other than the one the model was trained on
(:data:`TRAINED_EMBEDDER`), search keeps fusion's order and says so once in the log.
"""

from __future__ import annotations

import importlib
import itertools
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from aether.logging import log_once
from aether.memory.retrieval import fusion
from aether.memory.retrieval.hit import Signal
from aether.memory.retrieval.text import STOPWORDS
from aether.memory.storage.records import MemoryDoc

__all__ = [
    "FEATURES",
    "MODEL_FILE",
    "RANK_DEPTH",
    "TRAINED_EMBEDDER",
    "FeatureObserver",
    "LearnedRanker",
    "RankingInputs",
    "features",
    "ranker_for",
    "reordered",
    "rows_from_json",
    "rows_to_json",
    "shared_ranker",
]

log = structlog.get_logger(__name__)

RANK_DEPTH = 60
"""How many of fusion's best candidates the ranker reorders: only their rows are read, the
rest keep fusion's order after them. Reading every candidate's words cost a long-message
search as much again as the search; held out, reordering the first 60 finds what
reordering all of them finds (recall@10 LoCoMo 0.782 both, BEAM 100K 0.647 against 0.645,
500K 0.433 against 0.427), the first 40 a little less (LoCoMo 0.774; decision 0008)."""

MODEL_FILE = Path(__file__).with_name("ranker_model.txt")
"""The shipped model: LightGBM's text format, reproduced by ``bench/train_ranker.py``."""

FEATURES = (
    "fusion_score",
    "fusion_rank",
    "fusion_share_of_best",
    "fused_before_context",
    "context_lift",
    "text_rank",
    "text_scaled",
    "text_score",
    "vector_rank",
    "vector_scaled",
    "similarity",
    "similarity_corrected",
    "own_reading",
    "own_reading_lead",
    "coverage",
    "text_weight",
    "text_clarity",
    "vector_clarity",
    "log_length",
    "is_daily",
    "is_note",
    "from_user",
    "tag_named",
    "log_age_days_behind_newest",
    "newness_rank",
    "candidates",
    "query_words",
    "in_both_lists",
    "neighbour_only",
    "session_share",
    "same_session_as_best",
    "bigram_share",
    "name_share",
    "number_share",
    "time_mentions",
    "is_question",
    "asks_when",
)
"""One row per candidate, in this order; a value a candidate lacks is NaN (LightGBM reads
NaN as missing). Changing the list or a definition needs a retrained model."""

_NAN = math.nan
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+")
TIME_WORDS = frozenset(
    {
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "yesterday",
        "today",
        "tomorrow",
        "tonight",
        "ago",
        "last",
        "next",
        "week",
        "weekend",
        "month",
        "year",
    }
)
"""Words that place a statement in time (``time_mentions`` counts them, four-digit numbers
and clock times)."""
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}\b")
_MAY_HOLD_CLOCK = re.compile(r"\d:\d\d")  # in every clock time; no word boundary to test
_ASKS_WHEN = re.compile(
    r"\b(?:when|how long ago|what (?:time|date|day|month|year)|which (?:day|month|year))\b",
    re.IGNORECASE,
)
TIME_MENTIONS_CAP = 5


_ASCII_NON_WORD = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")}
)


def words_of(text: str) -> list[str]:
    r"""``re.findall(r"\w+", text)``, five times faster on ASCII text (most memories).

    An ASCII word character is a letter, a digit or ``_``: every other ASCII character
    becomes a space and the text is split there. Other text goes through the regex.
    """
    if text.isascii():
        return text.translate(_ASCII_NON_WORD).split()
    return _WORD.findall(text)


def _is_year(word: str) -> bool:
    r"""A four-digit word (``\b\d{4}\b``): a year, most often."""
    return len(word) == 4 and word.isdecimal()


@dataclass(frozen=True)
class _QueryText:
    """What the lexical features need of the query, read once per search."""

    bigrams: frozenset[tuple[str, str]]
    names: frozenset[str]
    numbers: frozenset[str]
    asks_when: float

    @classmethod
    def of(cls, query: str, tokens: Sequence[str]) -> _QueryText:
        first = _WORD.match(query.strip())
        first_at = query.find(first.group(0)) if first else -1  # a sentence's first word
        names = {m.group(0).lower() for m in _CAPITALISED.finditer(query) if m.start() != first_at}
        return cls(
            frozenset(itertools.pairwise(tokens)),
            frozenset(names),
            frozenset(_NUMBER.findall(query)),
            float(bool(_ASKS_WHEN.search(query))),
        )

    def lexical(self, content: str) -> tuple[float, float, float, float, float]:
        """bigram_share, name_share, number_share, time_mentions, is_question."""
        text = _memory_text(content)
        bigrams = names = numbers = _NAN
        if self.bigrams:
            found = sum(f" {a} {b} " in text.kept for a, b in self.bigrams)
            bigrams = found / len(self.bigrams)
        if self.names:
            names = sum(f" {name} " in text.words for name in self.names) / len(self.names)
        if self.numbers:
            numbers = len(self.numbers & text.numbers) / len(self.numbers)
        return bigrams, names, numbers, float(text.time_mentions), float(text.is_question)


@dataclass(frozen=True, slots=True)
class _MemoryText:
    """What the lexical features read of one memory's text, whatever the query.

    Attributes:
        words: its distinct words, lower case, each framed by spaces (``" a b "``): a word
            is among them when ``f" {word} "`` is in it.
        kept: its words without stopwords, in order, framed likewise: two words follow
            each other there when ``f" {a} {b} "`` is in it (words hold no spaces).
        numbers: its runs of digits.
        time_mentions: its time words, years and clock times, at most
            :data:`TIME_MENTIONS_CAP`.
        is_question: whether it ends with a question mark.
    """

    words: str
    kept: str
    numbers: frozenset[str]
    time_mentions: int
    is_question: bool

    @classmethod
    def of(cls, content: str) -> _MemoryText:
        lower = content.lower()
        words = words_of(lower)  # one pass over the text; each feature reads only these
        distinct = dict.fromkeys(words)
        times = sum(words.count(w) for w in TIME_WORDS.intersection(distinct))
        times += sum(words.count(w) for w in distinct if _is_year(w))
        if ":" in lower and _MAY_HOLD_CLOCK.search(lower):  # the first test is cheaper
            times += len(_CLOCK.findall(lower))
        numbers = (run for w in distinct if not w.isalpha() for run in _NUMBER.findall(w))
        return cls(
            f" {' '.join(distinct)} ",
            f" {' '.join(itertools.filterfalse(STOPWORDS.__contains__, words))} ",
            frozenset(numbers),  # a run of digits never crosses a word's end
            min(TIME_MENTIONS_CAP, times),
            content.rstrip().endswith("?"),
        )


_CACHED_TEXT_CHARS = 16_384
"""Memories up to this long are read once per process (:func:`_memory_text`): a daemon's
searches meet the same memories again and again; a longer one is read each time, so that
the cache's size stays bounded (:data:`_CACHED_TEXTS` of them)."""
_CACHED_TEXTS = 4_096


@lru_cache(maxsize=_CACHED_TEXTS)
def _cached_memory_text(content: str) -> _MemoryText:
    return _MemoryText.of(content)


def _memory_text(content: str) -> _MemoryText:
    """:meth:`_MemoryText.of`, read once per process for a text of ordinary length."""
    if len(content) > _CACHED_TEXT_CHARS:
        return _MemoryText.of(content)
    return _cached_memory_text(content)


@dataclass(frozen=True)
class RankingInputs:
    """What fusion computed for one search (:meth:`MemorySearch._rank`).

    Attributes:
        query: the query as asked.
        tokens: the query's meaningful words.
        ranked: each signal's list, (key, score) best first; the vector list
            chance-corrected.
        similarity: each vector candidate's raw cosine similarity.
        covered: each word match's share of the query's words.
        weights: each list's weight in the fusion.
        fused: the fused score of each candidate, before the gate and context.
        scores: the candidates' scores fusion orders by (after context and own reading).
        own: each candidate's own opening reading's similarity, where read.
        docs: the candidates' documents.
    """

    query: str
    tokens: Sequence[str]
    ranked: fusion.Ranked
    similarity: Mapping[str, float]
    covered: Mapping[str, float]
    weights: Mapping[str, float]
    fused: Mapping[str, float]
    scores: Mapping[str, float]
    own: Mapping[str, float]
    docs: Mapping[str, MemoryDoc | None]


FeatureObserver = Callable[[str, int, list[str], np.ndarray], None]
"""``(query, limit, keys, rows) -> None``: told each search's features (training data)."""


def _rank_and_scaled(
    rows: list[tuple[str, float]],
) -> tuple[dict[str, int], dict[str, float], dict[str, float]]:
    ranks = {key: rank for rank, (key, _) in enumerate(rows, 1)}
    return ranks, fusion.min_max(rows), dict(rows)


def features(inputs: RankingInputs, depth: int | None = None) -> tuple[list[str], np.ndarray]:
    """The candidates in fusion's order and a row of :data:`FEATURES` for the first ``depth``.

    Pure: the same inputs give the same rows, at search and in training. What a row says
    of the whole candidate set (its size, ranks, newness, sessions) is read over every
    candidate whatever ``depth``, so a row is the same whether or not the rows after it
    are computed (``None``: all of them, as training reads them).
    """
    scores = inputs.scores
    keys = sorted(scores, key=lambda k: (-scores[k], k))
    n = len(keys)
    rows = np.full((n if depth is None else min(depth, n), len(FEATURES)), _NAN, dtype=np.float64)
    if not n:
        return keys, rows
    text_rows = inputs.ranked.get(Signal.TEXT, [])
    vector_rows = inputs.ranked.get(Signal.VECTOR, [])
    text_rank, text_scaled, text_score = _rank_and_scaled(text_rows)
    vector_rank, vector_scaled, corrected = _rank_and_scaled(vector_rows)
    text_clarity = fusion.clarity(text_rows)
    vector_clarity = fusion.clarity(vector_rows)
    best = scores[keys[0]]
    own_known = [v for k in keys if (v := inputs.own.get(k)) is not None]
    own_mean = sum(own_known) / len(own_known) if own_known else _NAN
    words = set(inputs.tokens)
    stamps = {k: _timestamp(inputs.docs.get(k)) for k in keys}
    newest = max((t for t in stamps.values() if t is not None), default=None)
    by_newness = sorted((k for k in keys if stamps[k] is not None), key=lambda k: -(stamps[k] or 0))
    newness = {k: i for i, k in enumerate(by_newness, 1)}
    sessions = {k: _session(inputs.docs.get(k)) for k in keys}
    per_session: dict[str, int] = {}
    for s in sessions.values():
        if s:
            per_session[s] = per_session.get(s, 0) + 1
    best_session = sessions[keys[0]]
    asked = _QueryText.of(inputs.query, list(inputs.tokens))
    for i, key in enumerate(keys[: len(rows)]):
        doc = inputs.docs.get(key) or {}
        content = str(doc.get("content", ""))
        stamp = stamps[key]
        session = sessions[key]
        own = inputs.own.get(key)
        row = (
            scores[key],
            i + 1,
            scores[key] / best if best > 0 else _NAN,
            inputs.fused.get(key, _NAN),
            scores[key] - inputs.fused.get(key, 0.0),
            text_rank.get(key, _NAN),
            text_scaled.get(key, _NAN),
            text_score.get(key, _NAN),
            vector_rank.get(key, _NAN),
            vector_scaled.get(key, _NAN),
            inputs.similarity.get(key, _NAN),
            corrected.get(key, _NAN),
            own if own is not None else _NAN,
            own - own_mean if own is not None else _NAN,
            covered
            if (covered := inputs.covered.get(key)) is not None
            else fusion.coverage_of(list(inputs.tokens), doc or None),
            inputs.weights.get(Signal.TEXT, _NAN),
            text_clarity if text_clarity is not None else _NAN,
            vector_clarity if vector_clarity is not None else _NAN,
            math.log1p(len(content)),
            float(doc.get("kind") == "daily"),
            float(doc.get("kind") == "longterm"),
            float(doc.get("source") == "user"),
            float(bool(words & {str(t).lower() for t in doc.get("tags", []) or []})),
            math.log1p(max(0.0, (newest - stamp) / 86_400))
            if stamp is not None and newest is not None
            else _NAN,
            newness.get(key, _NAN),
            n,
            len(words),
            float(key in text_rank and key in vector_rank),
            float(key not in text_rank and key not in vector_rank),
            per_session[session] / n if session else _NAN,
            float(bool(session) and session == best_session),
            *asked.lexical(content),
            asked.asks_when,
        )
        rows[i] = row
    return keys, rows


def _timestamp(doc: MemoryDoc | None) -> float | None:
    if not doc:
        return None
    try:
        return float(doc.get("timestamp"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _session(doc: MemoryDoc | None) -> str:
    return str((doc or {}).get("session") or "")


def rows_to_json(rows: np.ndarray) -> list[list[float | None]]:
    """Feature rows as JSON can hold them exactly (``None`` for NaN; floats round-trip)."""
    return [[None if math.isnan(v) else float(v) for v in row] for row in rows.tolist()]


def rows_from_json(rows: Sequence[Sequence[float | None]]) -> np.ndarray:
    """The rows :func:`rows_to_json` wrote, as the ranker reads them."""
    return np.asarray(
        [[math.nan if v is None else v for v in row] for row in rows], dtype=np.float64
    ).reshape(-1, len(FEATURES))


def reordered(scores: Mapping[str, float], order: Sequence[str]) -> dict[str, float]:
    """``scores``' values, best first, handed to ``order``'s keys in turn.

    The learned order with fusion's scale: the best candidate gets the best score fusion
    gave any, and so on, so the floors and blends that follow keep their meaning.
    """
    values = sorted(scores.values(), reverse=True)
    return dict(zip(order, values, strict=True))


_LIGHTGBM_EXTRAS = ("sklearn", "pandas", "dask", "pyarrow", "matplotlib", "graphviz")
"""Libraries LightGBM imports when installed, for APIs the ranker never uses (scikit-learn
alone took 1.1 s of LightGBM's 1.6 s import here: a CLI search's whole budget)."""


def _import_lightgbm() -> Any:
    """LightGBM's core, without the optional libraries it would import alongside.

    A ``None`` in ``sys.modules`` makes an import of that name fail, so LightGBM records
    the library as absent; the entries are removed again, and a library imported before is
    left alone.
    """
    if "lightgbm" in sys.modules:
        return sys.modules["lightgbm"]
    hidden = [name for name in _LIGHTGBM_EXTRAS if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        return importlib.import_module("lightgbm")
    finally:
        for name in hidden:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]


class LearnedRanker:
    """A LightGBM ranking model over :data:`FEATURES`.

    Args:
        booster: the loaded ``lightgbm.Booster``.
    """

    def __init__(self, booster: Any) -> None:
        self.booster = booster
        names = list(booster.feature_name())
        if names != list(FEATURES):
            raise ValueError(f"the model's features {names} are not {list(FEATURES)}")

    @classmethod
    def load(cls, path: Path = MODEL_FILE) -> LearnedRanker | None:
        """The model at ``path``, or ``None``: search then keeps fusion's order.

        ``None`` when the file is absent, unreadable or of other features, or LightGBM is
        not installed; each is logged once.
        """
        try:
            lightgbm = _import_lightgbm()
        except ImportError:
            log_once(log, "ranker-unavailable", "lightgbm is not installed; fusion ranks")
            return None
        if not path.is_file():
            log_once(log, "ranker-unavailable", "no ranker model; fusion ranks", path=str(path))
            return None
        try:
            return cls(lightgbm.Booster(model_file=str(path)))
        except (lightgbm.basic.LightGBMError, ValueError) as e:
            log_once(
                log, "ranker-unavailable", "ranker model unreadable; fusion ranks", error=str(e)
            )
            return None

    def order(self, keys: Sequence[str], rows: np.ndarray) -> list[str]:
        """``keys`` best first by the model's score of their rows (ties: fusion's order)."""
        if not len(keys):
            return []
        predicted = self.booster.predict(rows, num_threads=1)
        return [keys[i] for i in sorted(range(len(keys)), key=lambda i: (-predicted[i], i))]


TRAINED_EMBEDDER = "all-MiniLM-L6-v2"
"""The embedder whose similarities the shipped model was trained on (the local model).
Several features are similarities on its scale; another embedder's scale would mislead the
model, so with any other (or none) search keeps fusion's order."""


@cache
def shared_ranker(path: Path = MODEL_FILE) -> LearnedRanker | None:
    """The model at ``path``, loaded once per process (every search shares it)."""
    return LearnedRanker.load(path)


def ranker_for(embedder_name: str | None) -> LearnedRanker | None:
    """The shared model when the memory's embedder is the one it was trained on, else ``None``.

    Another embedder is logged once (a configuration that gives up the ranker); full text
    only is not, being a choice that gives up every vector signal.

    Args:
        embedder_name: the memory's embedder's ``model_name`` (``None``: full text only).
    """
    if embedder_name is None:
        return None  # full text only: the features read from the vectors are missing
    if embedder_name != TRAINED_EMBEDDER:
        log_once(
            log,
            "ranker-embedder",
            "the learned ranker was trained on another embedder's similarities; fusion ranks",
            embedder=embedder_name or "none",
            trained_on=TRAINED_EMBEDDER,
        )
        return None
    return shared_ranker()

r"""The scoring of one search, pure: candidate lists in, one match per memory out.

Every candidate either list found is scored on both signals (the completion in
:mod:`.candidates`); a long memory's vector score loses what its best passage wins by
chance (:func:`chance_lift`); then the two lists are fused (``memory.fusion``):

- ``adaptive`` (the default): each list min-max scaled and weighted by how clearly its
  best candidates stand out from the rest of its own pool (:func:`clarity`, in the
  pool's standard deviations). On short chat turns the words of a question often pick
  out its answer and the text list leads; on long technical messages, where many share
  the query's vocabulary, the vector list is the sharper one. A per-query weight needs
  no constant tuned to either collection;
- ``minmax``: the same scaling blended ``alpha * vector + (1 - alpha) * text``
  (``memory.vector_alpha``); it keeps each list's score gaps;
- ``rrf``: reciprocal-rank fusion (:func:`rank_scores`): ranks mean the same on any
  data, where raw BM25 and cosine scores do not.

A word match's scaled score is weighted by the square root of its coverage (:func:`fuse`).
The absolute gate (:func:`gate`) keeps a candidate similar enough to the query, or a word
match covering enough of it. After the context's shares (:mod:`.neighbours`), each
candidate gains a share of how far its own reading lies above the candidates' mean
(:func:`with_own_reading`). What was measured to choose each constant is in
``docs/decisions/0004-retrieval-scoring.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from aether.memory.retrieval.hit import SearchHit, Signal
from aether.memory.retrieval.text import best_passage
from aether.memory.storage.readings import passages
from aether.memory.storage.records import MemoryDoc

__all__ = [
    "OWN_READING_WEIGHT",
    "RRF_K",
    "SIMILARITY_SPREAD",
    "Ranked",
    "chance_corrected",
    "chance_lift",
    "clarity",
    "coverage_of",
    "fuse",
    "fusion_weights",
    "gate",
    "min_max",
    "passes_floor",
    "rank_scores",
    "with_own_reading",
]

Ranked = dict[str, list[tuple[str, float]]]
"""Each signal's candidates, (key, score) best first."""

RRF_K = 5
"""Reciprocal-rank fusion's damping constant: how fast credit falls with rank.

Cormack et al. (2009) use 60 to fuse many complete runs. Here two lists are fused and
context evidence is added on the same scale, so the fused scores must still tell the top
of a list from its middle: with 5, rank 1 scores 1.0, rank 5 0.6 and rank 20 0.24.
"""

SIMILARITY_SPREAD = 0.11
"""How far one query's cosine similarities spread across a collection (their standard
deviation) with all-MiniLM-L6-v2: a property of the model rather than of a collection
(docs/decisions/0005-figures-behind-the-rules.md)."""

_EXPECTED_MAX = (0.0, 0.0, 0.5642, 0.8463, 1.0294, 1.1630, 1.2672)
"""The expected maximum of n independent standard normal draws, n = 0..6."""

OWN_READING_WEIGHT = 0.25
"""The share of its own reading's lead over the candidates' mean a memory's score gains.

Fusion scales each list and context lends relevance to neighbours: what is left of the
absolute similarity is only a candidate's place among this query's candidates. The raw
cosine of the memory's own opening reading says how similar the memory itself is on the
model's scale (see :data:`SIMILARITY_SPREAD`): a memory that answers in its own words
leads one that only borrowed relevance from its neighbours or its context.
"""


def chance_lift(text: str) -> float:
    """How much a text's best passage beats its typical one by chance alone.

    A memory read as n passages is scored by the best of n similarities, and the best of
    n draws exceeds a single draw by about the spread times the expected maximum of n
    standard normal draws. Left in, that lift ranks any long text above a short one that
    says the same thing; it depends only on the text's length and the model's spread.
    """
    n = len(passages(text))
    return SIMILARITY_SPREAD * _EXPECTED_MAX[min(n, len(_EXPECTED_MAX) - 1)]


def coverage_of(tokens: list[str], doc: MemoryDoc | None) -> float:
    """How much of the query a memory covers: its best passage's share (:func:`best_passage`)."""
    return best_passage(tokens, str(doc.get("content", "")))[1] if doc is not None else 0.0


def min_max(rows: list[tuple[str, float]]) -> dict[str, float]:
    """Scores scaled to [0, 1] within one candidate list (the ``minmax`` fusion).

    It keeps each list's score gaps (a dominant BM25 match stays far ahead), which the
    rank fusion discards; it also gives the best candidate full marks however poor, which
    the floor (:func:`gate`) makes up for.
    """
    if not rows:
        return {}
    values = [score for _, score in rows]
    low, high = min(values), max(values)
    if high <= low:
        return dict.fromkeys((key for key, _ in rows), 1.0)
    return {key: (score - low) / (high - low) for key, score in rows}


def rank_scores(rows: list[tuple[str, float]]) -> dict[str, float]:
    """Each candidate's reciprocal-rank score, scaled so that rank 1 scores 1.0.

    Equal scores share a rank: a tie stays a tie.
    """
    scores: dict[str, float] = {}
    rank, previous = 0, None
    for position, (key, score) in enumerate(rows, 1):
        if score != previous:
            rank, previous = position, score
        scores[key] = (RRF_K + 1) / (RRF_K + rank)
    return scores


def clarity(rows: list[tuple[str, float]]) -> float | None:
    """How far a list's best score stands above its pool, in the pool's standard deviations.

    ``None`` when the pool is too small or flat to say (fewer than three, or all equal).
    """
    if len(rows) < 3:
        return None
    values = np.fromiter((score for _, score in rows), dtype=np.float64, count=len(rows))
    spread = float(values.std())
    if spread <= 0:
        return None
    return float((values.max() - values.mean()) / spread)


def fusion_weights(ranked: Ranked, alpha: float, fusion: str) -> dict[str, float]:
    """The weight of each candidate list in the fusion.

    One list alone weighs 1. With ``adaptive`` fusion each list weighs its share of the
    two lists' :func:`clarity` (``alpha`` when either cannot say); otherwise the vector
    list weighs ``alpha`` and the text list the rest.
    """
    if len(ranked) == 1:
        return dict.fromkeys(ranked, 1.0)
    if fusion == "adaptive":
        text = clarity(ranked.get(Signal.TEXT, []))
        vector = clarity(ranked.get(Signal.VECTOR, []))
        if text is not None and vector is not None and text + vector > 0:
            alpha = vector / (text + vector)
    return {Signal.TEXT: 1.0 - alpha, Signal.VECTOR: alpha}


def chance_corrected(
    rows: list[tuple[str, float]],
    docs: Mapping[str, MemoryDoc | None],
    openings: Mapping[str, float],
) -> list[tuple[str, float]]:
    """The vector list with each long memory's chance lift taken off, best first again.

    A memory's own opening (``openings``: its first passage) is the one reading every
    memory has, as a short memory's whole text is, so it stands uncorrected: a long
    memory scores at least what its opening alone scores.
    """
    corrected = [
        (
            key,
            max(
                score - chance_lift(str((docs.get(key) or {}).get("content", ""))),
                openings.get(key, -2.0),
            ),
        )
        for key, score in rows
    ]
    return sorted(corrected, key=lambda row: row[1], reverse=True)


def fuse(
    ranked: Ranked, weights: Mapping[str, float], covered: Mapping[str, float], fusion: str
) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """The fused score of every candidate, and its rank in each list.

    Each list is scaled (:func:`min_max`, or :func:`rank_scores` for ``rrf``) and
    weighted (:func:`fusion_weights`); a word match's scaled score is then multiplied by
    the square root of its coverage, the share of the query's meaningful words it holds.
    Scaling alone hands the best word match full marks however little of the query it
    matches; coverage means the same on any data, so the product says how strongly *and*
    how fully a memory matches. The square root keeps a short paraphrase that shares few
    of a question's words in play.
    """
    fused: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, rows in ranked.items():
        scaled = rank_scores(rows) if fusion == "rrf" else min_max(rows)
        for key, norm in scaled.items():
            share = math.sqrt(covered.get(key, 0.0)) if name == Signal.TEXT else 1.0
            fused[key] = fused.get(key, 0.0) + weights[name] * norm * share
        for rank, (key, _) in enumerate(rows, 1):
            ranks.setdefault(key, {})[name] = rank
    return fused, ranks


def gate(
    fused: Mapping[str, float],
    ranks: Mapping[str, Mapping[str, int]],
    similarity: Mapping[str, float],
    covered: Mapping[str, float],
    min_similarity: float,
    min_coverage: float,
) -> dict[str, float]:
    """The candidates that pass the absolute gate, with their fused scores.

    A candidate passes when it is at least ``min_similarity`` cosine-similar to the
    query, or matches it in full text and holds at least ``min_coverage`` of its
    meaningful words: one shared word of a long query is no match, so a query about
    nothing stored finds nothing.
    """
    kept = {}
    for key, score in fused.items():
        if similarity.get(key, -1.0) >= min_similarity or (
            Signal.TEXT in ranks[key]
            and not (min_coverage > 0 and covered.get(key, 0.0) < min_coverage)
        ):
            kept[key] = score
    return kept


def passes_floor(hit: SearchHit, min_similarity: float, min_coverage: float) -> bool:
    """Whether a hit found with the floor off would pass this floor (what benches sweep).

    The same rule as :func:`gate`, read off a hit (:meth:`SearchHit.passes`).
    """
    return hit.passes(min_similarity, min_coverage)


def with_own_reading(
    fused: Mapping[str, float], own: Mapping[str, float], similarity: Mapping[str, float]
) -> dict[str, float]:
    """Each fused score plus a share of how far its own reading beats the candidates' mean.

    Centred on this query's candidates, it reorders them without lifting every score
    alike: a context's floor keeps memories within a share of the best one's match, and
    a lift common to all would let more of them in.

    Args:
        fused: the candidates' scores after fusion and context.
        own: each candidate's own opening reading's cosine similarity to the query.
        similarity: each vector candidate's best reading's similarity, for a candidate
            whose opening was not read. A memory with neither keeps its score.
    """
    readings = {key: own.get(key, similarity.get(key)) for key in fused}
    known = [value for value in readings.values() if value is not None]
    if not known:
        return dict(fused)
    centre = sum(known) / len(known)
    return {
        key: fused[key] + OWN_READING_WEIGHT * (value - centre if value is not None else 0.0)
        for key, value in readings.items()
    }

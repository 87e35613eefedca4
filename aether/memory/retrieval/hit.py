"""What a search finds: :class:`SearchHit`, and the signals that find it (:class:`Signal`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from aether.memory.storage.records import MemoryDoc

__all__ = ["SearchHit", "Signal"]


class Signal(StrEnum):
    """A list of candidates a search reads, and the completion round trip that fills it."""

    TEXT = "text"
    """BM25 over the memory's words."""
    VECTOR = "vector"
    """Cosine similarity of the memory's best reading (KNN over its vectors)."""
    OPENINGS = "openings"
    """The similarity of a memory's own opening reading (completion only)."""


@dataclass(frozen=True)
class SearchHit:
    """One result.

    Attributes:
        key: the memory's Redis key.
        doc: what the hit carries of its document.
        relevance: the order of a search's results: its match blended with recency.
        text_rank: its place in the full-text list (``None``: not a word match).
        vector_rank: its place in the vector list (``None``: not a vector candidate).
    """

    key: str
    doc: MemoryDoc
    relevance: float
    text_rank: int | None
    vector_rank: int | None
    match: float | None = None
    """How well it matches the query alone (``relevance`` without recency): what a caller
    that applies its own recency rule ranks by, so recency never counts twice."""
    similarity: float | None = None
    """The raw cosine similarity to the query (``None``: not a vector candidate)."""
    earlier: bool = False
    """A newer result states a different value of the same thing (see ``.newest``)."""
    coverage: float | None = None
    """The share of the query's meaningful words the memory contains (``None``: a
    neighbour that rode in with a hit)."""

    @property
    def content(self) -> str:
        """The memory's text."""
        return str(self.doc.get("content", ""))

    def passes(self, min_similarity: float, min_coverage: float) -> bool:
        """Whether it would pass this floor (the rule of ``fusion.gate``, read off a hit)."""
        if (self.similarity if self.similarity is not None else -1.0) >= min_similarity:
            return True
        return self.text_rank is not None and (self.coverage or 0.0) >= min_coverage

    def signals(self, min_similarity: float, min_coverage: float) -> dict[str, object]:
        """Why it is a result (``--explain``).

        Its ranks, similarity, coverage, match, recency's part, and whether it passes the
        floor or rode in as a neighbour.
        """
        recency = None if self.match is None else round(self.relevance - self.match, 6)
        floor = "passes" if self.passes(min_similarity, min_coverage) else "kept as a neighbour"
        return {
            "text_rank": self.text_rank,
            "vector_rank": self.vector_rank,
            "similarity": self.similarity,
            "coverage": self.coverage,
            "match": self.match,
            "recency": recency,
            "neighbour": self.coverage is None,
            "earlier": self.earlier,
            "floor": floor,
        }

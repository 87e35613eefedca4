"""What a memory is read as: the texts its vectors embed.

A chat turn rarely stands alone: an answer ("Yes, yesterday!") means something only
after its question. Two rules decide a memory's readings at write time:

- **Contextual embedding.** A short entry is also embedded together with the tail of
  the entry before it in the same session (in the same batch of writes), so "Yes,
  yesterday!" carries what it answers; its own reading is kept beside it. The stored
  content is unchanged.
- **Passages.** A text longer than the embedding window is embedded as overlapping
  passages, each its own vector; vector search scores the memory by its best reading.

How search uses the readings (the chance lift of many passages, neighbours, names) is
retrieval's: :mod:`aether.memory.retrieval.fusion` and
:mod:`aether.memory.retrieval.neighbours`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from aether.memory.storage.records import MemoryRecord

CONTEXT_CHARS = 400
"""How much of the previous turn (its end) a short turn's contextual reading carries."""
SHORT_TURN_CHARS = 300
"""A turn this short (about three sentences) may lean on the one before it."""
WINDOW_CHARS = 1000
"""About what the embedding model reads of a text (all-MiniLM-L6-v2: 256 word pieces,
~4 characters each in prose): a longer text is read as passages of this size."""
READING_DISCOUNT = 0.03
"""What a memory's other readings (later passages, the contextual reading) give up
against its own opening: each extra vector is one more chance for an unrelated memory to
look similar by accident, so an extra reading must beat the opening by a margin to speak
for the memory."""
PASSAGE_OVERLAP = 200
"""Characters each passage of a long text shares with the one before it."""
MAX_PASSAGES = 6
"""At most this many vectors per memory (the rest of a longer text is found by full text)."""


def window_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where each window of a text starts and ends (see :func:`windows`)."""
    if len(text) <= WINDOW_CHARS:
        yield 0, len(text)
        return
    start = 0
    while start < len(text):
        end = min(len(text), start + WINDOW_CHARS)
        if end < len(text):
            space = text.rfind(" ", start + WINDOW_CHARS // 2, end)
            end = space if space > start else end
        yield start, end
        if end >= len(text):
            return
        start = max(end - PASSAGE_OVERLAP, start + 1)


def windows(text: str) -> Iterator[str]:
    """Every window of a text, overlapping, each fitting the embedding window.

    A text within :data:`WINDOW_CHARS` is one window. A longer one is cut every
    ``WINDOW_CHARS - PASSAGE_OVERLAP`` characters, at the last whitespace before the
    cut when there is one, so a statement near a cut is whole in one of two windows.
    Unlike :func:`passages`, the windows run to the text's end, however long it is.
    """
    for start, end in window_spans(text):
        yield text[start:end]


def passages(text: str) -> list[str]:
    """The overlapping passages a text's vectors read: its first :func:`windows`.

    At most :data:`MAX_PASSAGES`; the rest of a longer text is found by full text.
    """
    return list(itertools.islice(windows(text), MAX_PASSAGES))


def embedding_texts(docs: Sequence[MemoryRecord]) -> list[list[str]]:
    """What to embed for each document: its own text first, then its other readings.

    A long text is read as its passages (:func:`passages`). A short chat turn (at most
    :data:`SHORT_TURN_CHARS`) is read alone and also after the end of the turn before it
    in its session, so "Yes, yesterday!" carries what it answers while the turn's own
    reading stays as it is. Vector search scores a memory by its best reading, the
    others discounted (:data:`READING_DISCOUNT`).
    """
    texts = []
    previous: dict[str, str] = {}
    for doc in docs:
        content = doc["content"]
        session = str(doc.get("session") or "") if doc.get("kind") == "daily" else ""
        before = previous.get(session, "") if session else ""
        readings = passages(content)
        if before and len(content) <= SHORT_TURN_CHARS:
            readings.append(f"{before[-CONTEXT_CHARS:]}\n{content}")
        texts.append(readings)
        if session:
            previous[session] = content
    return texts

"""Conversation-aware retrieval: a turn is read with its neighbours.

A chat turn rarely stands alone: an answer ("Yes, yesterday!") means something only
after its question, and a question's evidence is often the reply that follows it.
Two general rules use that, for daily entries that belong to a session:

- **Contextual embedding.** A short entry is also embedded together with the tail of
  the entry before it in the same session (in the same batch of writes), so "Yes,
  yesterday!" carries what it answers; its own reading is kept beside it. The stored
  content is unchanged.
- **Passages.** A text longer than the embedding window is embedded as overlapping
  passages, each its own vector; vector search scores the memory by its best reading.
- **Timeline smoothing.** In search, an entry passes a share of its relevance to the
  entries next to it in its day's log (same session): ``NEIGHBOUR_SHARE`` at distance
  one, half that at distance two. A hit's answer or question climbs with it. Only a
  neighbour that fits the embedding window (:data:`WINDOW_CHARS`) receives a share: a
  longer message says what it says on its own (it is read as passages and found by its
  own words), and lifting it for standing next to a hit pushed evidence out of the
  results on long technical chats (BEAM dev recall@10 +0.05 without it, LoCoMo
  unchanged: its turns are all short).

And one about names: a memory tagged with a name the query mentions (the speaker's tag
of a chat turn) is lifted by ``TAG_BOOST``, so "what did Caroline..." prefers what
Caroline said. On the LoCoMo dev split these took recall@10 from 0.676 to the figure in
the README (bench/locomo.py; no LLM involved).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from datetime import date
from typing import TYPE_CHECKING

from aether.memory.storage.records import MemoryDoc, MemoryRecord
from aether.store.functions import Functions

if TYPE_CHECKING:  # the layer embeds through embedding_texts
    from aether.memory.storage.layer import MemoryLayer

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
NEIGHBOUR_SHARE = (0.4, 0.2)
"""The share of a hit's relevance its neighbours at distance 1 and 2 receive."""
TAG_BOOST = 0.2
"""Added to a memory tagged with a word of the query, as a share of the best candidate's
relevance: a lift on the scale of this query's scores, whatever the fusion's scale."""


SIMILARITY_SPREAD = 0.11
"""How far one query's cosine similarities spread across a collection (their standard
deviation) with all-MiniLM-L6-v2: 0.113 over LoCoMo's turns and 0.118 over BEAM's long
messages, so a property of the model rather than of either collection."""
_EXPECTED_MAX = (0.0, 0.0, 0.5642, 0.8463, 1.0294, 1.1630, 1.2672)
"""The expected maximum of n independent standard normal draws, n = 0..6."""

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


def chance_lift(text: str) -> float:
    """How much a text's best passage beats its typical one by chance alone.

    A memory read as n passages is scored by the best of n similarities, and the best of
    n draws exceeds a single draw by about the spread times the expected maximum of n
    standard normal draws. Left in, that lift ranks any long text above a short one that
    says the same thing; search takes it off before fusing (the floor still sees the raw
    similarity). It depends only on the text's length and the model's spread.
    """
    n = len(passages(text))
    return SIMILARITY_SPREAD * _EXPECTED_MAX[min(n, len(_EXPECTED_MAX) - 1)]


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


async def in_context(
    layer: MemoryLayer,
    scores: dict[str, float],
    tokens: Sequence[str],
    docs: dict[str, MemoryDoc | None],
) -> dict[str, float]:
    """``scores`` with tag boosts and each turn's relevance shared with its neighbours.

    Args:
        layer: the memory layer.
        scores: fused relevance by document key (the candidates that passed the gate).
        tokens: the query's meaningful words (lower case).
        docs: the documents of ``scores``' keys (``None``: missing); the neighbours read
            here are added to it, so a caller reads each document once.

    Returns:
        New scores; neighbours that were not candidates may appear.
    """
    if not scores:
        return scores
    words = set(tokens)
    boosted = dict(scores)
    lift = TAG_BOOST * max(scores.values())
    turns: list[tuple[str, str, str, str]] = []  # key, id, day, session
    for key in scores:
        meta = docs[key]
        if meta is None:
            continue
        if words & {str(t).lower() for t in meta.get("tags", [])}:
            boosted[key] += lift
        if meta.get("kind") == "daily" and meta.get("session") and meta.get("day"):
            turns.append((key, str(meta["id"]), str(meta["day"]), str(meta["session"])))
    if not turns:
        return boosted
    names = layer.keys
    slots: dict[str, int] = {}  # day -> its log's 1-based place among the lists read
    lists: list[str] = []
    pairs: list[str] = []
    for _, entry_id, day, _ in turns:
        if day not in slots:
            lists.append(names.daily(date.fromisoformat(day)))
            slots[day] = len(lists)
        pairs += [str(slots[day]), entry_id]
    reach = len(NEIGHBOUR_SHARE)
    windows = await Functions(layer.client, layer.keys).neighbours(lists, reach, pairs)
    entry_keys: dict[bytes | str, str] = {}
    shares: dict[tuple[str, str], float] = {}  # (neighbour, the session it must be in)
    for (key, _, _, session), located in zip(turns, windows, strict=True):
        if not located:
            continue
        first, pos, window = int(located[0]), int(located[1]), located[2]
        for offset, raw in enumerate(window):
            distance = abs(first + offset - pos)
            if distance == 0:
                continue
            neighbour = entry_keys.get(raw)
            if neighbour is None:
                entry_id = raw.decode() if isinstance(raw, bytes) else str(raw)
                neighbour = entry_keys[raw] = names.daily_entry(entry_id)
            share = NEIGHBOUR_SHARE[distance - 1] * boosted[key]
            shares[neighbour, session] = shares.get((neighbour, session), 0.0) + share
    if not shares:
        return boosted
    unread = list(dict.fromkeys(n for n, _ in shares if n not in docs))
    docs.update(zip(unread, await layer.get_docs(unread), strict=True))
    out = dict(boosted)
    for (neighbour, session), share in shares.items():
        meta = docs[neighbour]
        if meta is None or meta.get("session") != session:
            continue
        if len(str(meta.get("content", ""))) <= WINDOW_CHARS:  # a long message stands alone
            out[neighbour] = out.get(neighbour, 0.0) + share
    return out

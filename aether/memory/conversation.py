"""Conversation-aware retrieval: a turn is read with its neighbours.

A chat turn rarely stands alone: an answer ("Yes, yesterday!") means something only
after its question, and a question's evidence is often the reply that follows it.
Two general rules use that, for daily entries that belong to a session:

- **Contextual embedding.** An entry is embedded together with the tail of the entry
  before it in the same session (in the same batch of writes), so "Yes, yesterday!"
  carries what it answers. The stored content is unchanged.
- **Timeline smoothing.** In search, an entry passes a share of its relevance to the
  entries next to it in its day's log (same session): ``NEIGHBOUR_SHARE`` at distance
  one, half that at distance two. A hit's answer or question climbs with it.

And one about names: a memory tagged with a name the query mentions (the speaker's tag
of a chat turn) is lifted by ``TAG_BOOST``, so "what did Caroline..." prefers what
Caroline said. On the LoCoMo dev split these took recall@10 from 0.676 to the figure in
the README (bench/locomo.py; no LLM involved).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING

from aether.memory.records import MemoryDoc, MemoryRecord

if TYPE_CHECKING:  # the layer embeds through embedding_texts
    from aether.memory.layer import MemoryLayer

CONTEXT_CHARS = 400
"""How much of the previous turn (its end) is embedded with a turn."""
NEIGHBOUR_SHARE = (0.4, 0.2)
"""The share of a hit's relevance its neighbours at distance 1 and 2 receive."""
TAG_BOOST = 0.2
"""Added to a memory tagged with a word of the query."""


def embedding_texts(docs: Sequence[MemoryRecord]) -> list[str]:
    """What to embed for each document: its content, after its predecessor's for a turn."""
    texts = []
    previous: dict[str, str] = {}
    for doc in docs:
        content = doc["content"]
        session = str(doc.get("session") or "") if doc.get("kind") == "daily" else ""
        before = previous.get(session, "") if session else ""
        texts.append(f"{before[-CONTEXT_CHARS:]}\n{content}" if before else content)
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
    turns: list[tuple[str, str, str, str]] = []  # key, id, day, session
    for key in scores:
        meta = docs[key]
        if meta is None:
            continue
        if words & {str(t).lower() for t in meta.get("tags", [])}:
            boosted[key] += TAG_BOOST
        if meta.get("kind") == "daily" and meta.get("session") and meta.get("day"):
            turns.append((key, str(meta["id"]), str(meta["day"]), str(meta["session"])))
    if not turns:
        return boosted
    names = layer.keys
    lists = list(dict.fromkeys(names.daily(date.fromisoformat(day)) for _, _, day, _ in turns))
    slot = {key: i for i, key in enumerate(lists, 1)}
    pairs: list[str] = []
    for _, entry_id, day, _ in turns:
        pairs += [str(slot[names.daily(date.fromisoformat(day))]), entry_id]
    reach = len(NEIGHBOUR_SHARE)
    windows = await layer.client.fcall_ro(
        "aether_neighbours", len(lists), *lists, str(reach), *pairs
    )
    shares: dict[tuple[str, str], float] = {}  # (neighbour, the session it must be in)
    for (key, _, _, session), located in zip(turns, windows, strict=True):
        if not located:
            continue
        first, pos, window = int(located[0]), int(located[1]), located[2]
        for offset, raw in enumerate(window):
            distance = abs(first + offset - pos)
            if distance == 0:
                continue
            neighbour = names.daily_entry(raw.decode() if isinstance(raw, bytes) else str(raw))
            share = NEIGHBOUR_SHARE[distance - 1] * boosted[key]
            shares[neighbour, session] = shares.get((neighbour, session), 0.0) + share
    if not shares:
        return boosted
    unread = list(dict.fromkeys(n for n, _ in shares if n not in docs))
    docs.update(zip(unread, await layer.get_docs(unread), strict=True))
    out = dict(boosted)
    for (neighbour, session), share in shares.items():
        meta = docs[neighbour]
        if meta is not None and meta.get("session") == session:
            out[neighbour] = out.get(neighbour, 0.0) + share
    return out

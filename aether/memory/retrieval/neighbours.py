"""A hit's neighbours and names: context lent to the candidates that passed the gate.

- **Timeline smoothing.** An entry passes a share of its relevance to the entries next
  to it in its day's log (same session): ``NEIGHBOUR_SHARE`` at distance one, half that
  at distance two. A hit's answer or question climbs with it. Only a neighbour that fits
  the embedding window (``WINDOW_CHARS``) receives a share: a longer message says what it
  says on its own (it is read as passages and found by its own words).
- **Names.** A memory tagged with a name the query mentions (the speaker's tag of a chat
  turn) is lifted by ``TAG_BOOST``, so "what did Caroline..." prefers what Caroline said.

The neighbours are located by one server-side function call and read through a
:class:`NeighbourSource` (the search's candidate reader): this module reads nothing itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any, Protocol

from aether.keys import Keyspace
from aether.memory.storage.readings import WINDOW_CHARS
from aether.memory.storage.records import MemoryDoc

__all__ = ["NEIGHBOUR_SHARE", "TAG_BOOST", "NeighbourSource", "in_context"]


class NeighbourSource(Protocol):
    """Where the neighbours of daily entries are read (:class:`CandidateReader` is one)."""

    async def neighbours(self, lists: list[str], reach: int, pairs: list[str]) -> Any:
        """For each (1-based list index, entry id) pair: ``[first, position, ids]`` or false."""
        ...

    async def documents(self, keys: list[str]) -> list[MemoryDoc | None]:
        """The documents of ``keys`` (``None``: missing)."""
        ...


NEIGHBOUR_SHARE = (0.4, 0.2)
"""The share of a hit's relevance its neighbours at distance 1 and 2 receive."""
TAG_BOOST = 0.2
"""Added to a memory tagged with a word of the query, as a share of the best candidate's
relevance: a lift on the scale of this query's scores, whatever the fusion's scale."""


async def in_context(
    source: NeighbourSource,
    names: Keyspace,
    scores: dict[str, float],
    tokens: Sequence[str],
    docs: dict[str, MemoryDoc | None],
) -> dict[str, float]:
    """``scores`` with tag boosts and each turn's relevance shared with its neighbours.

    Args:
        source: where the neighbours and their documents are read.
        names: the namespace's keys.
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
    slots: dict[str, int] = {}  # day -> its log's 1-based place among the lists read
    lists: list[str] = []
    pairs: list[str] = []
    for _, entry_id, day, _ in turns:
        if day not in slots:
            lists.append(names.daily(date.fromisoformat(day)))
            slots[day] = len(lists)
        pairs += [str(slots[day]), entry_id]
    reach = len(NEIGHBOUR_SHARE)
    windows = await source.neighbours(lists, reach, pairs)
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
    docs.update(zip(unread, await source.documents(unread), strict=True))
    out = dict(boosted)
    for (neighbour, session), share in shares.items():
        meta = docs[neighbour]
        if meta is None or meta.get("session") != session:
            continue
        if len(str(meta.get("content", ""))) <= WINDOW_CHARS:  # a long message stands alone
            out[neighbour] = out.get(neighbour, 0.0) + share
    return out

"""What an erasure is told, reports and records (:mod:`aether.checkpoints.erasure`)."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aether.store.redaction import MAX_NEEDLE, Needle
from aether.store.state import Mutation

__all__ = [
    "MAX_SUBJECT",
    "NAMED",
    "NAMES_NAMED",
    "ErasureHooks",
    "ErasurePlan",
    "ErasureReport",
    "Sighting",
    "describe_counts",
    "excerpt",
    "holding_string",
    "salted_hash",
]

MAX_SUBJECT = MAX_NEEDLE
NAMED = "named by it"
"""A sighting's detail for a key named by the text (a session, scratchpad, thread)."""
NAMES_NAMED = "a key named by it"
"""The end of a sighting's detail for a journal entry or digest that names such a key."""


@dataclass
class ErasureHooks:
    """What the layers above the store add to an erasure.

    Attributes:
        on_delete: adds ops to the batch that deletes memory documents (their counters).
        after_state: told the keys of the erased items once they are gone (the Qdrant
            mirror drops their points); returns how many it removed.
        find_elsewhere: where else the text is found (the Qdrant mirror), for ``verify``.
    """

    on_delete: Callable[[Mutation, list[dict[str, Any]]], None] | None = None
    after_state: Callable[[list[str], Needle | None], Awaitable[int]] | None = None
    find_elsewhere: Callable[[Needle], Awaitable[list[Sighting]]] | None = None


@dataclass(frozen=True)
class Sighting:
    """Where a text was found: a store, a place in it, and what holds it."""

    store: str
    place: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        """As JSON."""
        return {"store": self.store, "place": self.place, "detail": self.detail}


@dataclass
class ErasurePlan:
    """What an erasure removes (``--dry-run``): items by tier, and counts elsewhere.

    ``elsewhere`` lists the places outside the state that it rewrites too: the journal,
    streams (inbox, outbox, ledger), caches, Redis's files, the archive, the mirror.
    """

    items: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    history_only: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    elsewhere: list[Sighting] = field(default_factory=list)

    def total(self) -> int:
        """How many state items and history-only keys go."""
        return sum(len(v) for v in self.items.values()) + len(self.history_only)

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {
            "items": self.items,
            "history_only": self.history_only,
            "counts": self.counts,
            "elsewhere": [s.to_dict() for s in self.elsewhere],
            "total": self.total(),
        }


@dataclass
class ErasureReport:
    """What an erasure did: counts per store, seconds per phase, the files' state."""

    id: str
    at: int
    actor: str
    text_hash: str
    salt: str
    checkpoint: str
    counts: dict[str, int]
    seconds: float = 0.0
    files: str = "pending"
    resumed: bool = False
    phase_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As JSON (the record kept in ``ns:erasures``)."""
        return {
            "id": self.id,
            "at": self.at,
            "actor": self.actor,
            "text_hash": self.text_hash,
            "salt": self.salt,
            "checkpoint": self.checkpoint,
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
            "files": self.files,
            "resumed": self.resumed,
            "phase_s": {k: round(v, 3) for k, v in self.phase_s.items()},
        }


COUNTED: tuple[tuple[str, str, str, str], ...] = (
    ("state_removed", "item", "items", "removed"),
    ("state_redacted", "collection", "collections", "redacted"),
    ("journal_entries", "journal entry", "journal entries", "redacted"),
    ("stream_entries", "stream entry", "stream entries", "redacted"),
    ("checkpoint_labels", "checkpoint label", "checkpoint labels", "redacted"),
    ("other_keys", "other key", "other keys", "rewritten"),
    ("mirror_points", "mirror point", "mirror points", "removed"),
)
"""What an erasure counts, as people read it: the one model of the dry run (its first two),
the run, ``erase log`` and the console. ``items`` in the counts (the memory documents
among the removed keys, for the hooks) is not shown: ``state_removed`` is what goes."""


def describe_counts(counts: dict[str, int]) -> str:
    """``5 items removed, 0 collections redacted, 5 journal entries redacted``.

    The state's two counts always; the others when an erasure touched them.
    """
    said = []
    for at, (name, one, many, done) in enumerate(COUNTED):
        n = int(counts.get(name, 0))
        if n or at < 2:
            said.append(f"{n:,} {one if n == 1 else many} {done}")
    return ", ".join(said)


def salted_hash(subject: str, salt: str) -> str:
    """The hash an erasure record keeps of its text (case-folded), never the text."""
    return hashlib.sha256((salt + subject.strip().casefold()).encode()).hexdigest()


def holding_string(value: Any, needle: Needle | None) -> str | None:
    """The first string in a JSON value that holds the needle (the first string without one)."""
    if isinstance(value, str):
        return value if needle is None or needle.in_text(value) else None
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    )
    for child in children:
        found = holding_string(child, needle)
        if found is not None:
            return found
    return None


def excerpt(value: Any, needle: Needle | None, width: int = 60) -> str:
    """Up to ``width`` characters of a value around where the needle is found."""
    raw = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if needle is None:
        return raw[:width]
    found = needle.span(raw)
    at = found[0] if found is not None and len(raw) == len(raw.casefold()) else -1
    start = max(0, at - width // 2) if at >= 0 else 0
    return ("…" if start else "") + raw[start : start + width]

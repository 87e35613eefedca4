"""Value objects of the checkpoint machinery."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from aether.checkpoints.diff import KeyChange


@dataclass(frozen=True)
class Checkpoint:
    """A named position in the journal.

    Attributes:
        id: ULID, sorts by creation time.
        created_at: milliseconds since the epoch.
        label: what a person calls it.
        reason: why it was taken (``manual``, ``rollback``, ``context-85``...).
        actor: who took it.
        journal_pos: id of the last journal entry it includes (``0-0``: none).
        chain: the journal chain's head hash at ``journal_pos`` (``""``: taken before the
            journal was chained).
    """

    id: str
    created_at: int
    label: str
    reason: str
    actor: str
    journal_pos: str
    chain: str = ""

    @classmethod
    def from_hash(cls, raw: dict[bytes, bytes]) -> Checkpoint:
        """Build from the ``ns:checkpoint:<id>`` hash."""
        d = {k.decode(): v.decode() for k, v in raw.items()}
        return cls(
            id=d["id"],
            created_at=int(d["created_at"]),
            label=d.get("label", ""),
            reason=d.get("reason", ""),
            actor=d.get("actor", ""),
            journal_pos=d["journal_pos"],
            chain=d.get("chain", ""),
        )

    @property
    def created(self) -> datetime:
        """Creation time, UTC."""
        return datetime.fromtimestamp(self.created_at / 1000, tz=UTC)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``: ``created_at`` in epoch seconds, as every time."""
        return {**asdict(self), "created_at": self.created_at / 1000}


@dataclass(frozen=True)
class RollbackResult:
    """What a rollback did."""

    target: Checkpoint
    pre_checkpoint: Checkpoint
    journal_entry: str | None
    entries_undone: int
    ops_applied: int

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "target": self.target.id,
            "pre_checkpoint": self.pre_checkpoint.id,
            "journal_entry": self.journal_entry,
            "entries_undone": self.entries_undone,
            "ops_applied": self.ops_applied,
        }


@dataclass
class TierChanges:
    """Keys of one tier changed since a checkpoint."""

    created: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    entries: int = 0


@dataclass
class Diff:
    """What changed since a checkpoint, grouped by memory tier."""

    checkpoint: Checkpoint
    entries: int
    tiers: dict[str, TierChanges]
    changes: list[KeyChange] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "checkpoint": self.checkpoint.id,
            "entries": self.entries,
            "tiers": {name: asdict(t) for name, t in sorted(self.tiers.items())},
            "changes": [c.to_dict() for c in self.changes],
        }


@dataclass
class UndoSince:
    """What the journal holds after a checkpoint (``Checkpoints.undo_since``).

    Attributes:
        entries: journal entries after it.
        undo: each key changed since, and the inverse ops that take it back, newest
            change first (the order a rollback applies them).
        tier_entries: entries per memory tier.
    """

    entries: int = 0
    undo: dict[str, list[list[bytes]]] = field(default_factory=dict)
    tier_entries: dict[str, int] = field(default_factory=dict)

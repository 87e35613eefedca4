"""The one vocabulary of a memory's status, shared by records, search, context and faces.

Every memory document (daily entry, long-term note, belief) carries a ``status``: absent or
``active`` while it holds; ``superseded`` once a newer one replaced it (a belief by the
belief that contradicted it, a note or entry by the belief that changed what it said);
``forgotten`` when told to; ``pruned`` when its confidence decayed away. None of the
inactive ones is recalled by default: they stay for history and rollback.

``invalidated`` is what a replaced belief was called before this vocabulary was one; it
is still read (as :attr:`Status.SUPERSEDED`) and never written, until the release
:data:`LEGACY_UNTIL`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = [
    "BELIEF_STATUSES",
    "INACTIVE",
    "BeliefStatus",
    "Status",
    "belief_status",
    "is_active",
    "matches",
]


class Status(StrEnum):
    """A memory's status."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"
    PRUNED = "pruned"


LEGACY_SUPERSEDED = "invalidated"
LEGACY_UNTIL = "0.3.0"
"""The release that stops reading :data:`LEGACY_SUPERSEDED`."""
INACTIVE: frozenset[str] = frozenset(
    {Status.SUPERSEDED, Status.FORGOTTEN, Status.PRUNED, LEGACY_SUPERSEDED}
)
"""Statuses of memories that no longer hold: kept for history, never recalled by default."""

BeliefStatus = Literal["active", "superseded", "forgotten", "pruned"]
BELIEF_STATUSES: tuple[str, ...] = tuple(s.value for s in Status)


def belief_status(stored: object) -> str:
    """The status a stored value means (the legacy ``invalidated`` reads as superseded)."""
    value = str(stored or Status.ACTIVE)
    return Status.SUPERSEDED.value if value == LEGACY_SUPERSEDED else value


def is_active(stored: object) -> bool:
    """Whether a stored status (absent included) means the memory still holds."""
    return belief_status(stored) == Status.ACTIVE


def matches(stored: object, wanted: str) -> bool:
    """Whether a stored status is ``wanted`` (a legacy ``invalidated`` is superseded)."""
    return belief_status(stored) == wanted

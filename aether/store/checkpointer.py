"""What a destructive action needs before it runs: a checkpoint it can be undone to.

Memory, identity and context take a ``Checkpointer`` (the checkpoints manager is one)
instead of importing the checkpoints layer: "checkpoint before destroying" is passed in.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Checkpointer", "SavePoint"]


class SavePoint(Protocol):
    """A checkpoint that was taken."""

    @property
    def id(self) -> str:
        """The checkpoint's id (what ``rollback`` takes)."""
        ...


class Checkpointer(Protocol):
    """Takes checkpoints (``aether.checkpoints.manager.Checkpoints``)."""

    async def create(
        self, label: str = "", reason: str = "manual", actor: str = "cli", *, prune: bool = True
    ) -> SavePoint:
        """Record the current state; returns once it is durable."""
        ...

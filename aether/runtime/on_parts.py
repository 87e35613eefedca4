"""What the runtime and the daemon read off the namespace's ``Parts``, never copied."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from aether.checkpoints.manager import Checkpoints
    from aether.config import Settings
    from aether.context.assembly import ContextAssembler
    from aether.identity.profile import IdentityStore
    from aether.keys import Keyspace
    from aether.memory.retrieval.search import MemorySearch
    from aether.memory.storage.layer import MemoryLayer
    from aether.operations import Parts

__all__ = ["OnParts"]


class OnParts:
    """The parts of one namespace, as attributes of whoever works on them.

    Each is the ``Parts``' own (built once there), so a part replaced on ``parts`` is
    the one every reader sees.
    """

    parts: Parts

    @property
    def settings(self) -> Settings:
        """The configuration."""
        return self.parts.settings

    @property
    def client(self) -> Redis:
        """The Redis client."""
        return self.parts.client

    @property
    def keys(self) -> Keyspace:
        """The namespace's keys."""
        return self.parts.keys

    @property
    def memory(self) -> MemoryLayer:
        """The memory layer."""
        return self.parts.memory

    @property
    def checkpoints(self) -> Checkpoints:
        """Checkpoints, rollback and undo."""
        return self.parts.checkpoints

    @property
    def identity(self) -> IdentityStore:
        """The identity store."""
        return self.parts.identity

    @property
    def search(self) -> MemorySearch:
        """The namespace's search."""
        return self.parts.search

    @property
    def assembler(self) -> ContextAssembler:
        """The context assembler."""
        return self.parts.assembler

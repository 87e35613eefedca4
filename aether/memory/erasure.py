"""What the memory layer adds to an erasure (:mod:`aether.checkpoints.erasure`).

The store-level erasure removes keys and redacts history; the memory layer knows what
else a memory document leaves behind: the counters of the memory index (kinds and tags),
the Qdrant mirror's points, which hold the document's vector and a few payload fields, and
the scoped vector indexes, whose definitions (kept in Redis's files) name their tag.
"""

from __future__ import annotations

from typing import Any, cast

from aether.checkpoints.erasure_model import ErasureHooks, Sighting
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import MemoryRecord
from aether.memory.storage.scoped_indexes import ScopedIndexes
from aether.memory.tiers.memory_index import count_ops
from aether.store.redaction import Needle
from aether.store.state import Mutation

__all__ = ["erasure_hooks"]


def erasure_hooks(memory: MemoryLayer) -> ErasureHooks:
    """The hooks that keep the counters, the Qdrant mirror and the scoped indexes right."""
    keys = memory.keys

    def on_delete(m: Mutation, docs: list[dict[str, Any]]) -> None:
        count_ops(m, keys, [cast(MemoryRecord, d) for d in docs], sign=-1)

    async def after_state(erased: list[str], needle: Needle | None) -> int:
        if needle is not None:  # before the files are rewritten
            await ScopedIndexes(memory.client, keys).drop_naming(needle)
        mirror = memory.mirror
        if mirror is None:
            return 0
        doomed = [key.rsplit(":", 1)[-1] for key in erased]
        holding = await mirror.holding(needle) if needle is not None else []
        await mirror.delete(list(dict.fromkeys(doomed + holding)))
        return len(doomed) + len(holding)

    async def find_elsewhere(needle: Needle) -> list[Sighting]:
        scoped = await ScopedIndexes(memory.client, keys).naming(needle)
        found = [Sighting("redis", name, "a scoped index's tag") for name in scoped]
        mirror = memory.mirror
        if mirror is None:
            return found
        holding = await mirror.holding(needle)
        return found + [Sighting("qdrant", mirror.collection, doc) for doc in holding]

    return ErasureHooks(on_delete=on_delete, after_state=after_state, find_elsewhere=find_elsewhere)

"""What the memory layer adds to an erasure (:mod:`aether.checkpoints.erasure`).

The store-level erasure removes keys and redacts history; the memory layer knows what
else a memory document leaves behind: the counters of the memory index (kinds and tags)
and the Qdrant mirror's points, which hold the document's vector and a few payload fields.
"""

from __future__ import annotations

from typing import Any, cast

from aether.checkpoints.erasure_model import ErasureHooks, Sighting
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import MemoryRecord
from aether.memory.tiers.memory_index import count_ops
from aether.store.redaction import Needle
from aether.store.state import Mutation

__all__ = ["erasure_hooks"]


def erasure_hooks(memory: MemoryLayer) -> ErasureHooks:
    """The hooks that keep the memory index's counters and the Qdrant mirror right."""
    keys = memory.keys

    def on_delete(m: Mutation, docs: list[dict[str, Any]]) -> None:
        count_ops(m, keys, [cast(MemoryRecord, d) for d in docs], sign=-1)

    async def after_state(erased: list[str], needle: Needle | None) -> int:
        mirror = memory.mirror
        if mirror is None:
            return 0
        doomed = [key.rsplit(":", 1)[-1] for key in erased]
        holding = await mirror.holding(needle) if needle is not None else []
        await mirror.delete(list(dict.fromkeys(doomed + holding)))
        return len(doomed) + len(holding)

    async def find_elsewhere(needle: Needle) -> list[Sighting]:
        mirror = memory.mirror
        if mirror is None:
            return []
        return [Sighting("qdrant", mirror.collection, doc) for doc in await mirror.holding(needle)]

    return ErasureHooks(on_delete=on_delete, after_state=after_state, find_elsewhere=find_elsewhere)

"""The process heap of a long-running agent: keep the garbage collector's pauses short."""

from __future__ import annotations

import gc

__all__ = ["settle_heap"]


def settle_heap() -> int:
    """Exempt every object alive now from the cyclic garbage collector's full passes.

    Call it once a process holds what it keeps for its life (modules, the model, the
    wired runtime): the daemon does when it is up. CPython's full collection walks every
    tracked object, and an agent's process holds over a hundred thousand from its imports
    alone (half a million with the local model); each full pass then paused the process
    for 70-100 ms on a two-core machine, several times a minute under load, and those
    pauses were the slowest context assemblies (``bench/context.py``: about 1 % of them).
    ``gc.freeze`` moves them to a generation the collector skips. They are still freed
    by reference counting when dropped; only a reference cycle among them is never
    collected, which for objects meant to live as long as the process costs nothing.

    Returns:
        How many objects the collector now skips.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()

"""The daemon's heap: what it holds for life is exempt from full garbage collections."""

from __future__ import annotations

import gc
import weakref

from aether.runtime.heap import settle_heap


class _Held:
    """A tracked object a process keeps."""

    def __init__(self) -> None:
        self.parts: list[object] = []


def test_settled_objects_are_skipped_by_the_collector_and_still_freed_when_dropped() -> None:
    kept, dropped = _Held(), _Held()
    gone = weakref.ref(dropped)
    cycle = _Held()
    cycle.parts.append(cycle)  # a reference cycle formed before settling
    cycle_ref = weakref.ref(cycle)
    try:
        frozen = settle_heap()
        # a thread of an earlier test may free a settled object meanwhile: never more
        assert 0 < gc.get_freeze_count() <= frozen
        tracked = gc.get_objects()
        assert not any(o is kept for o in tracked)  # full passes no longer walk it
        born_after = _Held()
        assert any(o is born_after for o in gc.get_objects())  # new objects still are
        del dropped
        assert gone() is None  # reference counting frees a settled object as before
        del cycle
        gc.collect()
        assert cycle_ref() is not None  # the documented cost: a settled cycle stays
    finally:
        gc.unfreeze()
    gc.collect()
    assert cycle_ref() is None  # unfrozen, the collector finds it again

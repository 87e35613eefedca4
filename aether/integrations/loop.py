"""Sync calls into an async adapter: run its coroutine on the event loop it was made on.

LangGraph calls a checkpointer's and a store's sync methods from ``graph.invoke``. The
adapters' work is async (redis-py asyncio, on the loop ``Aether.open`` runs on), so a
sync call from another thread runs it there and waits; from the loop's own thread it
would wait for itself, and is refused with what to do instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from aether.errors import InvalidOperationError

__all__ = ["LoopBound"]

T = TypeVar("T")


class LoopBound:
    """Remembers the running loop at construction; runs coroutines on it from threads.

    Args:
        what: the adapter's name, for the errors.

    Raises:
        InvalidOperationError: made outside a running event loop.
    """

    def __init__(self, what: str) -> None:
        self._what = what
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError as e:
            raise InvalidOperationError(f"make {what} inside `async with Aether.open(...)`") from e

    def run(self, call: Coroutine[Any, Any, T]) -> T:
        """Run ``call`` on the loop and wait for it (from any thread but the loop's)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            call.close()
            raise InvalidOperationError(
                f"{self._what}'s sync methods block; from the event loop use the async ones "
                "(ainvoke, astream, aget...) or run the sync call in a thread (asyncio.to_thread)"
            )
        return asyncio.run_coroutine_threadsafe(call, self._loop).result()

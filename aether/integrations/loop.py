"""Calls into an async adapter from anywhere: run its coroutine on the loop it was made on.

The adapters' work is async over redis-py asyncio, whose connections belong to the loop
``Aether.open`` runs on. LangGraph calls a checkpointer's and a store's sync methods
from ``graph.invoke``: a sync call from another thread runs there and waits (from the
loop's own thread it would wait for itself, and is refused with what to do instead). An
async call from another loop (another thread's ``asyncio.run``, a framework's worker
loop) is likewise run on the home loop and awaited (:meth:`LoopBound.call`).
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

    async def call(self, call: Coroutine[Any, Any, T]) -> T:
        """Await ``call``: on this loop directly, from any other loop through the home one.

        Raises:
            InvalidOperationError: the home loop is closed or no longer running (the
                ``async with Aether.open(...)`` block it belongs to has ended).
        """
        if asyncio.get_running_loop() is self._loop:
            return await call
        if self._loop.is_closed() or not self._loop.is_running():
            call.close()
            raise InvalidOperationError(
                f"{self._what} belongs to an event loop that is no longer running: use it "
                "inside its `async with Aether.open(...)` block (or while that loop runs)"
            )
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, self._loop))

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

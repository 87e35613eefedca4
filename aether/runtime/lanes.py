"""Session lanes: each session's messages answered in order, sessions side by side.

The daemon once answered its inbox one message at a time, so a turn waiting up to ten
minutes for the operator's approval held up every other session. A lane is a queue and a
worker per session: a session's messages keep their order, a parked turn waits in its own
lane only, and a lane with nothing to do for a while goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from aether.runtime.inbox import InboxMessage

__all__ = ["SessionLanes"]

IDLE_S = 60.0


class SessionLanes:
    """A worker per session, made on its first message.

    Args:
        work: answers one message (raises only for what the daemon's supervisor handles,
            such as Redis going away: :meth:`raise_failure` passes that on).
        stop: once set, a lane finishes the message in hand and takes no other.
        idle_s: a lane with no message for this long ends.
    """

    def __init__(
        self,
        work: Callable[[InboxMessage], Awaitable[None]],
        stop: asyncio.Event,
        idle_s: float = IDLE_S,
    ) -> None:
        self._work = work
        self._stop = stop
        self._idle_s = idle_s
        self._queues: dict[str, asyncio.Queue[InboxMessage | None]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._in_hand: set[str] = set()
        self._failure: BaseException | None = None

    def put(self, session: str, message: InboxMessage) -> bool:
        """Queue ``message`` in its session's lane; False when a lane has it already."""
        if message.id in self._in_hand:
            return False  # a pending message read again while its lane works on it
        self._in_hand.add(message.id)
        queue = self._queues.get(session)
        if queue is None:
            queue = self._queues[session] = asyncio.Queue()
            self._tasks[session] = asyncio.create_task(
                self._run(session, queue), name=f"lane:{session}"
            )
        queue.put_nowait(message)
        return True

    def raise_failure(self) -> None:
        """Raise what ended a lane (the supervisor then recovers and starts again)."""
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    async def _run(self, session: str, queue: asyncio.Queue[InboxMessage | None]) -> None:
        try:
            while not self._stop.is_set():
                try:
                    message = await asyncio.wait_for(queue.get(), timeout=self._idle_s)
                except TimeoutError:
                    if queue.empty():
                        return
                    continue
                if message is None or self._stop.is_set():
                    return
                try:
                    await self._work(message)
                finally:
                    self._in_hand.discard(message.id)
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # noqa: BLE001 - handed to the inbox task, which re-raises
            self._failure = e
        finally:
            if self._tasks.get(session) is asyncio.current_task():
                del self._tasks[session]
                del self._queues[session]
            while not queue.empty():  # left pending in the inbox: read again later
                left = queue.get_nowait()
                if left is not None:
                    self._in_hand.discard(left.id)

    async def drain(self) -> None:
        """Wait for the messages in hand (the stop is set: no lane takes another)."""
        for queue in self._queues.values():
            queue.put_nowait(None)
        tasks = list(self._tasks.values())
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        """Cancel every lane (their messages stay pending in the inbox)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

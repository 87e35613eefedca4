"""Session lanes (issue 53): a session's messages in order, sessions side by side."""

from __future__ import annotations

import asyncio

import pytest

from aether.runtime.inbox import InboxMessage
from aether.runtime.lanes import SessionLanes


def _message(n: int, session: str) -> InboxMessage:
    return InboxMessage(f"{n}-0", {"content": f"m{n}", "session": session})


async def test_a_parked_session_holds_up_only_itself_and_order_is_kept() -> None:
    stop = asyncio.Event()
    release = asyncio.Event()
    done: list[str] = []

    async def work(message: InboxMessage) -> None:
        if message.content == "m1":  # parked on an approval
            await release.wait()
        done.append(message.content)

    lanes = SessionLanes(work, stop)
    for n, session in [(1, "tools"), (2, "tools"), (3, "other"), (4, "other")]:
        assert lanes.put(session, _message(n, session))
    assert not lanes.put("tools", _message(1, "tools"))  # read again while in hand
    for _ in range(50):
        if done == ["m3", "m4"]:
            break
        await asyncio.sleep(0.01)
    assert done == ["m3", "m4"]  # the other session went on; m2 waits behind m1
    release.set()
    for _ in range(50):
        if len(done) == 4:
            break
        await asyncio.sleep(0.01)
    assert done == ["m3", "m4", "m1", "m2"]
    stop.set()
    await lanes.drain()
    await lanes.close()


async def test_a_failing_lane_is_raised_in_the_reader_and_its_messages_read_again() -> None:
    stop = asyncio.Event()

    async def work(message: InboxMessage) -> None:
        raise ConnectionError("redis went away")

    lanes = SessionLanes(work, stop)
    lanes.put("a", _message(1, "a"))
    await asyncio.sleep(0.05)
    with pytest.raises(ConnectionError, match="went away"):
        lanes.raise_failure()
    assert lanes.put("a", _message(1, "a"))  # pending again: a lane may take it anew
    await lanes.close()


async def test_on_stop_a_lane_finishes_the_message_in_hand_and_takes_no_other() -> None:
    stop = asyncio.Event()
    started = asyncio.Event()
    done: list[str] = []

    async def work(message: InboxMessage) -> None:
        started.set()
        await asyncio.sleep(0.05)
        done.append(message.content)

    lanes = SessionLanes(work, stop)
    lanes.put("a", _message(1, "a"))
    lanes.put("a", _message(2, "a"))
    await started.wait()
    stop.set()
    await lanes.drain()
    assert done == ["m1"]  # m2 stays pending in the inbox, for the next start
    await lanes.close()

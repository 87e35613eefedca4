"""Reading a namespace page by page while Redis works on the next page.

An erasure's scan of a million memories asks Redis for two million keys' names (``SCAN``)
and a million documents (``JSON.MGET``): seconds of the server's work, and as many of
Python's on what comes back. Asked one after the other, the two add up. Here the next
request is sent before a page is handed over, so the server answers it while the caller
reads the page (Redis runs in its own process, on another core).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from redis.asyncio import Redis

from aether.codec import text

__all__ = ["SCAN_COUNT", "key_pages", "read_ahead"]

SCAN_COUNT = 1000
"""Keys one ``SCAN`` call walks (its ``COUNT``)."""
TURNS_TO_SEND = 3
"""Turns of the event loop a request started in a task is given to reach the socket.

redis-py checks a pooled connection before it writes to it (one suspension), then
waits for the reply (another): measured, the request is out after two turns, not one;
the third is to spare.
"""

P = TypeVar("P")
R = TypeVar("R")


async def key_pages(client: Redis, match: str, size: int) -> AsyncIterator[list[str]]:
    """Every key matching ``match``, in pages of ``size`` (the last may be smaller).

    The next ``SCAN`` is sent before a page is handed over. ``SCAN``'s guarantees hold: a
    key there from the start to the end is given at least once.
    """
    ahead = _sent(client.scan(0, match=match, count=SCAN_COUNT))
    page: list[str] = []
    try:
        while True:
            cursor, names = await ahead
            if int(cursor) != 0:
                ahead = _sent(client.scan(cursor, match=match, count=SCAN_COUNT))
                await _let_it_send()
            page.extend(text(n) for n in names)
            while len(page) >= size:
                yield page[:size]
                page = page[size:]
            if int(cursor) == 0:
                break
        if page:
            yield page
    finally:
        ahead.cancel()  # the consumer stopped early: the reply is not waited for


async def read_ahead(
    pages: AsyncIterable[P], read: Callable[[P], Awaitable[R]]
) -> AsyncIterator[tuple[P, R]]:
    """Each page with what ``read`` gives for it, the next page's read under way meanwhile.

    ``read`` must not depend on what the caller does with the pages before: it runs for
    page ``i + 1`` while the caller holds page ``i``.
    """
    ahead: tuple[P, asyncio.Future[R]] | None = None
    try:
        async for page in pages:
            reading = _sent(read(page))
            await _let_it_send()  # its request goes out before the page before is read
            previous, ahead = ahead, (page, reading)
            if previous is not None:
                yield previous[0], await previous[1]
        if ahead is not None:
            last, ahead = ahead, None
            yield last[0], await last[1]
    finally:
        if ahead is not None:
            ahead[1].cancel()


async def _let_it_send() -> None:
    for _ in range(TURNS_TO_SEND):
        await asyncio.sleep(0)


def _sent(work: Awaitable[R]) -> asyncio.Future[R]:
    """``work`` started as a task whose failure, if never awaited, is not reported as lost."""
    task = asyncio.ensure_future(work)
    task.add_done_callback(_retrieved)
    return task


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()

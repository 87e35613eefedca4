"""Pages read while Redis works on the next one: the same keys, the same reads, no leaks."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import AsyncIterator

import pytest
import redis
from redis.asyncio import Redis

from aether.keys import Keyspace
from aether.store.read_ahead import key_pages, read_ahead


async def _fill(client: Redis, keys: Keyspace, n: int) -> set[str]:
    names = {keys.scratchpad(f"pad-{i}") for i in range(n)}
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.set(name, "x")
    await pipe.execute()
    return names


async def test_key_pages_give_every_key_once_in_pages_of_the_size(
    client: Redis, keys: Keyspace
) -> None:
    names = await _fill(client, keys, 2_345)
    await client.set("another:namespace:key", "y")  # not matched
    pages = [page async for page in key_pages(client, keys.every_key, 500)]
    assert [len(p) for p in pages[:-1]] == [500] * (len(pages) - 1)
    found = [name for page in pages for name in page]
    assert sorted(found) == sorted(names)  # SCAN on a still keyspace: each key once


async def test_the_next_read_reaches_redis_while_a_page_is_held(
    client: Redis, keys: Keyspace
) -> None:
    """Page i + 1's request has reached Redis (it ran there) before page i is handed over,
    and each page comes with its own read, in order. Redis is asked from another
    connection while the event loop is held, so nothing more can be sent meanwhile."""
    counter = keys.scratchpad("read-ahead-counter")
    ran_by_then: list[int] = []

    async def pages() -> AsyncIterator[int]:
        for i in range(4):
            yield i

    async def read(i: int) -> str:
        await client.incr(counter)
        return f"page {i}"

    await asyncio.gather(client.ping(), client.ping())  # two connections open (a new one
    # takes more turns of the loop to connect: the first page is then not read ahead)
    kwargs = dict(client.connection_pool.connection_kwargs)
    watcher = redis.Redis(
        unix_socket_path=kwargs["path"], password=kwargs["password"], socket_timeout=5
    )
    got = []
    async for page, result in read_ahead(pages(), read):
        deadline = time.monotonic() + 1.0  # the loop is held: only a request sent counts
        while int(watcher.get(counter) or 0) < min(page + 2, 4) and time.monotonic() < deadline:
            time.sleep(0.005)
        ran_by_then.append(int(watcher.get(counter) or 0))
        got.append((page, result))
    watcher.close()
    assert got == [(i, f"page {i}") for i in range(4)]
    assert ran_by_then == [2, 3, 4, 4]  # page i + 1's read ran while page i was held


async def test_a_caller_that_stops_early_leaves_nothing_running(
    client: Redis, keys: Keyspace
) -> None:
    """A loop left early cancels the read under way: no task is left, no lost error is
    reported, and the client keeps working."""
    await _fill(client, keys, 3_000)
    started: list[int] = []

    async def read(page: list[str]) -> int:
        started.append(len(page))
        return len(await client.mget(page))

    lost: list[object] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: lost.append(context))
    try:
        pages = read_ahead(key_pages(client, keys.every_key, 500), read)
        async for _page, n in pages:
            assert n == 500
            break
        await pages.aclose()
        await asyncio.sleep(0.05)
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert lost == []
    assert len(started) == 2  # the page held and the one read ahead, nothing after
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert not [t for t in others if not t.done() and "read_ahead" in repr(t.get_coro())]
    assert await client.ping()


async def test_a_failed_read_reaches_the_caller(client: Redis, keys: Keyspace) -> None:
    async def pages() -> AsyncIterator[int]:
        for i in range(3):
            yield i

    async def read(i: int) -> int:
        if i == 1:
            raise ValueError("page 1 is unreadable")
        return i

    got = []
    with pytest.raises(ValueError, match="page 1"):
        async for page, _ in read_ahead(pages(), read):
            got.append(page)
    assert got == [0]

"""Streams rebuilt in place: the same entry ids, counters and consumer groups.

Redis cannot change a stream entry, and ``XDEL`` only marks one deleted: its bytes stay in
the stream's node (and so in DUMP, the RDB and the AOF's preamble) until the whole node
goes. To take values out for good, a stream is copied page by page into a scratch stream,
each entry kept, rewritten or dropped, then swapped in by one transaction: the scratch
takes the original's last id, counters and consumer groups, ``RENAME`` puts it in place
and the original is ``UNLINK``ed (freed in the background). Pending entries go back to
their consumers (``XCLAIM ... FORCE``). A stream others write to (the inbox) is watched:
when it grew meanwhile, the copy is made again.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError, WatchError

from aether.codec import byte_map, command, text
from aether.errors import ConcurrentAdminError

__all__ = ["Fields", "rebuild_stream", "stream_pages"]

Fields = dict[bytes, bytes]
PAGE = 500
PAGE_BUDGET_MS = 50.0
ATTEMPTS = 5
PENDING_PAGE = 10_000


async def stream_pages(
    client: Redis, name: str, budget_ms: float = PAGE_BUDGET_MS
) -> AsyncIterator[list[tuple[str, Fields]]]:
    """A stream's entries, oldest first, a page at a time.

    Pages are sized to the entries: a journal entry may hold thousands of ops, so a page
    that took over ``budget_ms`` halves the next one, and a quick one doubles it.
    """
    lower, count = "-", 32
    while True:
        started = time.monotonic()
        found = await client.xrange(name, min=lower, max="+", count=count)
        took_ms = (time.monotonic() - started) * 1000
        if not found:
            return
        yield [(text(i), byte_map(f)) for i, f in found]
        if len(found) < count:
            return
        lower = f"({text(found[-1][0])}"
        if took_ms > budget_ms:
            count = max(1, count // 2)
        elif took_ms < budget_ms / 4:
            count = min(PAGE, count * 2)


def _pairs(raw: Any) -> dict[str, Any]:
    items = dict(zip(raw[::2], raw[1::2], strict=False)) if isinstance(raw, list) else raw
    return {text(k): v for k, v in items.items()}


async def _pending(client: Redis, name: str, group: str) -> list[dict[str, Any]]:
    """A group's pending entries, every page (the extended ``XPENDING`` form)."""
    out: list[dict[str, Any]] = []
    lower = "-"
    while True:
        page = await client.xpending_range(name, group, min=lower, max="+", count=PENDING_PAGE)
        out += page
        if len(page) < PENDING_PAGE:
            return out
        lower = f"({text(page[-1]['message_id'])}"


async def _info(client: Redis, name: str) -> dict[str, Any]:
    info = _pairs(await command(client, "XINFO", "STREAM", name))
    groups = []
    for raw in await command(client, "XINFO", "GROUPS", name):
        group = _pairs(raw)
        group["name"] = text(group["name"])
        group["pending"] = await _pending(client, name, group["name"])
        consumers = await command(client, "XINFO", "CONSUMERS", name, group["name"])
        group["consumers"] = [text(_pairs(c)["name"]) for c in consumers]
        groups.append(group)
    info["groups"] = groups
    return info


async def rebuild_stream(
    client: Redis,
    name: str,
    scratch: tuple[str, str],
    rewrite: Callable[[Fields], Awaitable[Fields | None]],
    *,
    watch: bool = False,
) -> int:
    """Copy ``name`` through ``rewrite`` and put the copy in its place.

    Args:
        client: the stream's client.
        name: the stream.
        scratch: two free key names of the stream's slot (the copy, the old stream).
        rewrite: an entry's fields -> the same object (kept), new fields, or ``None``
            (dropped).
        watch: others write to the stream: copy again when it grew meanwhile.

    Returns:
        How many entries were rewritten or dropped.

    Raises:
        ConcurrentAdminError: the stream kept growing through every attempt.
    """
    fresh, old = scratch
    for _attempt in range(ATTEMPTS):
        if not await client.exists(name):
            return 0
        info = await _info(client, name)
        await client.delete(fresh)
        changed = copied = 0
        async for page in stream_pages(client, name):
            pipe = client.pipeline(transaction=False)
            for entry_id, fields in page:
                kept = await rewrite(fields)
                changed += kept is not fields
                if kept is not None:
                    pipe.xadd(fresh, kept, id=entry_id)  # type: ignore[arg-type]
                    copied += 1
            await pipe.execute()
        try:
            await _swap(client, name, fresh, old, info, copied, watch)
        except WatchError:
            continue
        return changed
    raise ConcurrentAdminError(f"{name} kept changing while it was being rebuilt; try again")


async def _swap(
    client: Redis, name: str, fresh: str, old: str, info: dict[str, Any], copied: int, watch: bool
) -> None:
    last = text(info.get("last-generated-id") or "0-0")
    added = int(info.get("entries-added") or copied)
    deleted = text(info.get("max-deleted-entry-id") or "0-0")
    async with client.pipeline(transaction=True) as pipe:
        if watch:
            await pipe.watch(name)
            now = _pairs(await command(client, "XINFO", "STREAM", name))
            if text(now.get("last-generated-id") or "0-0") != last:
                raise WatchError("the stream grew")
            pipe.multi()  # type: ignore[no-untyped-call]
        if not copied:  # an empty stream still carries its ids and groups
            pipe.xadd(fresh, {"x": "1"}, id="0-1")
            pipe.xdel(fresh, "0-1")
        pipe.execute_command("XSETID", fresh, last, "ENTRIESADDED", added, "MAXDELETEDID", deleted)
        for group in info["groups"]:
            pipe.execute_command(
                "XGROUP",
                "CREATE",
                fresh,
                group["name"],
                group["last-delivered-id"],
                "ENTRIESREAD",
                group.get("entries-read") or 0,
            )
        pipe.rename(name, old)
        pipe.rename(fresh, name)
        pipe.unlink(old)
        await pipe.execute()
    for group in info["groups"]:
        for consumer in group["consumers"]:  # consumers with nothing pending stay known
            await client.xgroup_createconsumer(name, group["name"], consumer)
        for pending in group["pending"]:
            with contextlib.suppress(ResponseError):  # an entry dropped by the rewrite
                await client.xclaim(
                    name,
                    group["name"],
                    text(pending["consumer"]),
                    min_idle_time=0,
                    message_ids=[text(pending["message_id"])],
                    idle=int(pending["time_since_delivered"]),
                    retrycount=int(pending["times_delivered"]),
                    force=True,
                    justid=True,
                )

"""The files Redis writes: where they are, rewriting them, and finding a text in them.

An erasure removes a text from memory; the AOF (every command since its last rewrite)
and any RDB still hold it until Redis rewrites them from memory. ``BGREWRITEAOF`` makes
a new base from the dataset, and Redis deletes the old files once the rewrite is done.
``rdbcompression`` is turned off first, so the new files keep strings as written and
a scan can prove the text gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from aether.codec import text
from aether.store.redaction import Needle

log = structlog.get_logger(__name__)

__all__ = ["data_dir", "files_holding", "rewrite_files", "wait_until_clean"]

WAIT_S = 60.0
REWRITE_WAIT_S = 1800.0
"""How long an erasure waits for its own AOF rewrite: a rewrite writes the whole dataset
(minutes for a million memories), and files scanned before it ends still hold the text."""
# Redis deletes the old AOF files just after the rewrite; a text still in the files after
# this is in the new ones (another namespace of the server holds it too)
CLEAN_WAIT_S = 5.0
CHUNK = 4 * 1024 * 1024


async def data_dir(client: Redis) -> Path | None:
    """The server's data directory, when it is on this machine and readable."""
    try:
        raw = await client.config_get("dir")
    except RedisError:
        return None
    value = raw.get("dir") if isinstance(raw, dict) else None
    path = Path(text(value)) if value else None
    return path if path is not None and path.is_dir() and os.access(path, os.R_OK) else None


def files_holding(folder: Path, needle: Needle, among: list[Path] | None = None) -> list[Path]:
    """The files under ``folder`` that hold the needle (read in overlapping chunks).

    Args:
        folder: the data directory.
        needle: what to look for.
        among: only these files (those that still exist), instead of every file.
    """
    overlap = max(len(f.encode()) for f in needle.forms) + 64
    found = []
    files = folder.rglob("*") if among is None else among
    for path in sorted(p for p in files if p.is_file()):
        try:
            with path.open("rb") as f:
                tail = b""
                while block := f.read(CHUNK):
                    window = tail + block
                    if needle.in_raw(window):  # the quick test, then the whole one
                        found.append(path)
                        break
                    tail = window[-overlap:]
        except OSError:
            continue  # a file Redis deleted while it was read
    return found


async def _wait_idle(client: Redis, wait_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        info = await client.info("persistence")
        busy = (
            info.get("aof_rewrite_in_progress")
            or info.get("aof_rewrite_scheduled")
            or info.get("rdb_bgsave_in_progress")
        )
        if not busy:
            return
        await asyncio.sleep(0.05)


async def rewrite_files(client: Redis) -> bool:
    """Have Redis rewrite its AOF (and its RDB, if it keeps one); whether it did."""
    with contextlib.suppress(RedisError):
        await client.config_set("rdbcompression", "no")
    try:
        await _wait_idle(client)
        await client.bgrewriteaof()
    except ResponseError as e:
        log.warning("the AOF could not be rewritten", error=str(e))
        return False
    await _wait_idle(client, REWRITE_WAIT_S)
    folder = await data_dir(client)
    if folder is not None and any(folder.glob("*.rdb")):
        with contextlib.suppress(ResponseError):
            await client.bgsave()
        await _wait_idle(client)
    return True


async def wait_until_clean(client: Redis, needle: Needle) -> list[Path] | None:
    """Wait until no file under the data directory holds the needle.

    Returns the files still holding it after the wait (empty: clean), or ``None`` when the
    data directory is not readable from here.
    """
    folder = await data_dir(client)
    if folder is None:
        return None
    deadline = time.monotonic() + CLEAN_WAIT_S
    holding = await asyncio.to_thread(files_holding, folder, needle)
    while holding and time.monotonic() < deadline:
        await asyncio.sleep(0.1)  # Redis deletes the old AOF files in the background
        # only the files that held it are read again: a clean file stays clean
        holding = await asyncio.to_thread(files_holding, folder, needle, holding)
    return holding

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
import itertools
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from urllib.parse import quote

import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from aether.codec import text
from aether.identifiers import IdentifierMatcher
from aether.keys import NAMED_FAMILIES, named_parts
from aether.store.redaction import Needle

log = structlog.get_logger(__name__)

__all__ = [
    "data_dir",
    "file_matcher",
    "files_holding",
    "names_a_key",
    "rewrite_files",
    "wait_until_clean",
]

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
    """The files under ``folder`` that hold the needle, or a key it names (read in chunks).

    Files larger than :data:`PARALLEL_FROM` in all are read in spans of
    :data:`SPAN` by a process per core (:func:`_readers`): the reading is Python's own work,
    one core's worth, and a million memories' base file took half a minute on one.

    Args:
        folder: the data directory.
        needle: what to look for.
        among: only these files (those that still exist), instead of every file.
    """
    files = folder.rglob("*") if among is None else among
    sizes: dict[Path, int] = {}
    for path in sorted(p for p in files if p.is_file()):
        with contextlib.suppress(OSError):  # a file Redis deleted meanwhile
            sizes[path] = path.stat().st_size
    readers = _readers()
    if sum(sizes.values()) < PARALLEL_FROM or readers < 2:
        return [path for path in sizes if _span_holds(str(path), 0, None, needle.sealed())]
    spans = [
        (str(path), start, start + SPAN)
        for path, size in sizes.items()
        for start in range(0, max(size, 1), SPAN)
    ]
    context = multiprocessing.get_context("spawn")  # never a fork of a threaded process
    with ProcessPoolExecutor(readers, mp_context=context) as pool:
        held = pool.map(
            _span_holds,
            *zip(*spans, strict=True),
            itertools.repeat(needle.sealed(), len(spans)),
        )
        holding = {name for (name, _, _), holds in zip(spans, held, strict=True) if holds}
    return [path for path in sizes if str(path) in holding]


PARALLEL_FROM = 256 * 1024 * 1024
"""Files of this size in all or more are read by a process per core (:func:`files_holding`)."""
SPAN = 64 * 1024 * 1024
"""What one reader reads of a file at a time."""


def _readers() -> int:
    """How many processes read files at once: the cores this process may run on, up to 4."""
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere every core
    cores = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    return min(cores, 4)


def _span_holds(name: str, start: int, end: int | None, sealed: str) -> bool:
    """Whether a file's bytes from ``start`` to ``end`` (its end: ``None``) hold the needle.

    The span is read from a little before ``start`` (the longest spelling or named key), so
    a spelling across two spans is found; a file Redis deleted meanwhile holds nothing.
    """
    needle = Needle.unsealed(sealed)
    # a spelling, or a key named by it (its namespace, length and name), across two chunks
    overlap = max(len(f.encode()) for f in needle.forms) + 64 + _NAMESPACE_MAX + _KEY_MAX
    quick = file_matcher(needle)
    begin = max(0, start - overlap)
    left = None if end is None else end - begin
    try:
        with open(name, "rb") as f:
            f.seek(begin)
            tail = b""
            while left is None or left > 0:
                block = f.read(CHUNK if left is None else min(CHUNK, left))
                if not block:
                    break
                if left is not None:
                    left -= len(block)
                window = tail + block
                if quick.maybe_in(window) and (  # one quick pass rules most chunks out
                    needle.in_raw(window) or names_a_key(window, needle, quick)
                ):
                    return True
                tail = window[-overlap:]
    except OSError:
        pass
    return False


_MARKERS = tuple(f":{family}".encode() for family in NAMED_FAMILIES)
_NAMESPACE_MAX = 64
"""How far before a family a key's start is looked for (its namespace and length)."""
_KEY_MAX = 1024
_DELIMITERS = frozenset(b'"\r\n\x00')
_NAMESPACE_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.{}")
"""What a namespace is made of (``Settings.namespace``): a key starts inside such a run."""


def file_matcher(needle: Needle) -> IdentifierMatcher:
    """The needle's spellings and their percent-encoded forms (a LangGraph key's parts).

    Only its quick test (:meth:`IdentifierMatcher.maybe_in`) is used: one pass over a
    chunk rules out both the text and a key named by it.
    """
    encoded = [quote(form, safe="") for form in needle.forms]
    return IdentifierMatcher([*needle.forms, *encoded])


def names_a_key(blob: bytes, needle: Needle, quick: IdentifierMatcher | None = None) -> bool:
    """Whether raw bytes (a chunk of an AOF or RDB file) hold a key named by the needle.

    The needle is read in the key's named parts (:func:`aether.keys.named_parts`), as an
    erasure reads a key's name. A key in a file is framed by its format: RESP's ``$N``,
    RDB's, listpack's and msgpack's length prefixes, or a quote or line end after it. Each
    framing a family's place allows is tried (a key starts where its namespace may start):
    the key it gives must be named by the needle.

    Args:
        blob: the bytes.
        needle: what names the key.
        quick: :func:`file_matcher` of the needle, when the caller has it.
    """
    quick = quick or file_matcher(needle)
    if not quick.maybe_in(blob):
        return False
    for marker in _MARKERS:
        at = blob.find(marker)
        while at != -1:
            rest = at + 1
            if _may_name(blob[rest : rest + _KEY_MAX], quick):
                for end in _key_ends(blob, at, len(marker)):
                    name = blob[rest:end].decode("utf-8", "replace")
                    if any(needle.in_text(part) for part in named_parts(name)):
                        return True
            at = blob.find(marker, at + 1)
    return False


def _may_name(tail: bytes, quick: IdentifierMatcher) -> bool:
    """Whether the bytes after a family may hold the name (a quick test; ``False``: no).

    A spelling that folds to ASCII is ruled out by its skeleton. Any other can only be in
    bytes outside ASCII, a percent-encoded part or a JSON escape: a plain ASCII key is not
    folded at all (most of an AOF's keys, a chat's or a thread's).
    """
    if quick.ascii_only:
        return quick.maybe_in(tail)
    return not tail.isascii() or b"%" in tail or b"\\u" in tail


def _key_ends(blob: bytes, at: int, marker: int) -> set[int]:
    """Where a key holding a family at ``at`` may end, by every framing that fits."""
    ends: set[int] = set()
    limit = min(len(blob), at + _KEY_MAX)
    for end in range(at + marker, limit):
        if blob[end] in _DELIMITERS:
            ends.add(end)
            break
    first = at
    while first > 0 and at - first < _NAMESPACE_MAX and blob[first - 1] in _NAMESPACE_BYTES:
        first -= 1
    for start in range(first, at):  # the length before the namespace may look like it
        for length in _lengths_before(blob, start):
            if at + marker < start + length <= limit:
                ends.add(start + length)
    return ends


def _lengths_before(blob: bytes, start: int) -> list[int]:
    """The lengths the bytes just before ``start`` may encode, in the formats keys take."""
    found: list[int] = []
    b1 = blob[start - 1] if start >= 1 else -1
    b2 = blob[start - 2] if start >= 2 else -1
    if 0 <= b1 < 0x40:
        found.append(b1)  # RDB, 6 bits
    if 0x80 <= b1 < 0xC0:
        found += [b1 & 0x3F, b1 & 0x1F]  # listpack, 6 bits; msgpack fixstr
    if b2 >= 0:
        if b2 >> 6 == 1:
            found.append(((b2 & 0x3F) << 8) | b1)  # RDB, 14 bits
        if b2 >> 4 == 0xE:
            found.append(((b2 & 0x0F) << 8) | b1)  # listpack, 12 bits
        if b2 == 0xD9:
            found.append(b1)  # msgpack str8
    if blob[start - 2 : start] == b"\r\n":
        head = blob.rfind(b"$", max(0, start - 12), start - 2)
        digits = blob[head + 1 : start - 2] if head != -1 else b""
        if digits.isdigit():
            found.append(int(digits))  # RESP
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

"""The agent's whole memory as one portable file: a backup, and a way to move an agent.

``aether memory export`` writes every journaled state key of the namespace, one JSON line
each, after a header line::

    {"format": "aether-memory", "version": 2, "keys": 42}
    {"key": "belief:01J...", "type": "json", "value": {"statement": "...", "status": ...}}
    {"key": "daily:2026-11-27", "type": "list", "value": ["01J...", "01J..."]}

``key`` is the key without the namespace's prefix, so a file moves between namespaces.
That covers every kind of memory (daily entries, long-term notes, beliefs with their
status, supersede links and history, tasks, goals, chat sessions, the graph's entities and
relations, open questions) and the identity, and any kind added later, with no list to
keep in step. Values are typed: strings and hash, list, set and zset members are text, or
``{"base64": ...}`` when not UTF-8; sets sorted, zsets as ``[member, score]`` pairs, hash
fields sorted, documents in their own field order, so the same memory always gives the
same file. Vectors are left out: they
are recomputed by the importing namespace's own embedder (``embedding`` fields too).

Import validates every line before it writes anything (a bad line refuses the file,
naming the line; nothing is skipped silently), takes a checkpoint, then writes in
journaled batches: a key the namespace lacks is created as it was; a collection it has
gains only the members, fields or elements it lacks; a document or string it has is kept.
The memory index's counts are not merged but counted again from the documents. So
importing into an empty namespace restores the memory exactly (export -> import -> export
gives the same file), and importing twice adds nothing the second time.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aether.checkpoints.manager import Checkpoints
from aether.codec import text
from aether.errors import InvalidOperationError
from aether.files import atomic_private_writer
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import MemoryRecord
from aether.memory.tiers.memory_index import MemoryIndex
from aether.store.state import Mutation
from aether.store.values import Value, read_values

__all__ = [
    "FORMAT",
    "VERSION",
    "PortableReport",
    "export_memory",
    "import_memory",
    "is_portable",
    "read_portable",
]

FORMAT = "aether-memory"
VERSION = 2
PAGE = 500
BATCH_OPS = 300
Progress = Callable[[int], None]
KeyType = Literal["string", "hash", "json", "list", "set", "zset"]
_DROPPED_FIELDS = ("embedding", "passage_embeddings")


class Header(BaseModel):
    """The first line of a whole-memory file."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["aether-memory"]
    version: Literal[2]
    keys: int = Field(ge=0)


class PortableKey(BaseModel):
    """One key of a whole-memory file."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, max_length=1024, pattern=r"^[^\s*?\[\]\\]+$")
    type: KeyType
    value: Any


@dataclass
class PortableReport:
    """What an import did, key by key."""

    read: int = 0
    created: int = 0
    merged: int = 0
    unchanged: int = 0
    checkpoint: str | None = None

    def to_dict(self) -> dict[str, object]:
        """As JSON."""
        return {
            "format": FORMAT,
            "read": self.read,
            "created": self.created,
            "merged": self.merged,
            "unchanged": self.unchanged,
            "checkpoint": self.checkpoint,
        }


# -- encoding ----------------------------------------------------------------------------
def _out(raw: bytes | str) -> str | dict[str, str]:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode()}


def _in(item: Any, where: str) -> bytes:
    if isinstance(item, str):
        return item.encode()
    if isinstance(item, dict) and set(item) == {"base64"} and isinstance(item["base64"], str):
        try:
            return base64.b64decode(item["base64"], validate=True)
        except ValueError as e:
            raise InvalidOperationError(f"{where}: bad base64") from e
    raise InvalidOperationError(f"{where}: expected text or {{'base64': ...}}")


def _encoded(value: Value) -> Any:
    content = value.content
    if value.type == "string":
        return _out(content)
    if value.type == "hash":
        return {f: _out(v) for f, v in sorted(content.items())}
    if value.type == "list":
        return [_out(v) for v in content]
    if value.type == "set":
        return [_out(v) for v in sorted(content)]
    if value.type == "zset":
        return [[_out(m), s] for m, s in sorted(content.items())]
    doc = dict(content) if isinstance(content, dict) else content
    if isinstance(doc, dict):
        for name in _DROPPED_FIELDS:
            doc.pop(name, None)
    return doc


def _decoded(entry: PortableKey) -> Value:
    """The line's value in :class:`Value`'s form (raises on a value of the wrong shape)."""
    where, v = f"key {entry.key!r}", entry.value
    if entry.type == "string":
        return Value("string", _in(v, where))
    if entry.type == "json":
        if isinstance(v, dict):
            v = {k: x for k, x in v.items() if k not in _DROPPED_FIELDS}
        return Value("json", v)
    if entry.type == "hash":
        if not isinstance(v, dict) or not v:
            raise InvalidOperationError(f"{where}: a hash is a non-empty object")
        return Value("hash", {str(f): _in(x, where) for f, x in v.items()})
    if not isinstance(v, list) or not v:
        raise InvalidOperationError(f"{where}: a {entry.type} is a non-empty array")
    if entry.type == "list":
        return Value("list", [_in(x, where) for x in v])
    if entry.type == "set":
        return Value("set", {_in(x, where) for x in v})
    pairs: dict[bytes, float] = {}
    for pair in v:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not isinstance(pair[1], int | float)
            or isinstance(pair[1], bool)
        ):
            raise InvalidOperationError(f"{where}: a zset member is [member, score]")
        pairs[_in(pair[0], where)] = float(pair[1])
    return Value("zset", pairs)


# -- export ------------------------------------------------------------------------------
async def _state_keys(memory: MemoryLayer) -> list[str]:
    keys = memory.keys
    found = []
    async for raw in memory.client.scan_iter(match=keys.every_key, count=1000):
        name = text(raw)
        if keys.is_state(name) and not keys.is_vector(name):
            found.append(name)
    return sorted(found)


async def export_memory(memory: MemoryLayer, path: Path, progress: Progress | None = None) -> int:
    """Write the namespace's whole memory to ``path`` (owner-only, atomically).

    Returns:
        How many keys were written.

    Raises:
        InvalidOperationError: ``path`` is a directory or device, its folder is missing,
            or the disk is full; nothing is left behind.
    """
    names = await _state_keys(memory)
    prefix = len(memory.keys.prefix)
    lines: list[str] = []
    for start in range(0, len(names), PAGE):
        page = names[start : start + PAGE]
        for name, value in zip(page, await read_values(memory.client, page), strict=True):
            if value.type == "none":
                continue  # gone between the scan and the read
            entry = {"key": name[prefix:], "type": value.type, "value": _encoded(value)}
            # a document keeps its own field order, so the import restores it byte for byte
            lines.append(json.dumps(entry, ensure_ascii=False))
    header = {"format": FORMAT, "version": VERSION, "keys": len(lines)}
    with atomic_private_writer(path) as f:
        f.write(json.dumps(header, sort_keys=True) + "\n")
        for line in lines:
            f.write(line + "\n")
            if progress is not None:
                progress(1)
    return len(lines)


# -- import ------------------------------------------------------------------------------
def is_portable(path: Path) -> bool:
    """Whether ``path`` starts with a whole-memory header (else: a file of records).

    Anything but a regular file is not (the reader of records refuses it, and opening a
    FIFO here would wait for a writer).
    """
    if not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline(4096)
    except (OSError, UnicodeDecodeError):
        return False
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(head, dict) and head.get("format") == FORMAT


def _numbered(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    yield number, line
    except UnicodeDecodeError as e:
        raise InvalidOperationError(f"cannot read {path}: not UTF-8 text (byte {e.start})") from e
    except OSError as e:
        raise InvalidOperationError(f"cannot read {path}: {e.strerror or e}") from e


def read_portable(memory: MemoryLayer, path: Path) -> list[tuple[str, Value]]:
    """Validate a whole-memory file: (full key, value) pairs; nothing is written.

    Raises:
        InvalidOperationError: the file cannot be read, or a line is bad (its number and
            why); nothing was imported.
    """
    keys = memory.keys
    out: list[tuple[str, Value]] = []
    seen: dict[str, int] = {}
    header: Header | None = None
    for number, line in _numbered(path):
        try:
            raw = json.loads(line)
            if header is None:
                header = Header.model_validate(raw)
                continue
            entry = PortableKey.model_validate(raw)
            name = keys.prefix + entry.key
            known = keys.is_state(name) and keys.tier(name) not in ("other", "vectors")
            if not known:
                raise InvalidOperationError(f"{entry.key!r} is not a key of an agent's memory")
            if name in seen:
                raise InvalidOperationError(f"key {entry.key!r} is also on line {seen[name]}")
            seen[name] = number
            out.append((name, _decoded(entry)))
        except (json.JSONDecodeError, RecursionError) as e:
            raise InvalidOperationError(f"line {number}: not JSON; nothing was imported") from e
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            raise InvalidOperationError(
                f"line {number}: {where}: {first['msg']}; nothing was imported"
            ) from e
        except InvalidOperationError as e:
            raise InvalidOperationError(f"line {number}: {e}; nothing was imported") from e
    if header is None:
        raise InvalidOperationError(f"{path} is empty; nothing was imported")
    if header.keys != len(out):
        raise InvalidOperationError(
            f"the header counts {header.keys} keys but the file holds {len(out)} "
            "(cut short?); nothing was imported"
        )
    return out


def _merge(m: Mutation, name: str, have: Value, want: Value) -> bool:
    """Add to ``m`` what ``want`` has and ``have`` lacks; whether anything was added."""
    if want.type == "hash":
        missing = {f: v for f, v in want.content.items() if f not in have.content}
        if missing:
            m.hset(name, missing)
        return bool(missing)
    if want.type == "set":
        members = sorted(want.content - have.content)
        if members:
            m.sadd(name, *members)
        return bool(members)
    if want.type == "zset":
        pairs = {text(k): s for k, s in want.content.items() if k not in have.content}
        if pairs:
            m.zadd(name, pairs)
        return bool(pairs)
    if want.type == "list":
        present = set(have.content)
        items = [v for v in want.content if v not in present]
        if items:
            m.rpush(name, *items)
        return bool(items)
    return False  # a document or string the namespace has is kept as it is


def _create(m: Mutation, name: str, want: Value) -> None:
    c = want.content
    if want.type == "string":
        m.set(name, c)
    elif want.type == "json":
        m.json_set(name, c)
    elif want.type == "hash":
        m.hset(name, c)
    elif want.type == "list":
        m.rpush(name, *c)
    elif want.type == "set":
        m.sadd(name, *sorted(c))
    else:
        m.zadd(name, {text(k): s for k, s in c.items()})


async def import_memory(
    memory: MemoryLayer,
    checkpoints: Checkpoints,
    entries: list[tuple[str, Value]],
    progress: Progress | None = None,
    actor: str = "cli",
) -> PortableReport:
    """Write what ``entries`` (from :func:`read_portable`) adds to the namespace.

    Raises:
        InvalidOperationError: a key exists with another type; nothing was imported.
    """
    report = PortableReport(read=len(entries))
    plans: list[tuple[str, Value, Value]] = []
    for start in range(0, len(entries), PAGE):
        page = entries[start : start + PAGE]
        have = await read_values(memory.client, [n for n, _ in page])
        for (name, want), now in zip(page, have, strict=True):
            if now.type not in ("none", want.type):
                short = name[len(memory.keys.prefix) :]
                raise InvalidOperationError(
                    f"key {short!r} is a {now.type} here and a {want.type} in the file; "
                    "nothing was imported"
                )
            plans.append((name, want, now))
    keys = memory.keys
    documents = keys.memory_document_prefixes()
    derived = {keys.memory_counts(), keys.memory_topics(), keys.memory_topics_seen()}
    recount = False
    m, docs = Mutation(), []
    for name, want, now in plans:
        if name in derived and now.type != "none":
            recount = True  # counts are not merged member by member: counted again below
            report.unchanged += 1
        elif now.type == "none":
            document = name.startswith(documents) and isinstance(want.content, dict)
            if want.type == "json" and document:
                docs.append((name, dict(want.content)))
            else:
                _create(m.absent(name), name, want)
            report.created += 1
        elif _merge(m, name, now, want):
            report.merged += 1
        else:
            report.unchanged += 1
    if not m.ops and not docs:
        return report
    cp = await checkpoints.create(label="before memory import", reason="pre-import", actor=actor)
    report.checkpoint = cp.id
    await _apply_in_batches(memory, m, docs, progress, actor)
    if recount:
        await MemoryIndex(memory).rebuild()
    return report


async def _apply_in_batches(
    memory: MemoryLayer,
    m: Mutation,
    docs: list[tuple[str, dict[str, Any]]],
    progress: Progress | None,
    actor: str,
) -> None:
    for start in range(0, len(m.ops), BATCH_OPS):
        batch = Mutation(ops=m.ops[start : start + BATCH_OPS])
        await memory.store.apply(batch, "memory.import", actor)
        if progress is not None:
            progress(len(batch.ops))
    for start in range(0, len(docs), PAGE):
        page = docs[start : start + PAGE]
        records: list[MemoryRecord] = [doc for _, doc in page]  # type: ignore[misc]
        await memory.attach_embeddings(records)
        batch = Mutation()
        for (name, _), doc in zip(page, records, strict=True):
            memory.put(batch.absent(name), name, doc)
        await memory.store.apply(batch, "memory.import", actor)
        if progress is not None:
            progress(len(page))

"""JSONL import and export of daily entries and long-term memories.

Export writes one document per line (embeddings left out: they are recomputed on import),
daily entries in day order then long-term memories by id, through an owner-only
temporary file renamed into place, so a failed export leaves nothing behind.

Import reads the whole file first and validates every line against :class:`ImportLine`
(types, ranges, a timestamp between 1970 and 9999, a bounded line size and nesting)
before it writes anything. A bad line refuses the whole file, naming the line and the
reason (``on_invalid="skip"`` skips and counts them instead); two lines with one id
refuse the file with their line numbers (``on_duplicate="keep-first"|"keep-last"``
keeps one and reports it). Exact duplicates of what is stored (same id, or same content
hash) are skipped; a line without id or timestamp is identified by its content, so
importing the same file twice adds nothing the second time. Each batch is one journaled
change whose documents carry ``ABSENT`` guards and whose counters are in the same atomic
write, so a counter can never count a document twice, even when another writer races
the import.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from redisvl.query import FilterQuery
from redisvl.query.filter import Tag

from aether.errors import AetherError, ConflictError, InvalidOperationError
from aether.files import atomic_private_writer
from aether.memory.retrieval.candidates import CandidateReader
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import (
    MAX_TAGS,
    DailyEntry,
    MemoryDoc,
    MemoryRecord,
    content_hash,
    day_of,
    record_key,
)
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.memory.tiers.longterm import LongTermMemory, build_memory
from aether.memory.tiers.memory_index import count_ops
from aether.store.state import Mutation

BATCH = 500
CONFLICT_RETRIES = 3
MAX_REPORTED = 20
# 9999-12-31T23:59:59Z: the last second a date can name
MAX_TIMESTAMP = 253_402_300_799.0
ID_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"
Progress = Callable[[int], None]
OnInvalid = Literal["refuse", "skip"]
OnDuplicate = Literal["refuse", "keep-first", "keep-last"]


@dataclass(frozen=True)
class ImportPolicy:
    """What an import does with bad lines and with lines that share an id.

    Attributes:
        on_invalid: ``refuse`` the whole file (default) or ``skip`` and count bad lines.
        on_duplicate: ``refuse`` the file (default), or keep the first or last line of an id.
    """

    on_invalid: OnInvalid = "refuse"
    on_duplicate: OnDuplicate = "refuse"


class ImportLine(BaseModel):
    """One line of an import file: a daily entry or a long-term memory.

    A line without ``kind`` is a long-term note (what notes brought from another tool
    look like: ``{"content": ...}``). ``hash`` and ``embedding`` (as an export writes
    them) are accepted and recomputed; any other unknown field is refused, so a typo is
    not silently dropped.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: Literal["daily", "longterm"] = "longterm"
    id: str | None = Field(default=None, pattern=ID_PATTERN)
    content: str = Field(min_length=1)
    source: Literal["user", "agent", "system"] = "agent"
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    score: float = Field(default=0.5, ge=0.0, le=1.0)
    timestamp: float | None = Field(default=None, ge=0.0, le=MAX_TIMESTAMP)
    session: str | None = Field(default=None, pattern=r"^$|^[A-Za-z0-9_.-]{1,128}$")
    day: str | None = None
    sources: list[str] = Field(default_factory=list, max_length=10_000)
    hash: str | None = Field(default=None, max_length=64)
    embedding: list[float] | None = Field(default=None, max_length=8192)

    @model_validator(mode="after")
    def _consistent(self) -> ImportLine:
        if self.kind == "daily" and self.sources:
            raise ValueError("'sources' belongs to long-term memories, not daily entries")
        if self.kind == "longterm" and self.session:
            raise ValueError("'session' belongs to daily entries, not long-term memories")
        if self.day is not None:
            if self.timestamp is None:
                raise ValueError("'day' needs the 'timestamp' it is the UTC day of")
            actual = day_of(self.timestamp)
            if self.day != actual:
                raise ValueError(f"'day' is {self.day!r} but the timestamp's UTC day is {actual}")
        return self


@dataclass
class ReadResult:
    """The validated records of a file, and what was left out."""

    records: list[MemoryRecord] = field(default_factory=list)
    lines: int = 0
    invalid: list[tuple[int, str]] = field(default_factory=list)
    duplicate_ids: list[tuple[str, list[int]]] = field(default_factory=list)


@dataclass(frozen=True)
class ImportReport:
    """What an import did."""

    read: int
    imported: int
    duplicates: int
    invalid: int = 0
    invalid_lines: list[dict[str, int | str]] = field(default_factory=list)
    duplicate_ids: int = 0
    checkpoint: str | None = None
    """The checkpoint taken before anything was written (``None``: nothing to write)."""

    def to_dict(self) -> dict[str, object]:
        """The report as JSON-ready data (stable key order)."""
        return {
            "checkpoint": self.checkpoint,
            "read": self.read,
            "imported": self.imported,
            "duplicates": self.duplicates,
            "duplicate_ids": self.duplicate_ids,
            "invalid": self.invalid,
            "invalid_lines": self.invalid_lines,
        }


def max_line_bytes(memory: MemoryLayer) -> int:
    """The longest line accepted: the content limit at JSON's worst escaping, plus fields."""
    return memory.settings.max_content_bytes * 6 + 256 * 1024


def _lines(source: TextIO, limit: int) -> Iterator[tuple[int, str | None]]:
    """(number, line) pairs; a line over ``limit`` characters comes as ``None`` (skipped)."""
    number = 0
    while True:
        line = source.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit and not line.endswith("\n"):
            while (rest := source.readline(limit)) and not rest.endswith("\n"):
                pass
            yield number, None
            continue
        yield number, line


def _record(memory: MemoryLayer, line: ImportLine) -> MemoryRecord:
    record = _built(memory, line)
    if line.timestamp is None:
        # stamped "now" on import: its identity is the line, so the same file again adds
        # nothing (the hash of a line with a time includes it: two entries can repeat)
        record["hash"] = content_hash(line.kind, line.content, line.source, line.tags, 0.0)
    return record


def _built(memory: MemoryLayer, line: ImportLine) -> MemoryRecord:
    if line.kind == "daily":
        return build_entry(
            memory,
            line.content,
            source=line.source,
            tags=line.tags,
            score=line.score,
            timestamp=line.timestamp,
            session=line.session or None,
            entry_id=line.id,
        )
    return build_memory(
        memory,
        line.content,
        source=line.source,
        tags=line.tags,
        score=line.score,
        timestamp=line.timestamp,
        sources=line.sources,
        memory_id=line.id,
    )


def _reason(error: ValidationError) -> str:
    """The first problem of a line, in words a person can act on."""
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "line"
    kind, value = first["type"], first.get("input")
    shown = repr(value)[:40]
    if kind == "literal_error":
        return f"unknown {where} {shown}: use {first.get('ctx', {}).get('expected', '')}"
    if kind == "extra_forbidden":
        return f"unknown field {where!r}"
    if kind == "missing":
        return f"{where} is missing"
    if where == "content" and kind == "string_too_short":
        return "content is empty"
    if where == "timestamp" and kind in ("less_than_equal", "greater_than_equal"):
        return f"timestamp {shown} is not between 1970 and 9999 (seconds since the epoch)"
    if kind.endswith("_type"):
        return f"{where} has the wrong type ({type(value).__name__}: {shown})"
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}"


def parse_line(memory: MemoryLayer, raw_line: str) -> MemoryRecord:
    """One line's validated record.

    Raises:
        InvalidOperationError: the line is not a JSON object or not a valid record.
    """
    try:
        raw = json.loads(raw_line)
    except json.JSONDecodeError as e:
        raise InvalidOperationError(f"not JSON ({e.msg} at column {e.colno})") from e
    except RecursionError as e:
        raise InvalidOperationError("nested too deeply") from e
    if not isinstance(raw, dict):
        raise InvalidOperationError("not a JSON object")
    try:
        line = ImportLine.model_validate(raw)
    except ValidationError as e:
        raise InvalidOperationError(_reason(e)) from e
    except RecursionError as e:
        raise InvalidOperationError("nested too deeply") from e
    return _record(memory, line)


def read_records(
    memory: MemoryLayer, source: TextIO, policy: ImportPolicy = ImportPolicy()
) -> ReadResult:
    """Parse and validate every line; nothing is written.

    Raises:
        InvalidOperationError: unless the policy skips them, the first bad line (its number
            and reason); unless it keeps one, ids given on several lines.
    """
    limit = max_line_bytes(memory)
    result = ReadResult()
    numbered: list[tuple[int, MemoryRecord]] = []
    for number, text_line in _lines(source, limit):
        result.lines = number
        if text_line is None or not text_line.strip():
            if text_line is None:
                reason = f"line is over {limit} characters"
                if policy.on_invalid == "refuse":
                    raise InvalidOperationError(f"line {number}: {reason}; nothing was imported")
                result.invalid.append((number, reason))
            continue
        try:
            numbered.append((number, parse_line(memory, text_line)))
        except AetherError as e:
            if policy.on_invalid == "refuse":
                raise InvalidOperationError(f"line {number}: {e}; nothing was imported") from e
            result.invalid.append((number, str(e)))
    result.records = _resolve_duplicate_ids(numbered, policy.on_duplicate, result)
    return result


def _resolve_duplicate_ids(
    numbered: list[tuple[int, MemoryRecord]], policy: OnDuplicate, result: ReadResult
) -> list[MemoryRecord]:
    by_id: dict[str, list[int]] = {}
    for index, (_, doc) in enumerate(numbered):
        by_id.setdefault(doc["id"], []).append(index)
    repeated = {i: at for i, at in by_id.items() if len(at) > 1}
    if not repeated:
        return [doc for _, doc in numbered]
    result.duplicate_ids = [
        (doc_id, [numbered[i][0] for i in at]) for doc_id, at in repeated.items()
    ]
    if policy == "refuse":
        shown = "; ".join(
            f"id {doc_id!r} on lines {', '.join(map(str, lines))}"
            for doc_id, lines in result.duplicate_ids[:5]
        )
        more = len(result.duplicate_ids) - 5
        raise InvalidOperationError(
            f"the file gives one id to several records: {shown}"
            + (f" (and {more} more ids)" if more > 0 else "")
            + "; nothing was imported (--on-duplicate keep-first or keep-last keeps one)"
        )
    keep = {(at[0] if policy == "keep-first" else at[-1]) for at in by_id.values()}
    return [doc for index, (_, doc) in enumerate(numbered) if index in keep]


def _key(memory: MemoryLayer, doc: MemoryRecord) -> str:
    return record_key(memory.keys, doc["kind"], doc["id"])


async def _existing(
    memory: MemoryLayer, search: CandidateReader, docs: list[MemoryRecord]
) -> set[str]:
    """Hashes and ids of ``docs`` already stored."""
    pipe = memory.client.pipeline(transaction=False)
    for doc in docs:
        pipe.exists(_key(memory, doc))
    known = {doc["id"] for doc, hit in zip(docs, await pipe.execute(), strict=True) if hit}
    if not await memory.indexed():
        return known
    query = FilterQuery(
        filter_expression=Tag("hash") == [d["hash"] for d in docs],
        return_fields=["hash"],
        num_results=len(docs),
    )
    known.update(row["hash"] for row in await search.index.query(query))
    return known


def _creation(memory: MemoryLayer, docs: list[MemoryRecord]) -> Mutation:
    """One change that creates ``docs`` (refused if any exists) and counts them."""
    m = Mutation()
    for doc in docs:
        m.absent(_key(memory, doc))
    # import builds daily entries with build_entry: the kind names the record type
    daily = cast(list[DailyEntry], [d for d in docs if d["kind"] == "daily"])
    m.ops += DailyLog(memory).mutation(daily).ops
    others = [doc for doc in docs if doc["kind"] != "daily"]
    for doc in others:
        memory.put(m, _key(memory, doc), doc)
    count_ops(m, memory.keys, others)
    return m


async def import_records(
    memory: MemoryLayer, records: list[MemoryRecord], progress: Progress | None = None
) -> ImportReport:
    """Write validated records in batches, skipping exact duplicates."""
    search = CandidateReader(memory)  # the index's reader: no search is run here
    await search.ensure_index()
    seen: set[str] = set()
    imported = duplicates = 0
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        for attempt in range(CONFLICT_RETRIES):
            known = await _existing(memory, search, batch)
            fresh = []
            skipped = 0
            for doc in batch:
                if doc["id"] in known or doc["hash"] in known or doc["hash"] in seen:
                    skipped += 1
                    continue
                fresh.append(doc)
            if not fresh:
                break
            await memory.attach_embeddings(fresh)
            try:
                await memory.store.apply(_creation(memory, fresh), "memory.import")
                break
            except ConflictError:
                if attempt == CONFLICT_RETRIES - 1:
                    raise  # another writer keeps creating these ids; nothing of it is written
        duplicates += skipped
        imported += len(fresh)
        seen.update(doc["hash"] for doc in fresh)
        if progress is not None:
            progress(len(batch))
    return ImportReport(len(records), imported, duplicates)


def read_file(memory: MemoryLayer, path: Path, policy: ImportPolicy = ImportPolicy()) -> ReadResult:
    """Validate a JSONL file (see :func:`read_records`).

    Raises:
        InvalidOperationError: the file cannot be read, or a line is bad; nothing written.
    """
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise InvalidOperationError(f"cannot read {path}: {e.strerror or e}") from e
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InvalidOperationError(f"cannot read {path}: not a regular file")
    try:
        with os.fdopen(fd, encoding="utf-8") as f:
            return read_records(memory, f, policy)
    except UnicodeDecodeError as e:
        raise InvalidOperationError(f"cannot read {path}: not UTF-8 text (byte {e.start})") from e
    except OSError as e:
        raise InvalidOperationError(f"cannot read {path}: {e.strerror or e}") from e


async def import_file(
    memory: MemoryLayer,
    path: Path,
    progress: Progress | None = None,
    policy: ImportPolicy = ImportPolicy(),
) -> ImportReport:
    """Validate then import a JSONL file.

    Raises:
        InvalidOperationError: the file is missing or a line is bad; nothing is written.
    """
    read = read_file(memory, path, policy)
    report = await import_records(memory, read.records, progress)
    return with_read_report(report, read)


def with_read_report(report: ImportReport, read: ReadResult) -> ImportReport:
    """``report`` completed with what reading left out (invalid lines, repeated ids)."""
    dropped_ids = sum(len(lines) - 1 for _, lines in read.duplicate_ids)
    return ImportReport(
        read=report.read + len(read.invalid) + dropped_ids,
        imported=report.imported,
        duplicates=report.duplicates,
        invalid=len(read.invalid),
        invalid_lines=[{"line": n, "reason": r} for n, r in read.invalid[:MAX_REPORTED]],
        duplicate_ids=dropped_ids,
        checkpoint=report.checkpoint,
    )


async def export_documents(memory: MemoryLayer) -> list[MemoryDoc]:
    """Every daily entry (day order) then every long-term memory (id order), no embeddings."""
    daily = DailyLog(memory)
    out: list[MemoryDoc] = []
    for day in await daily.days():
        out.extend(await daily.list_day(day))
    ids = await LongTermMemory(memory).ids()
    for start in range(0, len(ids), BATCH):
        keys = [memory.keys.longterm(i) for i in ids[start : start + BATCH]]
        out.extend(d for d in await memory.get_docs(keys) if d is not None)
    for doc in out:
        doc.pop("embedding", None)
    return out


async def export_file(memory: MemoryLayer, path: Path, progress: Progress | None = None) -> int:
    """Write every document to ``path`` as JSONL (owner-only, atomically); returns how many.

    Raises:
        InvalidOperationError: ``path`` is a directory or device, its folder is missing, or
            the disk is full; nothing is left behind.
    """
    docs = await export_documents(memory)
    with atomic_private_writer(path) as f:
        for doc in docs:
            f.write(json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n")
            if progress is not None:
                progress(1)
    return len(docs)

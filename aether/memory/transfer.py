"""JSONL import and export of daily entries and long-term memories.

Export writes one document per line (embeddings left out: they are recomputed on import),
daily entries in day order then long-term memories by id. Import validates the whole file
before writing anything, skips exact duplicates (same id, or same content hash already
stored or earlier in the file), embeds in batches and writes in batched journaled
changes; importing an export into an empty namespace reproduces it exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from redisvl.query import FilterQuery
from redisvl.query.filter import Tag

from aether.errors import AetherError, InvalidOperationError
from aether.memory.daily import DailyLog, build_entry
from aether.memory.layer import MemoryLayer
from aether.memory.longterm import LongTermMemory, build_memory
from aether.memory.search import MemorySearch
from aether.memory.topics import count_ops

BATCH = 500
Progress = Callable[[int], None]


@dataclass(frozen=True)
class ImportReport:
    """What an import did."""

    read: int
    imported: int
    duplicates: int


def _record(layer: MemoryLayer, raw: dict[str, Any]) -> dict[str, Any]:
    kind = raw.get("kind")
    common = {
        "source": raw.get("source", "agent"),
        "tags": raw.get("tags", []),
        "score": raw.get("score", 0.5),
        "timestamp": raw.get("timestamp"),
    }
    if kind == "daily":
        return build_entry(layer, raw.get("content", ""), session=raw.get("session") or None,
                           entry_id=raw.get("id"), **common)  # fmt: skip
    if kind == "longterm":
        return build_memory(layer, raw.get("content", ""), sources=raw.get("sources", []),
                            memory_id=raw.get("id"), **common)  # fmt: skip
    raise InvalidOperationError(f"unknown kind {kind!r}: use daily or longterm")


def read_records(layer: MemoryLayer, lines: TextIO) -> list[dict[str, Any]]:
    """Parse and validate every line; the first bad line raises, naming its number.

    Raises:
        InvalidOperationError: a line is not a JSON object or not a valid record.
    """
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise InvalidOperationError("not a JSON object")
            records.append(_record(layer, raw))
        except (json.JSONDecodeError, AetherError) as e:
            raise InvalidOperationError(f"line {number}: {e}; nothing was imported") from e
    return records


async def _existing(
    layer: MemoryLayer, search: MemorySearch, docs: list[dict[str, Any]]
) -> set[str]:
    """Hashes and ids of ``docs`` already stored."""
    pipe = layer.client.pipeline(transaction=False)
    for doc in docs:
        key = (
            layer.keys.daily_entry(doc["id"])
            if doc["kind"] == "daily"
            else layer.keys.longterm(doc["id"])
        )
        pipe.exists(key)
    known = {doc["id"] for doc, hit in zip(docs, await pipe.execute(), strict=True) if hit}
    query = FilterQuery(filter_expression=Tag("hash") == [d["hash"] for d in docs],
                        return_fields=["hash"], num_results=len(docs))  # fmt: skip
    known.update(row["hash"] for row in await search.index.query(query))
    return known


async def import_records(
    layer: MemoryLayer, records: list[dict[str, Any]], progress: Progress | None = None
) -> ImportReport:
    """Write validated records in batches, skipping exact duplicates."""
    search = MemorySearch(layer)
    await search.ensure_index()
    daily = DailyLog(layer)
    seen: set[str] = set()
    imported = duplicates = 0
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        known = await _existing(layer, search, batch)
        fresh = []
        for doc in batch:
            if doc["id"] in known or doc["hash"] in known or doc["hash"] in seen:
                duplicates += 1
                continue
            seen.add(doc["hash"])
            fresh.append(doc)
        if fresh:
            await layer.attach_embeddings(fresh)
            m = daily.mutation([d for d in fresh if d["kind"] == "daily"])
            longterm = [doc for doc in fresh if doc["kind"] == "longterm"]
            for doc in longterm:
                m.json_set(layer.keys.longterm(doc["id"]), doc)
            count_ops(m, layer.keys, longterm)
            await layer.store.apply(m, "memory.import")
            imported += len(fresh)
        if progress is not None:
            progress(len(batch))
    return ImportReport(len(records), imported, duplicates)


async def import_file(
    layer: MemoryLayer, path: Path, progress: Progress | None = None
) -> ImportReport:
    """Validate then import a JSONL file.

    Raises:
        InvalidOperationError: the file is missing or a line is bad; nothing is written.
    """
    try:
        with path.open(encoding="utf-8") as f:
            records = read_records(layer, f)
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidOperationError(f"cannot read {path}: {e}") from e
    return await import_records(layer, records, progress)


async def export_documents(layer: MemoryLayer) -> list[dict[str, Any]]:
    """Every daily entry (day order) then every long-term memory (id order), no embeddings."""
    daily = DailyLog(layer)
    out: list[dict[str, Any]] = []
    for day in await daily.days():
        out.extend(await daily.list_day(day))
    ids = await LongTermMemory(layer).ids()
    for start in range(0, len(ids), BATCH):
        keys = [layer.keys.longterm(i) for i in ids[start : start + BATCH]]
        out.extend(d for d in await layer.get_docs(keys) if d is not None)
    for doc in out:
        doc.pop("embedding", None)
    return out


async def export_file(layer: MemoryLayer, path: Path, progress: Progress | None = None) -> int:
    """Write every document to ``path`` as JSONL; returns how many."""
    docs = await export_documents(layer)
    with path.open("w", encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n")
            if progress is not None:
                progress(1)
    return len(docs)

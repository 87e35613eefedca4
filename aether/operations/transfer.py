"""Memory in bulk, for operators: export, import and reindex.

Export and import read or write files on the machine the command runs on, so they are
not MCP tools (``mcp=False``): a remote client must not reach that filesystem.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from aether.errors import InvalidOperationError
from aether.operations.base import Caller, NoArgs, operation
from aether.operations.parts import Parts

__all__ = [
    "ExportArgs",
    "ImportArgs",
    "SearchIndex",
    "SearchIndexes",
    "memory_export",
    "memory_import",
    "memory_indexes",
    "memory_reindex",
]


class Reindexed(BaseModel):
    """The search index, and the memories counted by kind."""

    index: str
    counts: dict[str, int]


@operation(read_only=False, agent=False)
async def memory_reindex(parts: Parts, caller: Caller, args: NoArgs) -> Reindexed:
    """Create the search index (rebuilt when its schema changed) and recount the memories.

    Progress: the index's scan in percent, then the memories recounted.
    """
    from aether.memory.tiers.memory_index import MemoryIndex

    await parts.search.ensure_index(
        lambda percent: caller.report(percent, 100, "indexing memories (%)")
    )
    counts = await MemoryIndex(parts.memory).rebuild(caller.counter(stage="recounting memories"))
    return Reindexed(index=parts.keys.memory_index(), counts=counts)


class SearchIndex(BaseModel):
    """One of the namespace's search indexes."""

    name: str
    covers: str = Field(description="What it indexes: memories' text, their vectors, a tag's.")
    documents: int = Field(description="Hashes or documents it holds.")
    scanned: float = Field(description="Share of the existing ones scanned so far (0-1).")
    memory_mb: float = Field(description="Redis memory its structures take (MB).")


class SearchIndexes(BaseModel):
    """The namespace's search indexes."""

    indexes: list[SearchIndex]


@operation(read_only=True, agent=False)
async def memory_indexes(parts: Parts, caller: Caller, args: NoArgs) -> SearchIndexes:
    """The namespace's search indexes, a large tag's own ones included, as Redis has them.

    Asks Redis for each index (``FT.INFO``: a fraction of a second for the vector index at
    a million memories); an index not made yet is left out.
    """
    from aether.memory.storage.scoped_indexes import ScopedIndexes, index_state

    memory = parts.memory
    scoped = ScopedIndexes(memory.client, memory.keys)
    covers = {memory.keys.memory_index(): "memories' text"}
    vectors = memory.vector_index()
    if vectors is not None:
        covers[vectors.name] = "memories' vectors"
    covers |= {name: f"vectors tagged {tag!r}" for name, tag in (await scoped.tags()).items()}
    found = []
    for name, what in covers.items():
        state = await index_state(memory.client, name)
        if state is not None:
            found.append(SearchIndex(name=name, covers=what, **state))
    return SearchIndexes(indexes=found)


class ExportArgs(BaseModel):
    """Arguments of ``memory_export``."""

    path: Path = Field(description="The JSONL file to write (owner-only).")


class Exported(BaseModel):
    """How many keys were written, and where."""

    exported: int
    path: str


@operation(read_only=True, agent=False, mcp=False)
async def memory_export(parts: Parts, caller: Caller, args: ExportArgs) -> Exported:
    """Export the agent's whole memory as JSONL (all or nothing): a backup, or a move.

    Every kind of memory (daily, long-term, beliefs and their history, tasks, goals, chat
    sessions, the graph, open questions) and the identity; vectors are recomputed on
    import. It writes a file, never a key.
    """
    from aether.memory.portable import export_memory

    count = await export_memory(parts.memory, args.path, caller.counter())
    return Exported(exported=count, path=str(args.path))


class ImportArgs(BaseModel):
    """Arguments of ``memory_import``."""

    path: Path = Field(description="A JSONL file, as written by memory_export.")
    skip_invalid: bool = Field(
        default=False, description="Skip (and count) invalid lines (files of records only)."
    )
    on_duplicate: Literal["refuse", "keep-first", "keep-last"] = Field(
        default="refuse",
        description="Lines sharing an id: refuse the file, or keep the first or last.",
    )


@operation(read_only=False, agent=False, mcp=False, memory="upsert_memory")
async def memory_import(parts: Parts, caller: Caller, args: ImportArgs) -> dict[str, Any]:
    """Import a whole-memory export, or a file of daily entries and long-term notes.

    Every line is validated before anything is written: a bad line refuses the whole
    file, naming the line. A whole-memory export restores every key this namespace lacks
    and adds to its collections what they lack; a file of records skips exact
    duplicates. Either takes a checkpoint first.

    Raises:
        InvalidOperationError: a bad line, an unreadable file, or ``skip_invalid`` with
            a whole-memory export; nothing was imported.
    """
    from aether.memory.portable import import_memory, is_portable, read_portable
    from aether.memory.transfer import ImportPolicy, import_records, read_file, with_read_report

    memory = parts.memory
    if is_portable(args.path):
        if args.skip_invalid:
            raise InvalidOperationError(
                "a whole-memory export is imported whole: --skip-invalid applies only "
                "to files of records; nothing was imported"
            )
        entries = read_portable(memory, args.path)
        done = await import_memory(
            memory, parts.checkpoints, entries, caller.counter(len(entries)), actor=caller.actor
        )
        return done.to_dict()
    policy = ImportPolicy("skip" if args.skip_invalid else "refuse", args.on_duplicate)
    read = read_file(memory, args.path, policy)
    checkpoint = None
    if read.records:  # like every destructive action: a checkpoint first
        taken = await parts.checkpoints.create(
            label="before memory import", reason="pre-import", actor=caller.actor
        )
        checkpoint = taken.id
    report = await import_records(memory, read.records, caller.counter(len(read.records)))
    report = dataclasses.replace(report, checkpoint=checkpoint)
    return with_read_report(report, read).to_dict()

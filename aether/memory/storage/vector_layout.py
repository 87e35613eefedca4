"""The one-time move of vectors into compact hashes, and between datatypes.

Namespaces written before compact vectors kept each vector as a JSON float array inside
its document. At start (``MemorySearch.ensure_index``, ``Aether.ready``) such a namespace
is migrated once: every document loses its ``embedding`` array and gains a vector hash,
in journaled batches (a rollback to a checkpoint before the migration restores the old
form, and the next start migrates again). The layout is recorded in the journaled
``ns:memory:layout`` key as ``readings-<datatype>``; a changed
``AETHER_MEMORY__VECTOR_DATATYPE`` re-encodes the vector hashes the same way. A namespace
marked ``vectors-<datatype>`` (written before long memories were read as passages) has
each memory longer than the embedding window re-embedded as its passages
(``aether.memory.storage.readings.passages``), in the same journaled batches. A namespace
without memories is left without a marker (its first start writes nothing).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

import structlog

from aether.codec import text
from aether.memory.storage import vectors
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.readings import WINDOW_CHARS, passages
from aether.memory.storage.records import MemoryRecord, memory_prefixes, record_key
from aether.store.checkpointer import Checkpointer
from aether.store.state import Mutation

__all__ = ["layout_of", "migrate_vectors"]

log = structlog.get_logger(__name__)

BATCH = 200


def layout_of(datatype: str) -> str:
    """The layout name of vectors stored as ``datatype``, long memories as passages."""
    return f"readings-{datatype}"


async def _without_passages(memory: MemoryLayer, keys: list[str]) -> list[str]:
    """Memories longer than the embedding window whose passages were never stored."""
    if memory.embedder is None:
        return []
    out: list[str] = []
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        pipe = memory.client.pipeline(transaction=False)
        for key in batch:
            pipe.execute_command("JSON.STRLEN", key, "$.content")
            pipe.exists(memory.keys.passage_vector(key, 2))
        replies = await pipe.execute(raise_on_error=False)
        for i, key in enumerate(batch):
            length, has = replies[2 * i], replies[2 * i + 1]
            while isinstance(length, list) and length:
                length = length[0]
            if isinstance(length, int) and length > WINDOW_CHARS and not has:
                out.append(key)
    return out


async def _keys_with(
    memory: MemoryLayer, prefixes: list[str], path: str
) -> tuple[list[str], list[str]]:
    """Keys under ``prefixes`` whose JSON document has ``path``, and every key seen."""
    found: list[str] = []
    every: list[str] = []
    for prefix in prefixes:
        batch: list[str] = []
        async for raw in memory.client.scan_iter(match=prefix + "*", count=1000):
            batch.append(text(raw))
            if len(batch) >= 500:
                found += await _having(memory, batch, path)
                every += batch
                batch = []
        found += await _having(memory, batch, path)
        every += batch
    return sorted(found), sorted(every)


async def _having(memory: MemoryLayer, keys: list[str], path: str) -> list[str]:
    if not keys:
        return []
    pipe = memory.client.pipeline(transaction=False)
    for key in keys:
        pipe.execute_command("JSON.TYPE", key, path)
    replies = await pipe.execute(raise_on_error=False)
    return [k for k, reply in zip(keys, replies, strict=True) if _is_array(reply)]


def _is_array(reply: object) -> bool:
    """Whether a ``JSON.TYPE`` reply (``[[b"array"]]``, ``[[]]`` or an error) names an array."""
    while isinstance(reply, list) and reply:
        reply = reply[0]
    return reply in (b"array", "array")


async def _other_datatype(memory: MemoryLayer) -> list[str]:
    """Vector hashes whose vector is not stored in the configured datatype."""
    if memory.embedder is None:
        return []
    size = memory.embedder.dims * (2 if memory.settings.vector_datatype == "float16" else 4)
    scan = memory.client.scan_iter(match=memory.keys.vector_prefix() + "*", count=1000)
    found = sorted([text(raw) async for raw in scan])
    out: list[str] = []
    for start in range(0, len(found), 1000):
        batch = found[start : start + 1000]
        pipe = memory.client.pipeline(transaction=False)
        for key in batch:
            pipe.hstrlen(key, vectors.VECTOR_FIELD)
        lengths = await pipe.execute()
        out += [k for k, n in zip(batch, lengths, strict=True) if n and int(n) != size]
    return out


async def migrate_vectors(
    memory: MemoryLayer,
    checkpoints: Checkpointer | None = None,
    actor: str = "aether",
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Bring the namespace's vectors to the configured layout; returns how many moved.

    Args:
        memory: the memory layer (its settings name the datatype).
        checkpoints: when given, a checkpoint is taken before anything moves.
        actor: who the journal says migrated.
        progress: told (moved, total) after each batch; the caller shows it (this layer
            draws nothing).
    """
    keys = memory.keys
    datatype = memory.settings.vector_datatype
    wanted = layout_of(datatype)
    current = await memory.client.get(keys.memory_layout())
    if current is not None and text(current) == wanted:
        return 0
    in_documents, every = await _keys_with(memory, memory_prefixes(keys), "$.embedding")
    if not every:
        return 0  # nothing to migrate; an empty namespace keeps no marker (writes nothing)
    in_hashes = await _other_datatype(memory)
    long_ones = await _without_passages(memory, every)
    total = len(in_documents) + len(in_hashes) + len(long_ones)
    if total and checkpoints is not None:
        await checkpoints.create(
            label=f"before moving vectors to {wanted}", reason="pre-migration", actor=actor
        )
    if total:
        log.info("moving vectors to compact hashes", vectors=total, layout=wanted)
    moved = 0

    def advance(count: int) -> None:
        nonlocal moved
        moved += count
        if progress is not None:
            progress(moved, total)

    for start in range(0, len(in_documents), BATCH):
        batch = in_documents[start : start + BATCH]
        await memory.store.apply(
            await _from_documents(memory, batch), "memory.migrate_vectors", actor
        )
        advance(len(batch))
    for start in range(0, len(in_hashes), BATCH):
        batch = in_hashes[start : start + BATCH]
        await memory.store.apply(await _reencode(memory, batch), "memory.migrate_vectors", actor)
        advance(len(batch))
    for start in range(0, len(long_ones), BATCH):
        batch = long_ones[start : start + BATCH]
        await memory.store.apply(await _as_passages(memory, batch), "memory.passages", actor)
        advance(len(batch))
    await memory.store.apply(Mutation().set(keys.memory_layout(), wanted), "memory.layout", actor)
    return total


async def _from_documents(memory: MemoryLayer, batch: list[str]) -> Mutation:
    paths = ["$.embedding", *(f"$.{f}" for f in vectors.FILTER_FIELDS)]
    pipe = memory.client.pipeline(transaction=False)
    for key in batch:
        pipe.execute_command("JSON.GET", key, *paths)
    m = Mutation()
    for key, raw in zip(batch, await pipe.execute(), strict=True):
        if raw is None:
            continue
        values: dict[str, list[Any]] = json.loads(raw)
        doc = {p[2:]: v[0] for p, v in values.items() if v}
        vector = doc.pop("embedding", None)
        m.add("JSON.DEL", key, "$.embedding")
        if isinstance(vector, list) and vector:
            vectors.store_vector(m, memory.keys, key, vector, doc, memory.settings.vector_datatype)
    return m


async def _as_passages(memory: MemoryLayer, batch: list[str]) -> Mutation:
    """Each long memory's vector and passages, embedded from its content anew."""
    docs = [doc for doc in await memory.get_docs(batch) if doc is not None]
    texts = [passages(str(doc.get("content", ""))) for doc in docs]
    assert memory.embedder is not None  # _without_passages finds none without one
    found = await memory.embedder.embed_many([t for parts in texts for t in parts])
    m = Mutation()
    at = 0
    for doc, parts in zip(docs, texts, strict=True):
        record = cast(MemoryRecord, dict(doc))
        record["embedding"] = found[at]
        record["passage_embeddings"] = found[at + 1 : at + len(parts)]
        at += len(parts)
        key = record_key(memory.keys, str(doc["kind"]), str(doc["id"]))
        vectors.store_vector(
            m, memory.keys, key, record["embedding"], doc, memory.settings.vector_datatype
        )
        vectors.store_passages(m, memory.keys, key, record, memory.settings.vector_datatype)
    return m


async def _reencode(memory: MemoryLayer, batch: list[str]) -> Mutation:
    pipe = memory.client.pipeline(transaction=False)
    for key in batch:
        pipe.hget(key, vectors.VECTOR_FIELD)
    m = Mutation()
    for key, blob in zip(batch, await pipe.execute(), strict=True):
        wanted = memory.settings.vector_datatype
        stored = vectors.stored_datatype(blob, memory.embedder.dims if memory.embedder else None)
        if not blob or stored is None or stored == wanted:
            continue
        vector = vectors.decode(blob, stored)
        m.hset(key, {vectors.VECTOR_FIELD: vectors.encode(vector, memory.settings.vector_datatype)})
    return m

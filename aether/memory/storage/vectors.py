"""Compact vectors: one binary HASH per memory, beside its JSON document.

RedisJSON holds a float array at about 37 bytes an element and the journal kept a text
copy of it: a 384-d vector cost ~18 KB. Here a memory's vector lives in
``ns:vec:<document key>`` as raw float32 (or float16, ``AETHER_MEMORY__VECTOR_DATATYPE``)
bytes, with copies of the fields vector search filters on, under its own HNSW index
``ns:memory:idx:vectors`` (what redisvl and agent-memory-server index). The JSON document
keeps everything else and stays under the full-text index. Both keys change in the same
journaled batch, so a rollback restores them together (from the inverses, which hold a
replaced or deleted vector as bytes; the value written is kept only while an archive
follows, see aether/store/journal.py).

A filter field that changes on a document (a belief's status) is copied to its vector
hash in the same batch (:func:`refilter`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
from redis.asyncio import Redis
from redisvl.index import AsyncSearchIndex
from redisvl.query import VectorQuery
from redisvl.query.filter import FilterExpression, Tag

from aether.codec import command, text
from aether.keys import Keyspace
from aether.memory.storage.fulltext import ensure_schema, search_command, search_results
from aether.memory.storage.index_schemas import (
    TAG_FIELDS,
    TAG_SEPARATOR,
    VECTOR_FIELD,
    VectorDatatype,
    folded_tag,
)
from aether.memory.storage.index_schemas import vector_schema as schema
from aether.memory.storage.readings import MAX_PASSAGES, READING_DISCOUNT
from aether.memory.storage.records import MemoryRecord
from aether.store.state import Arg, Mutation

__all__ = [
    "EVERY_READING",
    "FILTER_FIELDS",
    "VECTOR_FIELD",
    "FilteredPolicy",
    "VectorDatatype",
    "decode",
    "encode",
    "ensure_vector_index",
    "knn_query",
    "nearest",
    "nearest_rows",
    "put",
    "reading_keys",
    "refilter",
    "remove",
    "similarities",
    "similarity_command",
    "store_passages",
    "store_vector",
    "stored_datatype",
    "vector_index",
]

PASSAGES_FIELD = "passage_embeddings"
FILTER_FIELDS: tuple[str, ...] = (*TAG_FIELDS, "timestamp")
EVERY_READING = Tag("kind") != "no such kind"
"""A filter every reading passes (no kind holds spaces): with it a KNN limited by
``INKEYS`` is a hybrid query, which can be told to compare just the named readings
(``HYBRID_POLICY ADHOC_BF``); the wildcard query cannot be."""
_LITTLE_ENDIAN = {"float32": "<f4", "float16": "<f2"}


def encode(vector: list[float], datatype: VectorDatatype = "float32") -> bytes:
    """The vector as the index stores it (little-endian floats)."""
    return np.asarray(vector, dtype=_LITTLE_ENDIAN[datatype]).tobytes()


def decode(blob: bytes, datatype: VectorDatatype = "float32") -> list[float]:
    """The floats of a stored vector."""
    return [float(x) for x in np.frombuffer(blob, dtype=_LITTLE_ENDIAN[datatype])]


def stored_datatype(blob: bytes, dims: int | None) -> VectorDatatype | None:
    """The datatype a stored vector of ``dims`` floats was written in (``None``: unknown)."""
    if dims is None:
        return None
    if len(blob) == 4 * dims:
        return "float32"
    if len(blob) == 2 * dims:
        return "float16"
    return None


def _filter_values(doc: Mapping[str, object]) -> dict[str, Arg]:
    """The filter fields of any kind's document, as the vector hash holds them."""
    values: dict[str, Arg] = {}
    for name in TAG_FIELDS:
        value = doc.get(name)
        if name == "tags" and isinstance(value, list) and value:
            values[name] = TAG_SEPARATOR.join(folded_tag(str(tag)) for tag in value)
        elif isinstance(value, str) and value:
            values[name] = value
    timestamp = doc.get("timestamp")
    if isinstance(timestamp, int | float):
        values["timestamp"] = float(timestamp)
    return values


def put(
    m: Mutation,
    keys: Keyspace,
    key: str,
    doc: MemoryRecord,
    datatype: VectorDatatype = "float32",
) -> Mutation:
    """Write a memory document; its ``embedding`` (if any) goes to its vector hash.

    A long text's later passages (``passage_embeddings``) go to passage hashes
    (``Keyspace.passage_vector``) with the same filter fields. Passages a longer earlier
    version left are deleted when the new text has passages too; a text shortened to one
    passage keeps them until the memory is removed (content is never edited in place:
    memories are superseded, not overwritten).
    The document is written without the vectors; ``doc`` itself is left unchanged.
    """
    vector = doc.get("embedding")
    stored = {k: v for k, v in doc.items() if k not in (VECTOR_FIELD, PASSAGES_FIELD)}
    m.json_set(key, stored)
    if vector:
        store_vector(m, keys, key, vector, doc, datatype)
        store_passages(m, keys, key, doc, datatype)
    return m


def store_passages(
    m: Mutation,
    keys: Keyspace,
    key: str,
    doc: MemoryRecord,
    datatype: VectorDatatype = "float32",
) -> Mutation:
    """Write the passage hashes of ``doc["passage_embeddings"]`` (see :func:`put`)."""
    more = doc.get("passage_embeddings") or []
    for n, passage in enumerate(more, 2):
        m.hset(
            keys.passage_vector(key, n),
            {VECTOR_FIELD: encode(passage, datatype), **_filter_values(doc)},
        )
    if more:  # a longer earlier version may have left more passages
        for n in range(len(more) + 2, MAX_PASSAGES + 1):
            m.delete(keys.passage_vector(key, n))
    return m


def store_vector(
    m: Mutation,
    keys: Keyspace,
    key: str,
    vector: list[float],
    doc: Mapping[str, object],
    datatype: VectorDatatype = "float32",
) -> Mutation:
    """Write the vector hash of document ``key`` (filter fields copied from ``doc``)."""
    m.delete(keys.vector(key))  # no field of an older version survives
    return m.hset(keys.vector(key), {VECTOR_FIELD: encode(vector, datatype), **_filter_values(doc)})


def remove(m: Mutation, keys: Keyspace, key: str) -> Mutation:
    """Delete a memory document, its vector and any passage vectors."""
    m.delete(key)
    for reading in reading_keys(keys, key):
        m.delete(reading)
    return m


def refilter(m: Mutation, keys: Keyspace, key: str, **fields: str) -> Mutation:
    """Copy changed filter fields (e.g. ``status``) of a document to its vector hash.

    Only for documents that have a vector (the hash is created otherwise).
    """
    unknown = set(fields) - set(TAG_FIELDS)
    if unknown:
        raise ValueError(f"not filter fields: {sorted(unknown)}")
    return m.hset(keys.vector(key), dict(fields))


def vector_index(
    client: Redis, keys: Keyspace, dims: int, datatype: VectorDatatype = "float32"
) -> AsyncSearchIndex:
    """The vector index object (not created)."""
    return AsyncSearchIndex.from_dict(schema(keys, dims, datatype), redis_client=client)


async def ensure_vector_index(
    client: Redis,
    keys: Keyspace,
    dims: int,
    datatype: VectorDatatype = "float32",
    percent: Callable[[float], None] | None = None,
) -> AsyncSearchIndex:
    """Create the vector index if missing, rebuild it if its schema changed; idempotent."""
    return await ensure_schema(
        client, schema(keys, dims, datatype), keys.vector_index_schema(), percent
    )


async def nearest(
    client: Redis,
    index: AsyncSearchIndex,
    keys: Keyspace,
    vector: list[float],
    flt: FilterExpression | None,
    num: int,
    datatype: VectorDatatype = "float32",
) -> list[tuple[str, float]]:
    """The ``num`` nearest memories: (document key, cosine similarity), best first."""
    reply = await command(client, *search_command(index, knn_query(vector, flt, num, datatype)))
    return nearest_rows(keys, reply)


FilteredPolicy = Literal["auto", "batches", "adhoc_bf"]
"""``memory.knn_filtered_policy``: RediSearch's HYBRID_POLICY, or its own choice."""


def knn_query(
    vector: list[float],
    flt: FilterExpression | None,
    num: int,
    datatype: VectorDatatype = "float32",
    policy: FilteredPolicy = "auto",
    ef_runtime: int | None = None,
) -> VectorQuery:
    """The ``num``-nearest-neighbours query, returning the cosine distance alone.

    Args:
        vector: the query's vector.
        flt: the filter, if any.
        num: how many neighbours.
        datatype: the index's vector type.
        policy: how a filter is applied (``memory.knn_filtered_policy``; only with one).
        ef_runtime: HNSW's EF_RUNTIME (``memory.knn_ef_runtime``; ``None``: the default).
    """
    filtered = flt is not None and str(flt) != "*"
    return VectorQuery(
        vector,
        VECTOR_FIELD,
        filter_expression=flt,
        num_results=num,
        return_fields=[],
        dtype=datatype,
        hybrid_policy=policy.upper() if filtered and policy != "auto" else None,
        ef_runtime=ef_runtime,
    )


def nearest_rows(
    keys: Keyspace, reply: list[Any], openings: dict[str, float] | None = None
) -> list[tuple[str, float]]:
    """(document key, cosine similarity) of a raw :func:`knn_query` reply, best first.

    A memory with several readings (passages, a contextual reading) is scored by its best
    one, the extra readings discounted by ``READING_DISCOUNT``.

    Args:
        keys: the namespace's keyspace.
        reply: the raw reply.
        openings: when given, filled with the similarity of each memory's own opening
            reading (its first passage, or its whole text), where the reply holds it.
    """
    rows: dict[str, float] = {}
    for vector_key, _, fields in search_results(reply, scores=False, fields=True):
        key = text(vector_key)
        similarity = 1.0 - float(fields[b"vector_distance"])
        doc = keys.document_of_vector(key)
        if "#" in key:
            similarity -= READING_DISCOUNT
        elif openings is not None:
            openings[doc] = similarity
        rows[doc] = max(rows.get(doc, -2.0), similarity)
    return sorted(rows.items(), key=lambda row: row[1], reverse=True)


def reading_keys(keys: Keyspace, doc_key: str) -> list[str]:
    """Every hash a memory's readings may live in: its vector, then its passages."""
    return keys.readings(doc_key, MAX_PASSAGES)


async def similarities(
    client: Redis,
    index: AsyncSearchIndex,
    keys: Keyspace,
    doc_keys: list[str],
    vector: list[float],
    datatype: VectorDatatype = "float32",
) -> dict[str, float]:
    """The cosine similarity of each memory to ``vector``, scored as :func:`nearest_rows`.

    For memories a KNN did not return (found by full text alone): one KNN query limited
    to their readings (``INKEYS``), so Redis compares them where they are stored and the
    best reading speaks for each memory. A memory without a vector is left out.
    """
    if not doc_keys:
        return {}
    reply = await command(client, *similarity_command(index, keys, doc_keys, vector, datatype))
    return dict(nearest_rows(keys, reply))


def similarity_command(
    index: AsyncSearchIndex,
    keys: Keyspace,
    doc_keys: list[str],
    vector: list[float],
    datatype: VectorDatatype = "float32",
    *,
    openings_only: bool = False,
) -> list[Any]:
    """The raw KNN command of :func:`similarities` (its reply is read by :func:`nearest_rows`).

    For a caller that pipelines it with other commands; ``doc_keys`` must not be empty.
    With ``openings_only`` it compares each memory's own opening reading alone (its
    first passage, or its whole text), not its other readings.

    The named readings are compared one by one (:data:`EVERY_READING`, brute force): a
    plain KNN limited by ``INKEYS`` walks the whole graph for readings far from the query
    and, at a million memories, ran into RediSearch's 500 ms timeout, its reply a row
    without an id (decision 0011).
    """
    per_memory = 1 if openings_only else MAX_PASSAGES
    readings = [reading for key in doc_keys for reading in keys.readings(key, per_memory)]
    query = knn_query(vector, EVERY_READING, len(readings), datatype, "adhoc_bf")
    query.limit_ids(*readings)
    return search_command(index, query)

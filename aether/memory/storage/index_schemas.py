"""The two search indexes' schemas, and whether Redis already holds them as wanted.

The schemas are plain dicts (redisvl's schema format): building one imports neither
redisvl nor numpy, so a short-lived command can tell in two round trips that the indexes
are current (:func:`indexes_current`) and skip the search engine it does not use.
``aether.memory.storage.fulltext`` and ``aether.memory.storage.vectors`` create them.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Literal

from aether.codec import text
from aether.keys import Keyspace
from aether.memory.storage.records import memory_prefixes

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = [
    "TAG_FIELDS",
    "TAG_SEPARATOR",
    "VECTOR_FIELD",
    "VectorDatatype",
    "fingerprint",
    "folded_tag",
    "indexes_current",
    "text_schema",
    "vector_schema",
]

VectorDatatype = Literal["float32", "float16"]
VECTOR_FIELD = "embedding"
# what a filtered KNN needs (retrieval.search_filter.SearchFilter and the belief neighbours' status)
TAG_FIELDS: tuple[str, ...] = ("kind", "source", "tags", "session", "status", "scope")
# Tags may hold spaces and commas; no tag holds a control character, so this separator
# never splits one.
TAG_SEPARATOR = "\x1f"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def folded_tag(tag: str) -> str:
    """A tag with its ASCII letters in lower case, as a tag filter compares it.

    A vector hash keeps its memory's tags so (the document keeps them as written): the
    tag filter matches either way, and a tag's own index (``scoped_indexes``) can match
    them without a case-folding function (RediSearch's ``lower()`` in an index's
    ``FILTER`` keeps about a kilobyte per hash it reads, never freed).
    """
    return tag.translate(_ASCII_LOWER)


def text_schema(keys: Keyspace) -> dict[str, Any]:
    """The redisvl schema of the full-text memory index."""
    fields: list[dict[str, Any]] = [
        {"name": "content", "type": "text", "path": "$.content", "attrs": {"weight": 2.0}},
        {"name": "kind", "type": "tag", "path": "$.kind"},
        {"name": "source", "type": "tag", "path": "$.source"},
        {"name": "tags", "type": "tag", "path": "$.tags[*]", "attrs": {"separator": TAG_SEPARATOR}},
        {"name": "session", "type": "tag", "path": "$.session"},
        {"name": "status", "type": "tag", "path": "$.status"},
        {"name": "scope", "type": "tag", "path": "$.scope"},
        {"name": "pattern", "type": "tag", "path": "$.pattern"},
        {"name": "hash", "type": "tag", "path": "$.hash"},
        {"name": "slots", "type": "tag", "path": "$.slots[*]"},
        {
            "name": "timestamp",
            "type": "numeric",
            "path": "$.timestamp",
            "attrs": {"sortable": True},
        },
        {"name": "score", "type": "numeric", "path": "$.score", "attrs": {"sortable": True}},
    ]
    return {
        "index": {
            "name": keys.memory_index(),
            "prefix": memory_prefixes(keys),
            "storage_type": "json",
        },
        "fields": fields,
    }


def vector_schema(keys: Keyspace, dims: int, datatype: VectorDatatype) -> dict[str, Any]:
    """The redisvl schema of the vector index."""
    fields: list[dict[str, Any]] = [
        {"name": name, "type": "tag", "attrs": {"separator": TAG_SEPARATOR}} for name in TAG_FIELDS
    ]
    fields.append({"name": "timestamp", "type": "numeric"})
    fields.append(
        {
            "name": VECTOR_FIELD,
            "type": "vector",
            "attrs": {
                "algorithm": "hnsw",
                "dims": dims,
                "distance_metric": "cosine",
                "datatype": datatype,
            },
        }
    )
    return {
        "index": {
            "name": keys.vector_index(),
            "prefix": keys.vector_prefix(),
            "storage_type": "hash",
        },
        "fields": fields,
    }


def fingerprint(wanted: dict[str, Any]) -> str:
    """The fingerprint kept beside an index: it changes whenever its schema does."""
    return hashlib.sha1(json.dumps(wanted, sort_keys=True).encode()).hexdigest()


async def indexes_current(
    client: Redis, keys: Keyspace, dims: int | None, datatype: VectorDatatype
) -> bool:
    """Whether both indexes exist with the wanted schemas (``dims`` ``None``: no vectors).

    Two round trips and no redisvl: when this is true, ensuring the indexes would do
    nothing.
    """
    wanted = [(text_schema(keys), keys.memory_index_schema())]
    if dims is not None:
        wanted.append((vector_schema(keys, dims, datatype), keys.vector_index_schema()))
    pipe = client.pipeline(transaction=False)
    pipe.execute_command("FT._LIST")
    for _, fingerprint_key in wanted:
        pipe.get(fingerprint_key)
    listed, *kept = await pipe.execute()
    names = {text(name) for name in listed}
    return all(
        schema["index"]["name"] in names
        and stored is not None
        and text(stored) == fingerprint(schema)
        for (schema, _), stored in zip(wanted, kept, strict=True)
    )

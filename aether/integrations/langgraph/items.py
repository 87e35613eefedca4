"""Namespaced items: a framework's long-term key-value store, searchable as memory.

LangGraph's ``BaseStore`` (:mod:`aether.integrations.langgraph`) keeps JSON items under
hierarchical namespaces (``("users", "u1", "prefs")``). Here each item is a journaled
item hash (``lg_item``); an item given a text to index is also a long-term memory of
the namespace, written in the same change, so aether's hybrid search finds it (with its
relevance floor), the context can use it, and an erasure removes both. The memory
carries the namespace as its scope (``workspace:<labels joined by '.'>``), one tag per
namespace prefix (``lg:users``, ``lg:users.u1``...), so a search can be limited to a
prefix, and one tag per field of the value (:func:`value_tag`), so a search's filter on
the value is applied in the query rather than after it.

Readers tolerate what an erasure leaves: an index may name an item that is gone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aether.codec import byte_map, text, texts
from aether.errors import InvalidOperationError
from aether.ids import check_id
from aether.integrations.langgraph.threads import check_name, members
from aether.keys import STORE_TAG_PREFIX
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import MAX_TAGS
from aether.memory.tiers.longterm import build_memory
from aether.memory.tiers.memory_index import count_ops
from aether.store.state import Mutation

__all__ = [
    "COMPLETE_TAG",
    "STORE_TAG",
    "ItemWrite",
    "NamespacedItems",
    "StoredItem",
    "check_namespace",
    "prefix_tag",
    "value_tag",
]

Namespace = tuple[str, ...]
MAX_VALUE_BYTES = 1_000_000
"""The largest item value (as JSON) the store takes."""
TAG_PREFIX = STORE_TAG_PREFIX
STORE_TAG = "langgraph-store"
"""The tag every indexed item's memory carries (a search over the whole store)."""


def _dotted(namespace: Namespace) -> str:
    return ".".join(namespace)


def prefix_tag(prefix: Namespace) -> str:
    """The tag every indexed item under ``prefix`` carries (a digest when too long)."""
    dotted = _dotted(prefix)
    tag = TAG_PREFIX + dotted
    if len(tag) <= 64 and tag.isprintable():
        return tag
    return "lg#" + hashlib.sha1(dotted.encode()).hexdigest()[:20]


COMPLETE_TAG = "lgv:all"
"""On a memory whose value has a tag for every field (most: a memory has 32 tags)."""


def _canonical(value: Any) -> Any:
    """A value as a filter compares it: 2.0 is 2, a list's items likewise."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def value_tag(path: Sequence[str], value: Any) -> str:
    """The tag of a value's field ``path`` (keys from the top) holding ``value``."""
    raw = json.dumps([list(path), _canonical(value)], sort_keys=True, ensure_ascii=False)
    return "lgv:" + hashlib.sha1(raw.encode()).hexdigest()[:16]


def _fields(value: dict[str, Any], path: tuple[str, ...] = ()) -> list[str]:
    """The tags of every field of a value (nested objects by path; a list is one field)."""
    out: list[str] = []
    for key, item in value.items():
        if isinstance(item, dict):
            out.extend(_fields(item, (*path, str(key))))
        else:
            out.append(value_tag((*path, str(key)), item))
    return out


def _tags(namespace: Namespace, value: dict[str, Any]) -> list[str]:
    """A memory's tags: the store's, the namespace prefixes', then the value's fields'."""
    tags = [STORE_TAG, *(prefix_tag(namespace[:n]) for n in range(1, len(namespace) + 1))]
    room = MAX_TAGS - len(tags) - 1
    fields = list(dict.fromkeys(_fields(value)))
    if 0 <= len(fields) <= room:
        return [*tags, *fields, COMPLETE_TAG]
    return [*tags, *fields[: max(0, room + 1)]][:MAX_TAGS]


def _scope(namespace: Namespace) -> str | None:
    dotted = _dotted(namespace)
    try:
        return f"workspace:{check_id(dotted)}"
    except InvalidOperationError:
        return None


def check_namespace(namespace: Namespace) -> Namespace:
    """A namespace the store takes: 1+ non-empty text labels without ``.``.

    Raises:
        InvalidOperationError: otherwise.
    """
    if not isinstance(namespace, tuple) or not namespace:
        raise InvalidOperationError("a store namespace is a non-empty tuple of labels")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidOperationError(
                f"invalid namespace label {str(label)[:40]!r}: non-empty text without '.'"
            )
    check_name(_dotted(namespace), "namespace")
    return namespace


@dataclass(frozen=True)
class StoredItem:
    """One item as stored.

    Attributes:
        namespace: its namespace.
        key: its key in the namespace.
        value: its JSON value.
        created_at: when it was first put (epoch seconds).
        updated_at: when it was last put.
        expires_at: when it expires (``None``: never).
        ttl_s: its time to live, renewed on read when asked (``None``: none).
        memory: the id of the memory search finds it by (``""``: not indexed).
    """

    namespace: Namespace
    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float
    expires_at: float | None
    ttl_s: float | None
    memory: str


@dataclass(frozen=True)
class ItemWrite:
    """A put (``value``) or a delete (``value`` ``None``) of one item.

    Attributes:
        namespace: the item's namespace.
        key: its key.
        value: the new value, or ``None`` to delete it.
        index_text: the text to index it by (``None``: not searchable as memory).
        ttl_s: its time to live in seconds (``None``: none).
    """

    namespace: Namespace
    key: str
    value: dict[str, Any] | None
    index_text: str | None = None
    ttl_s: float | None = None


def _parse(raw: dict[bytes, bytes]) -> StoredItem | None:
    if b"value" not in raw or b"namespace" not in raw:
        return None
    expires = float(raw.get(b"expires_at", b"0") or 0)
    ttl = float(raw.get(b"ttl_s", b"0") or 0)
    return StoredItem(
        namespace=tuple(json.loads(raw[b"namespace"])),
        key=raw[b"key"].decode(),
        value=json.loads(raw[b"value"]),
        created_at=float(raw[b"created_at"]),
        updated_at=float(raw[b"updated_at"]),
        expires_at=expires or None,
        ttl_s=ttl or None,
        memory=raw.get(b"memory", b"").decode(),
    )


class NamespacedItems:
    """A namespace's store items.

    Args:
        memory: the namespace's memory layer.
    """

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys
        self.client = memory.client

    async def get_many(self, refs: Sequence[tuple[Namespace, str]]) -> list[StoredItem | None]:
        """Items by (namespace, key), ``None`` where missing, in one round trip."""
        if not refs:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for namespace, key in refs:
                pipe.hgetall(self.keys.lg_item(namespace, key))
            rows = await pipe.execute()
        return [_parse(byte_map(row)) for row in rows]

    async def write(self, writes: Sequence[ItemWrite], now: float) -> None:
        """Apply puts and deletes in one journaled change (the last write of a key wins).

        Raises:
            InvalidOperationError: a bad namespace, key or value, a value too large, or a
                text to index that memory refuses; nothing is written.
        """
        last: dict[tuple[Namespace, str], ItemWrite] = {}
        for write in writes:
            check_namespace(write.namespace)
            check_name(write.key, "item key")
            if write.value is not None and not isinstance(write.value, dict):
                raise InvalidOperationError("a store value is a JSON object (a dict)")
            last[(write.namespace, write.key)] = write
        if not last:
            return
        current = dict(zip(last, await self.get_many(list(last)), strict=True))
        m = Mutation()
        new_docs = []
        gone_docs = []
        changed_namespaces: set[Namespace] = set()
        for (namespace, key), write in last.items():
            old = current[(namespace, key)]
            item_key = self.keys.lg_item(namespace, key)
            if old is not None and old.memory:
                gone_docs.append(old.memory)
            if write.value is None:
                if old is None:
                    continue
                m.delete(item_key)
                m.zrem(self.keys.lg_store_keys(namespace), key)
                changed_namespaces.add(namespace)
                continue
            try:
                value_json = json.dumps(write.value, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise InvalidOperationError(f"a store value must be JSON: {e}") from e
            if len(value_json.encode()) > MAX_VALUE_BYTES:
                raise InvalidOperationError(f"a store value is at most {MAX_VALUE_BYTES} bytes")
            memory = ""
            if write.index_text is not None and write.index_text.strip():
                doc = build_memory(
                    self.memory,
                    _fit(write.index_text, self.memory.settings.max_content_bytes),
                    tags=_tags(namespace, write.value),
                    timestamp=now,
                )
                scope = _scope(namespace)
                if scope is not None:
                    doc["scope"] = scope
                memory = doc["id"]
                new_docs.append(doc)
                ref = json.dumps([list(namespace), key], ensure_ascii=False)
                m.hset(self.keys.lg_store_memories(), {memory: ref})
            ttl = float(write.ttl_s) if write.ttl_s else 0.0
            m.hset(
                item_key,
                {
                    "namespace": json.dumps(list(namespace), ensure_ascii=False),
                    "key": key,
                    "value": value_json,
                    "created_at": old.created_at if old is not None else now,
                    "updated_at": now,
                    "expires_at": now + ttl if ttl else 0,
                    "ttl_s": ttl,
                    "memory": memory,
                },
            )
            m.zadd(self.keys.lg_store_keys(namespace), {key: now})
            m.sadd(self.keys.lg_store_namespaces(), _dotted(namespace))
        await self.memory.attach_embeddings(new_docs)
        for doc in new_docs:
            self.memory.put(m, self.keys.longterm(doc["id"]), doc)
        count_ops(m, self.keys, new_docs)
        if gone_docs:
            old_docs = await self.memory.get_docs([self.keys.longterm(i) for i in gone_docs])
            for memory_id, old_doc in zip(gone_docs, old_docs, strict=True):
                if old_doc is not None:
                    self.memory.remove(m, self.keys.longterm(memory_id))
            count_ops(m, self.keys, [d for d in old_docs if d is not None], sign=-1)
            m.hdel(self.keys.lg_store_memories(), *gone_docs)
        if not m.ops:
            return
        await self.memory.store.apply(m, "store.write")
        await self._drop_empty(changed_namespaces)

    async def _drop_empty(self, namespaces: set[Namespace]) -> None:
        empty = [
            ns for ns in namespaces if not await self.client.zcard(self.keys.lg_store_keys(ns))
        ]
        if empty:
            m = Mutation().srem(self.keys.lg_store_namespaces(), *(_dotted(ns) for ns in empty))
            await self.memory.store.apply(m, "store.namespaces")

    async def touch(self, items: Sequence[StoredItem], now: float) -> None:
        """Renew the expiry of items that have a time to live (one journaled change)."""
        m = Mutation()
        for item in items:
            if item.ttl_s:
                m.hset(
                    self.keys.lg_item(item.namespace, item.key), {"expires_at": now + item.ttl_s}
                )
        if m.ops:
            await self.memory.store.apply(m, "store.touch")

    async def namespaces(self) -> list[Namespace]:
        """Every namespace that holds items, sorted."""
        dotted = members(await self.client.smembers(self.keys.lg_store_namespaces()))
        return sorted(tuple(d.split(".")) for d in dotted)

    async def keys_in(self, namespace: Namespace) -> list[str]:
        """The item keys of a namespace, in the order they were last put."""
        return texts(await self.client.zrange(self.keys.lg_store_keys(namespace), 0, -1))

    async def items_of_memories(self, memory_ids: Sequence[str]) -> list[StoredItem | None]:
        """The items the given memories index (``None`` where none is left)."""
        if not memory_ids:
            return []
        raw = await self.client.hmget(self.keys.lg_store_memories(), list(memory_ids))
        refs: list[tuple[Namespace, str] | None] = []
        for value in raw:
            refs.append(None if value is None else self._ref(text(value)))
        found = await self.get_many([r for r in refs if r is not None])
        it = iter(found)
        return [None if r is None else next(it) for r in refs]

    @staticmethod
    def _ref(stored: str) -> tuple[Namespace, str] | None:
        """The (namespace, key) a memory names (``[labels, key]`` as JSON)."""
        try:
            labels, key = json.loads(stored)
        except (ValueError, TypeError):
            return None
        return tuple(labels), str(key)

    async def expired(self, now: float) -> list[StoredItem]:
        """Items whose time to live has passed."""
        out: list[StoredItem] = []
        for namespace in await self.namespaces():
            keys = await self.keys_in(namespace)
            for item in await self.get_many([(namespace, k) for k in keys]):
                if item is not None and item.expires_at is not None and item.expires_at <= now:
                    out.append(item)
        return out


def _fit(content: str, max_bytes: int) -> str:
    """``content`` cut to at most ``max_bytes`` of UTF-8 (on a character boundary)."""
    raw = content.encode()
    if len(raw) <= max_bytes:
        return content
    return raw[:max_bytes].decode("utf-8", "ignore")

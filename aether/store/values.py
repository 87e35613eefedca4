"""A key's value decoded by type, and DUMP payloads decoded and made through scratch keys.

Shared by what reads values whatever their type: ``checkpoint diff`` (a checkpoint's
pre-images against now) and erasure (which judges and rewrites values, the journal's
pre-images included). A payload is decoded by restoring it into a short-lived scratch
key of the namespace (so a cluster keeps it in the namespace's slot), read, then deleted;
a crash leaves it to expire.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from redis.asyncio import Redis

from aether.codec import command, text
from aether.errors import StoreError
from aether.keys import Keyspace

__all__ = [
    "ABSENT",
    "Value",
    "ValueType",
    "decode_image",
    "decode_images",
    "encode_value",
    "read_kinds",
    "read_screened_documents",
    "read_screened_values",
    "read_value",
    "read_values",
]

# how long a decoded pre-image may outlive a crashed reader, in milliseconds
SCRATCH_TTL_MS = 60_000

ValueType = Literal["none", "string", "hash", "json", "list", "set", "zset"]


@dataclass(frozen=True)
class Value:
    """A key's content, decoded: ``content`` by type (None when the key is absent).

    string: bytes; hash: field (str) -> bytes; json: the parsed document; list: bytes
    items; set: a set of bytes; zset: member (bytes) -> score.
    """

    type: ValueType
    content: Any = None


ABSENT = Value("none")


def _decoded(kind: str, reply: Any) -> Value:
    if kind == "none":
        return ABSENT
    if kind == "string":
        return Value("string", reply)
    if kind == "hash":
        return Value("hash", {text(k): v for k, v in reply.items()})
    if kind == "list":
        return Value("list", list(reply))
    if kind == "set":
        return Value("set", set(reply))
    if kind == "zset":
        pairs = cast(list[tuple[bytes, float]], reply)
        return Value("zset", {member: float(score) for member, score in pairs})
    if kind == "ReJSON-RL":
        return Value("json", json.loads(text(reply))[0])
    return Value("string", f"<{kind}>".encode())


def _queue_read(pipe: Any, key: str, kind: str) -> None:
    if kind == "string":
        pipe.get(key)
    elif kind == "hash":
        pipe.hgetall(key)
    elif kind == "list":
        pipe.lrange(key, 0, -1)
    elif kind == "set":
        pipe.smembers(key)
    elif kind == "zset":
        pipe.zrange(key, 0, -1, withscores=True)
    elif kind == "ReJSON-RL":
        pipe.execute_command("JSON.GET", key, "$")
    else:
        pipe.exists(key)


async def read_value(client: Redis, key: str) -> Value:
    """The content of ``key`` now, by its type."""
    return (await read_values(client, [key]))[0]


async def read_kinds(client: Redis, keys: Sequence[str]) -> list[str]:
    """The Redis type of each key (``none``: missing), in one round trip."""
    if not keys:
        return []
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.type(key)
    return [text(k) for k in await pipe.execute()]


async def read_values(
    client: Redis, keys: Sequence[str], kinds: Sequence[str] | None = None
) -> list[Value]:
    """The contents of many keys, in two round trips (their types, then their values).

    Args:
        client: the Redis client.
        keys: the keys to read.
        kinds: their types, when the caller has read them already (:func:`read_kinds`):
            then the values take one round trip.
    """
    if not keys:
        return []
    kinds = kinds if kinds is not None else await read_kinds(client, keys)
    replies = await _replies(client, keys, kinds)
    return [_decoded(kind, reply) for kind, reply in zip(kinds, replies, strict=True)]


async def read_screened_values(
    client: Redis, keys: Sequence[str], kinds: Sequence[str], screen: Callable[[bytes], bool]
) -> list[Value | None]:
    """:func:`read_values`, decoding only the JSON documents ``screen`` lets through.

    Args:
        client: the Redis client.
        keys: the keys to read.
        kinds: their types (:func:`read_kinds`).
        screen: told each JSON document's raw text; a document it answers ``False`` for
            is not decoded and reads as ``None`` (an erasure's scan decodes only the
            documents that may hold its text).
    """
    replies = await _replies(client, keys, kinds)
    return [_screened(kind, reply, screen) for kind, reply in zip(kinds, replies, strict=True)]


def _screened(kind: str, reply: Any, screen: Callable[[bytes], bool]) -> Value | None:
    """A reply decoded, or ``None`` for a JSON document ``screen`` answers no for."""
    return None if kind == "ReJSON-RL" and not screen(reply) else _decoded(kind, reply)


async def read_screened_documents(
    client: Redis,
    keys: Sequence[str],
    is_document: Callable[[str], bool],
    screen: Callable[[bytes], bool],
    screen_page: Callable[[list[bytes]], list[bool]] | None = None,
) -> tuple[list[str], list[Value | None]]:
    """:func:`read_screened_values` of keys most of which are JSON documents, with their types.

    The keys ``is_document`` names are read with one ``JSON.MGET`` straight away, instead
    of a type and then a value for each (most of an erasure's scan's replies); one that
    turns out not to be a document (another type, or gone) is read as any other key.

    Args:
        client: the Redis client.
        keys: the keys to read.
        is_document: whether a key is named like a JSON document.
        screen: as :func:`read_screened_values` takes it.
        screen_page: ``screen``'s answers for the page's documents at once, when a quicker
            test of them together is at hand (a million documents are screened in pages).

    Returns:
        Each key's Redis type (:func:`read_kinds`) and its value as
        :func:`read_screened_values` gives it.
    """
    guessed = [key for key in keys if is_document(key)]
    # one reply for the page: JSON.MGET answers nil for a key gone or of another type
    raws = await command(client, "JSON.MGET", *guessed, "$") if guessed else []
    documents = {k: raw for k, raw in zip(guessed, raws, strict=True) if isinstance(raw, bytes)}
    found = list(documents.values())
    passes = screen_page(found) if screen_page is not None else [screen(raw) for raw in found]
    decoded = {
        k: _decoded("ReJSON-RL", raw) if ok else None
        for (k, raw), ok in zip(documents.items(), passes, strict=True)
    }
    rest = [k for k in keys if k not in documents]
    rest_kinds = await read_kinds(client, rest)
    read = dict(zip(rest, rest_kinds, strict=True))
    values = dict(
        zip(rest, await read_screened_values(client, rest, rest_kinds, screen), strict=True)
    )
    kinds: list[str] = []
    out: list[Value | None] = []
    for key in keys:
        if key in documents:
            kinds.append("ReJSON-RL")
            out.append(decoded[key])
        else:
            kinds.append(read[key])
            out.append(values[key])
    return kinds, out


async def _replies(client: Redis, keys: Sequence[str], kinds: Sequence[str]) -> list[Any]:
    if not keys:
        return []
    pipe = client.pipeline(transaction=False)
    for key, kind in zip(keys, kinds, strict=True):
        _queue_read(pipe, key, kind)
    replies: list[Any] = await pipe.execute()
    return replies


async def decode_image(client: Redis, keys: Keyspace, payload: bytes) -> Value:
    """The value a DUMP payload holds."""
    return (await decode_images(client, keys, [payload]))[0]


async def decode_images(client: Redis, keys: Keyspace, payloads: Sequence[bytes]) -> list[Value]:
    """The values many DUMP payloads hold, in four round trips whatever their number.

    Each is restored into its own short-lived scratch key, read, and the scratch keys
    deleted (they expire on their own if this is cut short).
    """
    if not payloads:
        return []
    scratches = [keys.diff_scratch(secrets.token_hex(8)) for _ in payloads]
    pipe = client.pipeline(transaction=False)
    for scratch, payload in zip(scratches, payloads, strict=True):
        pipe.execute_command("RESTORE", scratch, SCRATCH_TTL_MS, payload, "REPLACE")
    try:
        await pipe.execute()
        return await read_values(client, scratches)
    finally:
        await client.delete(*scratches)


async def encode_value(client: Redis, keys: Keyspace, value: Value) -> bytes:
    """A DUMP payload of a value (written into a scratch key, dumped, deleted).

    Raises:
        StoreError: the value is absent or empty (a key cannot hold it).
    """
    scratch = keys.diff_scratch(secrets.token_hex(8))
    content = value.content
    pipe = client.pipeline(transaction=True)
    if value.type == "string":
        pipe.set(scratch, content)
    elif value.type == "hash" and content:
        pipe.hset(scratch, mapping=content)
    elif value.type == "list" and content:
        pipe.rpush(scratch, *content)
    elif value.type == "set" and content:
        pipe.sadd(scratch, *content)
    elif value.type == "zset" and content:
        pipe.zadd(scratch, content)
    elif value.type == "json":
        pipe.execute_command("JSON.SET", scratch, "$", json.dumps(content, ensure_ascii=False))
    else:
        raise StoreError(f"a {value.type} value with no content cannot be encoded")
    pipe.pexpire(scratch, SCRATCH_TTL_MS)
    pipe.dump(scratch)
    pipe.delete(scratch)
    replies = await pipe.execute()
    return bytes(replies[-2])

"""Framework threads: a graph runtime's checkpoints, channel values and pending writes.

An agent built on LangGraph keeps its threads here, in its own namespace, beside its
memory (:mod:`aether.integrations.langgraph` is the adapter; this tier knows nothing of
LangGraph's types). Every write is a journaled change like any other state, so
``aether checkpoint rollback`` rewinds a thread together with the memory, ``aether
erase`` reaches it, and ``redis-cli`` shows it (keys in :mod:`aether.keys`, ``lg_*``).

Values arrive serialized (a type name and bytes, as the framework's serializer made
them) with a readable rendering, ``text``: the bytes are what the framework reads back,
the rendering is what an erasure matches (each checkpoint, blob and write is one item
hash, erased whole when its rendering holds the text) and what an operator reads.

Readers tolerate what an erasure leaves: an index may name a key that is gone; that
checkpoint, write or channel value is then absent (why whole items, and not a rewritten
state: docs/decisions/0003-erasing-from-langgraph-threads.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from aether.codec import byte_map, text, texts
from aether.errors import InvalidOperationError
from aether.memory.storage.layer import MemoryLayer
from aether.store.state import Mutation

__all__ = ["Blob", "StoredCheckpoint", "StoredWrite", "ThreadStore", "Typed", "check_name"]

Typed = tuple[str, bytes]
"""A serialized value: the serializer's type name and its bytes."""
MAX_NAME = 1000
"""The longest thread id, namespace, channel or task id accepted (a key part)."""


@dataclass(frozen=True)
class StoredWrite:
    """One pending write of a task, stored against a checkpoint.

    Attributes:
        task_id: the task that wrote it.
        idx: its position among the task's writes (negative for special writes).
        channel: the channel written.
        value: the serialized value.
        task_path: the task's path (orders the writes of one step).
        text: a readable rendering of the value.
    """

    task_id: str
    idx: int
    channel: str
    value: Typed
    task_path: str = ""
    text: str = ""


@dataclass(frozen=True)
class StoredCheckpoint:
    """One checkpoint as stored: without channel values, which live in blobs.

    Attributes:
        thread_id: its thread.
        checkpoint_ns: its namespace (``""`` for the root graph).
        checkpoint_id: its id (ordered by time).
        parent_id: the checkpoint it follows, if any.
        checkpoint: the serialized checkpoint (channel values removed).
        metadata: the serialized metadata.
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    checkpoint: Typed
    metadata: Typed


@dataclass(frozen=True)
class Blob:
    """One channel's value at one version (``value`` ``None``: the channel is empty)."""

    channel: str
    version: str
    value: Typed | None
    text: str = ""


def check_name(value: str, what: str) -> str:
    """``value`` when it can be part of a key (text of at most :data:`MAX_NAME` characters).

    Raises:
        InvalidOperationError: not text, or too long.
    """
    if not isinstance(value, str):
        raise InvalidOperationError(f"{what} must be text, got {type(value).__name__}")
    if len(value) > MAX_NAME:
        raise InvalidOperationError(f"{what} is longer than {MAX_NAME} characters")
    return value


def _typed(raw: dict[bytes, bytes], type_field: bytes, data_field: bytes) -> Typed | None:
    if type_field not in raw or data_field not in raw:
        return None
    return raw[type_field].decode(), raw[data_field]


class ThreadStore:
    """A namespace's framework threads: checkpoints, their channel values and writes.

    Args:
        memory: the namespace's memory layer (its journaled store and client).
    """

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys
        self.client = memory.client

    # -- writing ---------------------------------------------------------------------
    async def put(
        self,
        stored: StoredCheckpoint,
        blobs: Sequence[Blob],
        *,
        text_rendering: str = "",
    ) -> None:
        """Store a checkpoint and the channel values new in it, in one journaled change."""
        thread, ns = (
            check_name(stored.thread_id, "thread id"),
            check_name(stored.checkpoint_ns, "namespace"),
        )
        cid = check_name(stored.checkpoint_id, "checkpoint id")
        if not cid:
            raise InvalidOperationError("a checkpoint needs an id")
        m = Mutation()
        fields: dict[str, str | bytes] = {
            "checkpoint_type": stored.checkpoint[0],
            "checkpoint": stored.checkpoint[1],
            "metadata_type": stored.metadata[0],
            "metadata": stored.metadata[1],
            "parent": stored.parent_id or "",
            "text": text_rendering,
        }
        m.hset(self.keys.lg_checkpoint(thread, ns, cid), fields)
        m.zadd(self.keys.lg_checkpoints(thread, ns), {cid: 0})
        m.sadd(self.keys.lg_namespaces(thread), ns)
        m.sadd(self.keys.lg_threads(), thread)
        blob_keys: list[str] = []
        for blob in blobs:
            key = self.keys.lg_blob(thread, ns, check_name(blob.channel, "channel"), blob.version)
            value = blob.value or ("empty", b"")
            m.hset(
                key,
                {
                    "ns": ns,
                    "channel": blob.channel,
                    "version": blob.version,
                    "type": value[0],
                    "data": value[1],
                    "text": blob.text,
                },
            )
            blob_keys.append(key)
        if blob_keys:
            m.sadd(self.keys.lg_blobs(thread), *blob_keys)
        await self.memory.store.apply(m, "threads.put")

    async def put_writes(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, writes: Sequence[StoredWrite]
    ) -> None:
        """Store a task's pending writes against a checkpoint, in one journaled change.

        A regular write (``idx >= 0``) already stored is kept as it was (a task retried
        after a crash writes the same); a special one (an error, an interrupt) replaces it.
        """
        if not writes:
            return
        thread, ns = check_name(thread_id, "thread id"), check_name(checkpoint_ns, "namespace")
        cid = check_name(checkpoint_id, "checkpoint id")
        index = self.keys.lg_writes(thread, ns, cid)
        present = set(members(await self.client.smembers(index)))
        m = Mutation()
        added: list[str] = []
        for write in writes:
            key = self.keys.lg_write(
                thread, ns, cid, check_name(write.task_id, "task id"), write.idx
            )
            if write.idx >= 0 and key in present:
                continue
            check_name(write.channel, "channel")
            m.hset(key, _write_fields(write))
            added.append(key)
        if not added:
            return
        m.sadd(index, *added)
        await self.memory.store.apply(m, "threads.put_writes")

    async def delete_thread(self, thread_id: str) -> int:
        """Delete a thread's checkpoints, values and writes (journaled); returns the keys."""
        keys = await self._thread_keys(check_name(thread_id, "thread id"))
        if not keys:
            return 0
        m = Mutation()
        for key in keys:
            m.delete(key)
        m.srem(self.keys.lg_threads(), thread_id)
        await self.memory.store.apply(m, "threads.delete")
        return len(keys)

    async def delete_checkpoints(
        self, thread_id: str, checkpoint_ns: str, checkpoint_ids: Iterable[str]
    ) -> int:
        """Delete checkpoints (and their writes) of one thread and namespace; returns how many.

        Channel values stay while any checkpoint of the thread is left (a later checkpoint
        may read a value an earlier one stored).
        """
        ids = list(dict.fromkeys(checkpoint_ids))
        if not ids:
            return 0
        m = Mutation()
        for cid in ids:
            m.delete(self.keys.lg_checkpoint(thread_id, checkpoint_ns, cid))
            index = self.keys.lg_writes(thread_id, checkpoint_ns, cid)
            for key in members(await self.client.smembers(index)):
                m.delete(key)
            m.delete(index)
        m.zrem(self.keys.lg_checkpoints(thread_id, checkpoint_ns), *ids)
        await self.memory.store.apply(m, "threads.delete_checkpoints")
        remaining = 0
        for ns in await self.namespaces(thread_id):
            remaining += await self.client.zcard(self.keys.lg_checkpoints(thread_id, ns))
        if remaining == 0:
            await self.delete_thread(thread_id)
        return len(ids)

    async def copy_thread(self, source: str, target: str) -> int:
        """Copy every checkpoint, value and write of ``source`` to ``target``.

        What ``target`` held is replaced. Returns how many checkpoints were copied.
        """
        check_name(source, "thread id")
        check_name(target, "thread id")
        if source == target:
            raise InvalidOperationError("a thread cannot be copied onto itself")
        namespaces = await self.namespaces(source)
        if not namespaces:
            return 0
        m = Mutation()
        for key in await self._thread_keys(target):
            m.delete(key)
        copied = 0
        blob_keys: list[str] = []
        for ns in namespaces:
            ids = await self.checkpoint_ids(source, ns)
            if not ids:
                continue
            m.sadd(self.keys.lg_namespaces(target), ns)
            m.zadd(self.keys.lg_checkpoints(target, ns), dict.fromkeys(ids, 0.0))
            async with self.client.pipeline(transaction=False) as pipe:
                for cid in ids:
                    pipe.hgetall(self.keys.lg_checkpoint(source, ns, cid))
                records = await pipe.execute()
            pending = await self.writes_many(source, ns, ids)
            for cid, record, writes in zip(ids, records, pending, strict=True):
                raw = byte_map(record)
                if not raw:
                    continue
                m.hset(self.keys.lg_checkpoint(target, ns, cid), _str_keys(raw))
                copied += 1
                write_keys: list[str] = []
                for write in writes:
                    key = self.keys.lg_write(target, ns, cid, write.task_id, write.idx)
                    m.hset(key, _write_fields(write))
                    write_keys.append(key)
                if write_keys:
                    m.sadd(self.keys.lg_writes(target, ns, cid), *write_keys)
        for key in members(await self.client.smembers(self.keys.lg_blobs(source))):
            raw = byte_map(await self.client.hgetall(key))
            if not raw or b"channel" not in raw:
                continue
            new_key = self.keys.lg_blob(
                target, raw[b"ns"].decode(), raw[b"channel"].decode(), raw[b"version"].decode()
            )
            m.hset(new_key, _str_keys(raw))
            blob_keys.append(new_key)
        if blob_keys:
            m.sadd(self.keys.lg_blobs(target), *dict.fromkeys(blob_keys))
        m.sadd(self.keys.lg_threads(), target)
        await self.memory.store.apply(m, "threads.copy")
        return copied

    # -- reading ---------------------------------------------------------------------
    async def threads(self) -> list[str]:
        """The thread ids that have checkpoints, sorted."""
        return sorted(members(await self.client.smembers(self.keys.lg_threads())))

    async def namespaces(self, thread_id: str) -> list[str]:
        """A thread's checkpoint namespaces, sorted (``""`` first)."""
        return sorted(members(await self.client.smembers(self.keys.lg_namespaces(thread_id))))

    async def checkpoint_ids(
        self,
        thread_id: str,
        checkpoint_ns: str,
        *,
        before: str | None = None,
        limit: int | None = None,
    ) -> list[str]:
        """Checkpoint ids of one thread and namespace, newest first (``before``: older only)."""
        top = f"({before}" if before else "+"
        raw = await self.client.zrevrangebylex(
            self.keys.lg_checkpoints(thread_id, checkpoint_ns),
            top,
            "-",
            *((0, limit) if limit is not None else ()),
        )
        return texts(raw)

    async def latest_id(self, thread_id: str, checkpoint_ns: str) -> str | None:
        """The newest checkpoint id of one thread and namespace."""
        ids = await self.checkpoint_ids(thread_id, checkpoint_ns, limit=1)
        return ids[0] if ids else None

    async def get(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> StoredCheckpoint | None:
        """One checkpoint as stored, or ``None``."""
        return (await self.get_many(thread_id, checkpoint_ns, [checkpoint_id]))[0]

    async def get_many(
        self, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]
    ) -> list[StoredCheckpoint | None]:
        """Checkpoints as stored (``None`` where gone), in one round trip."""
        if not checkpoint_ids:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for cid in checkpoint_ids:
                pipe.hgetall(self.keys.lg_checkpoint(thread_id, checkpoint_ns, cid))
            rows = await pipe.execute()
        out: list[StoredCheckpoint | None] = []
        for cid, row in zip(checkpoint_ids, rows, strict=True):
            raw = byte_map(row)
            checkpoint = _typed(raw, b"checkpoint_type", b"checkpoint")
            metadata = _typed(raw, b"metadata_type", b"metadata")
            if checkpoint is None or metadata is None:
                out.append(None)
                continue
            parent = raw.get(b"parent", b"").decode() or None
            out.append(
                StoredCheckpoint(thread_id, checkpoint_ns, cid, parent, checkpoint, metadata)
            )
        return out

    async def writes(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[StoredWrite]:
        """The pending writes stored against a checkpoint, by (task path, task id, idx)."""
        return (await self.writes_many(thread_id, checkpoint_ns, [checkpoint_id]))[0]

    async def writes_many(
        self, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]
    ) -> list[list[StoredWrite]]:
        """The pending writes of each checkpoint (as :meth:`writes`), in two round trips."""
        if not checkpoint_ids:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for cid in checkpoint_ids:
                pipe.smembers(self.keys.lg_writes(thread_id, checkpoint_ns, cid))
            indexes = [members(reply) for reply in await pipe.execute()]
        flat = [key for keys in indexes for key in keys]
        rows: list[Any] = []
        if flat:
            async with self.client.pipeline(transaction=False) as pipe:
                for key in flat:
                    pipe.hgetall(key)
                rows = await pipe.execute()
        it = iter(rows)
        out: list[list[StoredWrite]] = []
        for keys in indexes:
            found = [w for w in (_write(byte_map(next(it))) for _ in keys) if w is not None]
            found.sort(key=lambda w: (w.task_path, w.task_id, w.idx))
            out.append(found)
        return out

    async def blobs(
        self, thread_id: str, checkpoint_ns: str, versions: dict[str, str]
    ) -> dict[str, Typed]:
        """The channel values at the given versions (empty and missing channels left out)."""
        return (await self.blobs_many(thread_id, checkpoint_ns, [versions]))[0]

    async def blobs_many(
        self, thread_id: str, checkpoint_ns: str, versions: Sequence[dict[str, str]]
    ) -> list[dict[str, Typed]]:
        """The channel values of each version map (as :meth:`blobs`), in one round trip."""
        wanted = [(i, ch, ver) for i, vs in enumerate(versions) for ch, ver in vs.items()]
        out: list[dict[str, Typed]] = [{} for _ in versions]
        if not wanted:
            return out
        async with self.client.pipeline(transaction=False) as pipe:
            for _, channel, version in wanted:
                pipe.hmget(
                    self.keys.lg_blob(thread_id, checkpoint_ns, channel, version), ["type", "data"]
                )
            rows = await pipe.execute()
        for (i, channel, _), (kind, data) in zip(wanted, rows, strict=True):
            if kind is None or data is None or kind == b"empty":
                continue
            out[i][channel] = (text(kind), data)
        return out

    async def _thread_keys(self, thread_id: str) -> list[str]:
        keys: list[str] = []
        for ns in await self.namespaces(thread_id):
            index = self.keys.lg_checkpoints(thread_id, ns)
            for cid in texts(await self.client.zrange(index, 0, -1)):
                keys.append(self.keys.lg_checkpoint(thread_id, ns, cid))
                writes = self.keys.lg_writes(thread_id, ns, cid)
                keys.extend(members(await self.client.smembers(writes)))
                keys.append(writes)
            keys.append(index)
        blobs = self.keys.lg_blobs(thread_id)
        keys.extend(members(await self.client.smembers(blobs)))
        keys.append(blobs)
        keys.append(self.keys.lg_namespaces(thread_id))
        existing = await self._existing(keys)
        return [k for k in dict.fromkeys(keys) if k in existing]

    async def _existing(self, keys: list[str]) -> set[str]:
        async with self.client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.exists(key)
            found = await pipe.execute()
        return {k for k, n in zip(keys, found, strict=True) if n}


def members(reply: object) -> list[str]:
    """A set reply as texts (redis-py answers SMEMBERS with a Python set)."""
    return texts(list(reply) if isinstance(reply, set) else reply)


def _write(raw: dict[bytes, bytes]) -> StoredWrite | None:
    value = _typed(raw, b"type", b"data")
    if value is None:
        return None
    return StoredWrite(
        task_id=raw[b"task_id"].decode(),
        idx=int(raw[b"idx"]),
        channel=raw[b"channel"].decode(),
        value=value,
        task_path=raw.get(b"task_path", b"").decode(),
        text=raw.get(b"text", b"").decode("utf-8", "replace"),
    )


def _str_keys(raw: dict[bytes, bytes]) -> dict[str, str | bytes]:
    return {k.decode(): v for k, v in raw.items()}


def _write_fields(write: StoredWrite) -> dict[str, str | bytes | int]:
    return {
        "task_id": write.task_id,
        "idx": write.idx,
        "channel": write.channel,
        "type": write.value[0],
        "data": write.value[1],
        "task_path": write.task_path,
        "text": write.text,
    }

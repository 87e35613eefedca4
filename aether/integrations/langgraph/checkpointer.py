"""``AetherCheckpointSaver``: LangGraph's checkpointer over an aether namespace.

A LangGraph graph compiled with it keeps its threads in the agent's namespace
(:class:`aether.integrations.langgraph.threads.ThreadStore`): every checkpoint, channel value and
pending write is a journaled change, so ``aether checkpoint rollback`` rewinds the
graph's threads together with the memory, ``aether erase`` reaches them, and redis-cli
shows them (``<ns>:langgraph:*``)::

    async with Aether.open(Settings(namespace="support-bot")) as parts:
        graph = builder.compile(checkpointer=AetherCheckpointSaver(parts))
        await graph.ainvoke({"messages": [...]}, {"configurable": {"thread_id": "t1"}})

The async methods are the saver's own. The sync ones (``graph.invoke``) run them on the
event loop the saver was made on, and so must be called from another thread (as
``await asyncio.to_thread(graph.invoke, ...)``), like LangGraph's own async savers.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from aether.errors import InvalidOperationError
from aether.integrations.langgraph.threads import (
    Blob,
    StoredCheckpoint,
    StoredWrite,
    ThreadStore,
    check_name,
)
from aether.integrations.loop import LoopBound
from aether.integrations.readable import readable

if TYPE_CHECKING:
    from aether.operations.parts import Parts

__all__ = ["AetherCheckpointSaver"]

T = TypeVar("T")
LIST_PAGE = 50
"""Checkpoints read per round trip while listing."""


def _configurable(config: RunnableConfig) -> dict[str, Any]:
    configurable = config.get("configurable") or {}
    if "thread_id" not in configurable:
        raise InvalidOperationError("a LangGraph config needs configurable.thread_id")
    return dict(configurable)


def _thread(configurable: dict[str, Any]) -> str:
    thread = configurable["thread_id"]
    return check_name(thread if isinstance(thread, str) else str(thread), "thread id")


def _ns(configurable: dict[str, Any]) -> str:
    return check_name(configurable.get("checkpoint_ns", ""), "checkpoint namespace")


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


class AetherCheckpointSaver(BaseCheckpointSaver[str]):
    """A LangGraph ``BaseCheckpointSaver`` whose threads are journaled aether state.

    Args:
        parts: the namespace's parts (``Aether`` from ``Aether.open``).
        serde: LangGraph's serializer (default: its ``JsonPlusSerializer``).

    Raises:
        InvalidOperationError: made outside a running event loop.
    """

    def __init__(self, parts: Parts, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self._bridge = LoopBound("AetherCheckpointSaver")
        self.threads = ThreadStore(parts.memory)

    # -- async: the saver's own ------------------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the newest)."""
        configurable = _configurable(config)
        thread = _thread(configurable)
        ns = _ns(configurable)
        checkpoint_id = get_checkpoint_id(config)
        if not checkpoint_id:
            checkpoint_id = await self.threads.latest_id(thread, ns)
            if checkpoint_id is None:
                return None
        stored = await self.threads.get(thread, ns, checkpoint_id)
        if stored is None:
            return None
        return await self._tuple(stored)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first (per namespace), matching every given criterion."""
        configurable = _configurable(config) if config else {}
        threads = [_thread(configurable)] if config else await self.threads.threads()
        only_ns = configurable.get("checkpoint_ns")
        only_id = configurable.get("checkpoint_id")
        before_id = get_checkpoint_id(before) if before else None
        left = limit
        page = LIST_PAGE
        for thread in threads:
            for ns in await self.threads.namespaces(thread):
                if only_ns is not None and ns != only_ns:
                    continue
                ids = await self.threads.checkpoint_ids(thread, ns, before=before_id)
                if only_id:
                    ids = [i for i in ids if i == only_id]
                for start in range(0, len(ids), page):
                    if left is not None and left <= 0:
                        return
                    kept: builtins.list[tuple[StoredCheckpoint, CheckpointMetadata]] = []
                    for stored in await self.threads.get_many(
                        thread, ns, ids[start : start + page]
                    ):
                        if stored is None:
                            continue
                        metadata = self.serde.loads_typed(stored.metadata)
                        if filter and not all(metadata.get(k) == v for k, v in filter.items()):
                            continue
                        kept.append((stored, metadata))
                        if left is not None and len(kept) >= left:
                            break
                    if left is not None:
                        left -= len(kept)
                    for found in await self._tuples(kept):
                        yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint and its new channel values (one journaled change)."""
        configurable = _configurable(config)
        thread = _thread(configurable)
        ns = _ns(configurable)
        bare: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = bare.pop("channel_values", None) or {}
        full_metadata = get_checkpoint_metadata(config, metadata)
        blobs = [
            Blob(
                channel=channel,
                version=str(version),
                value=self.serde.dumps_typed(values[channel]) if channel in values else None,
                text=readable(values[channel]) if channel in values else "",
            )
            for channel, version in new_versions.items()
        ]
        stored = StoredCheckpoint(
            thread_id=thread,
            checkpoint_ns=ns,
            checkpoint_id=checkpoint["id"],
            parent_id=configurable.get("checkpoint_id"),
            checkpoint=self.serde.dumps_typed(bare),
            metadata=self.serde.dumps_typed(full_metadata),
        )
        await self.threads.put(stored, blobs, text_rendering=readable(full_metadata))
        return _config(thread, ns, checkpoint["id"])

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes against the checkpoint ``config`` names."""
        configurable = _configurable(config)
        checkpoint_id = configurable.get("checkpoint_id")
        if not checkpoint_id:
            raise InvalidOperationError("pending writes need configurable.checkpoint_id")
        stored = [
            StoredWrite(
                task_id=task_id,
                idx=WRITES_IDX_MAP.get(channel, idx),
                channel=channel,
                value=self.serde.dumps_typed(value),
                task_path=task_path,
                text=readable(value),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        await self.threads.put_writes(
            _thread(configurable), _ns(configurable), checkpoint_id, stored
        )

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete a thread's checkpoints, values and writes (journaled: a rollback restores)."""
        await self.threads.delete_thread(str(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) that the given runs made."""
        wanted = set(run_ids)
        if not wanted:
            return
        for thread in await self.threads.threads():
            for ns in await self.threads.namespaces(thread):
                ids = await self.threads.checkpoint_ids(thread, ns)
                doomed = [
                    stored.checkpoint_id
                    for stored in await self.threads.get_many(thread, ns, ids)
                    if stored is not None
                    and self.serde.loads_typed(stored.metadata).get("run_id") in wanted
                ]
                await self.threads.delete_checkpoints(thread, ns, doomed)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, value and write of one thread to another."""
        await self.threads.copy_thread(str(source_thread_id), str(target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep each namespace's newest checkpoint (``keep_latest``) or none (``delete``).

        Raises:
            InvalidOperationError: an unknown strategy.
        """
        if strategy not in ("keep_latest", "delete"):
            raise InvalidOperationError(f"unknown prune strategy {strategy!r}")
        for thread in thread_ids:
            if strategy == "delete":
                await self.threads.delete_thread(str(thread))
                continue
            for ns in await self.threads.namespaces(str(thread)):
                ids = await self.threads.checkpoint_ids(str(thread), ns)
                await self.threads.delete_checkpoints(str(thread), ns, ids[1:])

    def get_next_version(self, current: str | None, channel: None) -> str:
        """A version above ``current``: a zero-padded counter, then a random tie-break."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".", 1)[0])
        return f"{number + 1:032}.{random.random():016}"

    # -- sync: the async methods on the saver's loop -----------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Sync :meth:`aget_tuple` (call it from another thread than the loop's)."""
        return self._sync(self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Sync :meth:`alist`."""

        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        yield from self._sync(collect())

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Sync :meth:`aput`."""
        return self._sync(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Sync :meth:`aput_writes`."""
        self._sync(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Sync :meth:`adelete_thread`."""
        self._sync(self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Sync :meth:`adelete_for_runs`."""
        self._sync(self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Sync :meth:`acopy_thread`."""
        self._sync(self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Sync :meth:`aprune`."""
        self._sync(self.aprune(thread_ids, strategy=strategy))

    # -- helpers ---------------------------------------------------------------------
    def _sync(self, call: Coroutine[Any, Any, T]) -> T:
        return self._bridge.run(call)

    async def _tuple(self, stored: StoredCheckpoint) -> CheckpointTuple:
        metadata = self.serde.loads_typed(stored.metadata)
        return (await self._tuples([(stored, metadata)]))[0]

    async def _tuples(
        self, found: Sequence[tuple[StoredCheckpoint, CheckpointMetadata]]
    ) -> builtins.list[CheckpointTuple]:
        """Tuples of checkpoints of one thread and namespace (values and writes batched)."""
        if not found:
            return []
        thread, ns = found[0][0].thread_id, found[0][0].checkpoint_ns
        checkpoints: builtins.list[Checkpoint] = [
            self.serde.loads_typed(s.checkpoint) for s, _ in found
        ]
        versions = [
            {k: str(v) for k, v in c.get("channel_versions", {}).items()} for c in checkpoints
        ]
        blobs = await self.threads.blobs_many(thread, ns, versions)
        writes = await self.threads.writes_many(thread, ns, [s.checkpoint_id for s, _ in found])
        out: builtins.list[CheckpointTuple] = []
        for (stored, metadata), checkpoint, values, pending in zip(
            found, checkpoints, blobs, writes, strict=True
        ):
            out.append(
                CheckpointTuple(
                    config=_config(thread, ns, stored.checkpoint_id),
                    checkpoint={
                        **checkpoint,
                        "channel_values": {k: self.serde.loads_typed(v) for k, v in values.items()},
                    },
                    metadata=metadata,
                    parent_config=(
                        _config(thread, ns, stored.parent_id) if stored.parent_id else None
                    ),
                    pending_writes=[
                        (w.task_id, w.channel, self.serde.loads_typed(w.value)) for w in pending
                    ],
                )
            )
        return out

"""The wired parts of one namespace, built once over one client.

:class:`Parts` is what every operation works on and what the agent runtime and the
daemon take instead of building their own: memory (with its embedder), search, beliefs,
checkpoints, identity, context assembly, the graph, tasks and goals. ``aether.app.Aether``
is a ``Parts`` that can also open a connection, get ready and make runtimes.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import cached_property
from typing import TYPE_CHECKING

from aether.config import RENAMED_UNTIL
from aether.keys import Keyspace

if TYPE_CHECKING:  # each part's module is imported when the part is first used
    from redis.asyncio import Redis

    from aether.checkpoints.chain import JournalChain
    from aether.checkpoints.erasure import Eraser
    from aether.checkpoints.manager import Checkpoints
    from aether.config import Settings
    from aether.context.assembly import ContextAssembler
    from aether.identity.profile import IdentityStore
    from aether.memory.knowledge.beliefs import Beliefs
    from aether.memory.knowledge.graph import Graph
    from aether.memory.retrieval.search import MemorySearch
    from aether.memory.storage.embeddings import Embedder
    from aether.memory.storage.layer import MemoryLayer
    from aether.memory.tiers.tasks import Goals, Tasks
    from aether.messages import StructuredModel, TextModel
    from aether.registry.approvals import Approvals
    from aether.registry.factory import RegistryAndLedger
    from aether.registry.model import AgentLedger

__all__ = ["Parts"]


class Parts:
    """One namespace's parts, each built once.

    Args:
        settings: the effective settings.
        client: a verified client (``aether.store.client.connect``).
        actor: who the journal says made the changes.
        wrap_local: how a short-lived process reaches the local embedding model (through
            a running daemon); ``None`` loads it here when needed.
        judge_model: the LLM that judges search's results when ``memory.rerank`` is
            ``llm`` (its owner closes it); ``None``: search is not judged by an LLM.

    Attributes:
        memory: the memory layer (daily log, long-term, beliefs' storage, embedder).
        search: hybrid search over the memory index.
        checkpoints: checkpoints, rollback and undo.
        journal: the journal's hash chain.
        identity: the agent's and operator's identity.
        assembler: the context assembler.
        tasks: the task list.
        goals: the goals tasks roll up to.
        approvals: tool calls waiting for the operator's decision.
    """

    def __init__(
        self,
        settings: Settings,
        client: Redis,
        *,
        actor: str = "aether",
        wrap_local: Callable[[Embedder], Embedder] | None = None,
        judge_model: StructuredModel | None = None,
    ) -> None:
        self.settings = settings
        self.client = client
        self.keys = Keyspace(settings.namespace)
        self._wrap_local = wrap_local
        self._judge_model = judge_model
        self._services: RegistryAndLedger | None = None
        self._actor = actor
        self._index_ready = False
        self._indexes_deferred = False
        if settings.otel.enabled:  # every face (CLI, MCP, the daemon, the console) opens Parts
            from aether import telemetry

            telemetry.enable(settings)

    # Each part is built on first use: a command that takes a checkpoint never imports
    # the search engine, and every part is still built once per object.

    @cached_property
    def memory(self) -> MemoryLayer:
        """The memory layer (daily log, long-term, beliefs' storage, embedder)."""
        from aether.memory.storage.layer import MemoryLayer

        memory = MemoryLayer.open(
            self.settings, self.client, actor=self._actor, wrap_local=self._wrap_local
        )
        if self._indexes_deferred:  # ``ready`` found a fresh namespace
            memory.defer_indexes(lambda: self.search.ensure_index())
        return memory

    @cached_property
    def search(self) -> MemorySearch:
        """Hybrid search over the memory index (judged by the LLM when configured)."""
        from aether.memory.retrieval.llm_judge import LLMJudge
        from aether.memory.retrieval.search import MemorySearch

        model = self._judge_model
        judge = LLMJudge(model) if model is not None else None
        return MemorySearch(self.memory, judge=judge, entities=self.graph.names_of_type)

    @cached_property
    def checkpoints(self) -> Checkpoints:
        """Checkpoints, rollback and undo."""
        from aether.checkpoints.manager import Checkpoints

        return Checkpoints.from_settings(self.client, self.keys, self.settings)

    @cached_property
    def journal(self) -> JournalChain:
        """The journal's hash chain (verify, sign), with the configured key."""
        from aether.checkpoints.chain import JournalChain
        from aether.store.signing import Signer

        return JournalChain(self.client, self.keys, Signer.from_settings(self.settings))

    @cached_property
    def identity(self) -> IdentityStore:
        """The agent's and the operator's identity."""
        from aether.identity.profile import IdentityStore

        return IdentityStore(self.memory.store, self.checkpoints)

    @cached_property
    def assembler(self) -> ContextAssembler:
        """The context assembler."""
        from aether.context.assembly import ContextAssembler

        return ContextAssembler.configured(self.memory, self.identity, self.search, self.settings)

    @property
    def context(self) -> ContextAssembler:
        """Deprecated name of :attr:`assembler`, read until aether ``RENAMED_UNTIL``."""
        warnings.warn(
            f"Parts.context is deprecated: use Parts.assembler (until aether {RENAMED_UNTIL})",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.assembler

    @cached_property
    def tasks(self) -> Tasks:
        """The task list."""
        from aether.memory.tiers.tasks import Tasks

        return Tasks(self.memory)

    @property
    def goals(self) -> Goals:
        """The goals tasks roll up to."""
        return self.tasks.goals

    @cached_property
    def graph(self) -> Graph:
        """The entity graph."""
        from aether.memory.knowledge.graph import Graph

        return Graph(self.memory)

    @cached_property
    def approvals(self) -> Approvals:
        """Tool calls waiting for the operator's decision."""
        from aether.registry.approvals import Approvals

        return Approvals(self.client, self.keys)

    @asynccontextmanager
    async def as_of(self, when: float) -> AsyncIterator[Parts]:
        """The parts of the state as it was at ``when`` (epoch seconds), for reading.

        The state is rebuilt from the journal into a scratch namespace of its own, with
        its indexes, and dropped afterwards; the live state is only read.

        Raises:
            CheckpointError: the journal no longer reaches back to ``when``, or it is to come.
        """
        from aether.checkpoints.history import drop_namespace, past_namespace, state_at

        target = past_namespace(self.keys)
        settings = self.settings.model_copy(
            update={"namespace": target.ns, "qdrant_url": None, "qdrant_path": None}
        )
        past = Parts(settings, self.client, actor=self._actor, wrap_local=self._wrap_local)
        try:
            await state_at(self.client, self.checkpoints, when, target)
            await past.search.ensure_index()
            yield past
        finally:
            await drop_namespace(self.client, target)

    async def ready(
        self, *, migrate: bool = True, progress: Callable[[int, int], None] | None = None
    ) -> None:
        """Ensure the search indexes (once per object; idempotent in Redis).

        A fresh namespace's indexes are made by its first write instead
        (``MemoryLayer.defer_indexes``): a command that only reads, or is refused,
        leaves nothing behind.

        Args:
            migrate: first bring a namespace whose vectors are in an older layout to the
                configured one, after a checkpoint (``aether.memory.storage.vector_layout``),
                and give a namespace written before the journal's chain its baseline.
                That is a journaled write, so a process that may only read (a CLI command,
                the MCP server over stdio) passes ``False``: a read never writes, and a look
                between a rollback and its undo never blocks the undo. The daemon
                migrates at its start.
            progress: told (moved, total) while vectors migrate (the daemon logs it).
        """
        if not self._index_ready:
            if migrate:
                from aether.memory.storage.vector_layout import migrate_vectors

                await self.journal.adopt()  # before any chained write: a pre-chain namespace
                await migrate_vectors(
                    self.memory, self.checkpoints, self.memory.store.actor, progress
                )
            if not await self._indexes_current():
                if await self._fresh():  # opening it to read (or be refused) writes nothing
                    self._indexes_deferred = True
                    if "memory" in self.__dict__:  # already built: tell it now
                        self.memory.defer_indexes(lambda: self.search.ensure_index())
                else:
                    await self.search.ensure_index()
            self._index_ready = True

    async def _fresh(self) -> bool:
        """Whether no memory was ever written to the namespace (its index never made).

        Every memory write goes through the memory layer's store, whose first write makes
        the index: without its schema key no memory document exists to index, whatever
        else (an identity, a checkpoint) was written. In a cluster the index follows the
        shard: it is always ensured at once.
        """
        from aether.store.cluster import SlotRedis

        if isinstance(self.client, SlotRedis):
            return False
        return not await self.client.exists(self.keys.memory_index_schema())

    async def _indexes_current(self) -> bool:
        """Whether both indexes are already as wanted (checked without the search engine).

        In a cluster the search part always ensures them: it also follows the shard.
        """
        from aether.memory.storage.embeddings import configured_dims
        from aether.memory.storage.index_schemas import indexes_current
        from aether.store.cluster import SlotRedis

        if isinstance(self.client, SlotRedis):
            return False
        dims = configured_dims(self.settings)
        return await indexes_current(
            self.client, self.keys, dims, self.settings.memory.vector_datatype
        )

    def services(self) -> RegistryAndLedger:
        """The tool registry and agent ledger, opened once (shared by daemon and operations).

        Redis, or MongoDB when ``AETHER_MONGO_URL`` is set.
        """
        if self._services is None:
            from aether.registry.factory import open_registry

            self._services = open_registry(self.settings, self.client, actor=self._actor)
        return self._services

    def ledger(self) -> AgentLedger:
        """The agent ledger (see :meth:`services`)."""
        return self.services().ledger

    def eraser(self, actor: str | None = None) -> Eraser:
        """Erasure on this namespace: every store, the archive and the Qdrant mirror."""
        from aether.checkpoints.erasure import Eraser
        from aether.memory.erasure import erasure_hooks

        dsn = self.settings.postgres_dsn
        return Eraser(
            self.client,
            self.keys,
            self.checkpoints,
            archive_dsn=dsn.get_secret_value() if dsn else None,
            hooks=erasure_hooks(self.memory),
            actor=actor or self._actor,
            key_dir=self.settings.home / "erasures",
        )

    def beliefs(self, llm: TextModel | None = None) -> Beliefs:
        """The belief lifecycle (extraction and contradiction checks by ``llm`` if given)."""
        from aether.memory.knowledge.beliefs import Beliefs

        return Beliefs(self.memory, self.settings.beliefs, llm, self.search)

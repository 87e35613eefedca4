"""The wired parts of one namespace, built once over one client.

:class:`Parts` is what every operation works on and what the agent runtime and the
daemon take instead of building their own: memory (with its embedder), search, beliefs,
checkpoints, identity, context assembly, the graph, tasks and goals. ``aether.app.Aether``
is a ``Parts`` that can also open a connection, get ready and make runtimes.
"""

from __future__ import annotations

from collections.abc import Callable

from redis.asyncio import Redis

from aether.checkpoints.erasure import Eraser
from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.context.assembly import ContextAssembler
from aether.identity.profile import IdentityStore
from aether.keys import Keyspace
from aether.memory.erasure import erasure_hooks
from aether.memory.knowledge.beliefs import Beliefs
from aether.memory.knowledge.graph import Graph
from aether.memory.retrieval.llm_judge import LLMJudge
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage.embeddings import Embedder
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.vector_layout import migrate_vectors
from aether.memory.tiers.tasks import Goals, Tasks
from aether.messages import StructuredModel, TextModel
from aether.registry.approvals import Approvals
from aether.registry.factory import RegistryAndLedger, open_registry
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
        identity: the agent's and operator's identity.
        context: the context assembler.
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
        self.memory = MemoryLayer.open(settings, client, actor=actor, wrap_local=wrap_local)
        judge = LLMJudge(judge_model) if judge_model is not None else None
        self.search = MemorySearch(self.memory, judge=judge)
        self.checkpoints = Checkpoints.from_settings(client, self.keys, settings)
        self.identity = IdentityStore(self.memory.store, self.checkpoints)
        self.context = ContextAssembler.configured(
            self.memory, self.identity, self.search, settings
        )
        self.tasks = Tasks(self.memory)
        self.goals: Goals = self.tasks.goals
        self.graph = Graph(self.memory)
        self.approvals = Approvals(client, self.keys)
        self._services: RegistryAndLedger | None = None
        self._actor = actor
        self._index_ready = False

    async def ready(self, *, migrate: bool = True) -> None:
        """Ensure the search indexes (once per object; idempotent in Redis).

        Args:
            migrate: first bring a namespace whose vectors are in an older layout to the
                configured one, after a checkpoint (``aether.memory.storage.vector_layout``).
                That is a journaled write, so a process that may only read (a CLI command,
                the MCP server over stdio) passes ``False``: a read never writes, and a look
                between a rollback and its undo never blocks the undo. The daemon
                migrates at its start.
        """
        if not self._index_ready:
            if migrate:
                await migrate_vectors(self.memory, self.checkpoints, self.memory.store.actor)
            await self.search.ensure_index()
            self._index_ready = True

    def ledger(self) -> AgentLedger:
        """The agent ledger (Redis, or MongoDB when ``AETHER_MONGO_URL`` is set), opened once."""
        if self._services is None:
            self._services = open_registry(self.settings, self.client, actor=self._actor)
        return self._services.ledger

    def eraser(self, actor: str | None = None) -> Eraser:
        """Erasure on this namespace: every store, the archive and the Qdrant mirror."""
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
        return Beliefs(self.memory, self.settings.beliefs, llm)

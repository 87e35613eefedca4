"""The composition root: one object that wires an agent's aether, as redis-py's ``Redis``.

``Aether`` builds every part of one namespace once, over one client
(:class:`aether.operations.Parts`: memory with the configured embedder, search, beliefs,
the entity graph, checkpoints, identity, context assembly, tasks and goals), does the
one-time start-up work once per process (``ready``), and makes agent runtimes per chat
session over those same parts. The CLI, the MCP server, the daemon and the benches open
it instead of wiring the parts themselves::

    async with Aether.open(Settings()) as parts:
        hits = await parts.search.search("what did we decide about the NAS?")
        runtime = parts.runtime("main", llm=LLMClient.from_settings(parts.settings))
        result = await runtime.step("What is on my list today?")

It sits above every layer (it imports them all) and below the interfaces.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from aether.config import Settings
from aether.keys import Keyspace
from aether.operations.parts import Parts
from aether.runtime.llm import LLMClient

if TYPE_CHECKING:  # a short-lived command makes no runtime and embeds through the daemon
    from redis.asyncio import Redis

    from aether.runtime.agent import AgentRuntime

__all__ = ["Aether"]


class Aether(Parts):
    """One namespace's aether: its parts wired once, plus opening, start-up and runtimes.

    The parts (:class:`~aether.operations.Parts`) are built over one client; ``open``
    connects and runs the one-time start-up work (``ready``); ``runtime`` makes an agent
    runtime over the same parts.

    Args:
        settings: the effective settings.
        client: a verified client (``aether.store.client.connect``).
        actor: who the journal says made the changes.
        embed_via_daemon: ask the namespace's running daemon for vectors instead of
            loading the local model in this process (seconds, and memory); without a
            daemon the model loads once per process, and the log says so. On by default:
            the CLI, MCP, the console and the integrations (``AetherStore``,
            ``AetherSession``) all embed through the daemon when one runs.
    """

    def __init__(
        self,
        settings: Settings,
        client: Redis,
        *,
        actor: str = "aether",
        embed_via_daemon: bool = True,
    ) -> None:
        wrap = None
        if embed_via_daemon:
            from aether.runtime.embedding_service import through_daemon

            wrap = through_daemon(client, Keyspace(settings.namespace))
        self._judge_llm = LLMClient.for_judging(settings)
        super().__init__(
            settings, client, actor=actor, wrap_local=wrap, judge_model=self._judge_llm
        )

    async def aclose(self) -> None:
        """Close what this object opened besides the Redis client (the judge's LLM client)."""
        if self._judge_llm is not None:
            await self._judge_llm.aclose()

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        settings: Settings | None = None,
        *,
        actor: str = "aether",
        embed_via_daemon: bool = True,
        start: bool = True,
        migrate: bool = True,
    ) -> AsyncIterator[Aether]:
        """Connect, wire every part and ensure the search index; close the client at exit.

        Args:
            settings: the effective settings (default: from the environment and file).
            actor: who the journal says made the changes.
            embed_via_daemon: see the class.
            start: start the embedded Redis when it is not running.
            migrate: bring an older namespace's vectors to the configured layout (a
                write); short-lived commands that may only read pass ``False``.

        Raises:
            ServerError / IncompatibleServerError: Redis cannot be reached or lacks modules.
        """
        from aether.store.client import connect

        settings = settings or Settings()
        client = await connect(settings, start=start)
        try:
            parts = cls(settings, client, actor=actor, embed_via_daemon=embed_via_daemon)
            try:
                await parts.ready(migrate=migrate)
                yield parts
            finally:
                await parts.aclose()
        finally:
            await client.aclose()

    def runtime(
        self,
        session: str = "main",
        *,
        llm: LLMClient | None = None,
        actor: str = "agent",
        clock: Callable[[], float] = time.time,
    ) -> AgentRuntime:
        """An agent runtime for one chat session over these parts (``clock``: see it)."""
        from aether.runtime.agent import AgentRuntime

        return AgentRuntime(self, session=session, llm=llm, actor=actor, clock=clock)

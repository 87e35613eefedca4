"""How the daemon starts, serves and stops one agent: everything ``aether up`` does.

In order: connect; take the namespace's lease (or stand by for it); finish a rollback a
crash cut short; bootstrap the identity on first start; get the parts ready (the vector
migration, after a checkpoint, then the indexes: once, here, never on a read path);
start the supervisor (lease beat, embedding service, MCP over HTTP when asked); load
the embedding model once; publish health; serve until ``stop``; release the lease.
The CLI only parses options and handles signals.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import structlog

from aether.config import Settings
from aether.keys import Keyspace
from aether.memory.storage.embeddings import preload_local_model
from aether.operations import Parts
from aether.runtime import embedding_service
from aether.runtime.daemon import Daemon
from aether.runtime.health import Health
from aether.runtime.heap import settle_heap
from aether.runtime.lease import DaemonLease, Holder, keep_alive, publish, reclaim
from aether.runtime.llm import LLMClient
from aether.runtime.status import running
from aether.runtime.supervisor import Supervisor
from aether.store.client import connect

__all__ = ["HttpServer", "run_agent"]

log = structlog.get_logger("aether.up")


class HttpServer(Protocol):
    """What the daemon needs of an HTTP server it supervises (uvicorn's ``Server``)."""

    should_exit: bool

    async def serve(self, sockets: Any = None) -> None:
        """Serve until ``should_exit``."""
        ...


HttpFactory = Callable[[Parts, LLMClient | None], HttpServer]
"""Builds the MCP-over-HTTP server for the agent's parts (the interfaces layer has it)."""


def _migration_progress() -> Callable[[int, int], None]:
    """Log a vector migration's progress at start-up, about every tenth of it."""
    said = [-1]

    def told(moved: int, total: int) -> None:
        tenth = moved * 10 // max(1, total)
        if tenth != said[0]:
            said[0] = tenth
            log.info("moving vectors to their layout", moved=moved, total=total)

    return told


async def run_agent(
    settings: Settings,
    stop: asyncio.Event,
    *,
    identity_dir: Path,
    standby: bool = False,
    mcp_http: HttpFactory | None = None,
) -> None:
    """One agent's daemon, until ``stop`` (see the module docs).

    Args:
        settings: the agent's settings (its namespace among them).
        stop: set to stop (SIGTERM, SIGINT, a fleet member failing).
        identity_dir: where the identity files are read from on first start.
        standby: wait for the lease instead of failing when another daemon holds it.
        mcp_http: the MCP server over HTTP, when ``AETHER_MCP__PORT`` is set.

    Raises:
        DaemonRunningError: another daemon holds the namespace (without ``standby``).
    """
    client = await connect(settings)
    holder = Holder.this_process()
    lease = DaemonLease(client, Keyspace(settings.namespace), holder)
    if standby:
        log.info("standing by: another daemon may run this namespace", instance=holder.instance)
        if not await lease.wait(stop):
            await client.aclose()
            return
    else:
        try:
            await lease.acquire()
        except BaseException:
            await client.aclose()
            raise
    judge: LLMClient | None = None
    try:
        judge = LLMClient.for_judging(settings)  # memory.rerank = "llm": the LLM judges search
        parts = Parts(settings, client, actor="daemon", judge_model=judge)
        await _serve(parts, lease, stop, identity_dir, mcp_http)
    finally:
        if judge is not None:
            await judge.aclose()
        await lease.release()
        await client.aclose()


async def _serve(
    parts: Parts,
    lease: DaemonLease,
    stop: asyncio.Event,
    identity_dir: Path,
    mcp_http: HttpFactory | None,
) -> None:
    settings, health = parts.settings, Health()
    llm = LLMClient.from_settings(settings)
    consumer = f"{settings.daemon.consumer}-{lease.holder.instance}"  # unique per instance
    daemon = Daemon(parts, llm, consumer=consumer, health=health)
    await daemon.finish_interrupted()  # before the identity and the indexes are touched
    identity = await parts.identity.ensure(identity_dir)
    # writes wait on a stuck erasure's hold: start without migrating, degraded
    await parts.ready(migrate=health.erasure is None, progress=_migration_progress())
    memory = parts.memory

    async def recover() -> None:
        await daemon.recover()
        await reclaim(lease, health)

    supervisor = Supervisor(parts.client, health, stop, recover)
    health.llm = llm.breaker if llm is not None else None
    supervisor.start("beat", lambda: keep_alive(lease, health, stop))
    if memory.embedder is not None and settings.embedding.provider == "local" and not stop.is_set():
        # the model loads once, here; in a daemon thread, so a SIGTERM meanwhile is not
        # held up by it (asyncio's own worker threads are waited for at exit)
        loader = threading.Thread(target=preload_local_model, name="model-load", daemon=True)
        loader.start()
        while loader.is_alive() and not stop.is_set():
            await asyncio.sleep(0.1)
    if memory.embedder is not None and not stop.is_set():
        embedder = memory.embedder
        await embedder.embed_many(["aether warm-up"])
        supervisor.start(
            "embeddings",
            lambda: embedding_service.serve(parts.client, memory.keys, embedder, stop),
        )
    http = mcp_http(parts, llm) if mcp_http is not None and settings.mcp.port else None
    if http is not None:
        supervisor.start("mcp", http.serve)
    settle_heap()  # what the daemon holds from here on lives as long as it does
    health.runs = running(
        settings,
        embeddings=memory.embedder.model_name if memory.embedder else None,
        mcp_serving=http is not None,
        started_at=lease.holder.started_at,
    )
    health.ready = True
    await publish(lease, health)
    log.info(
        "aether is up",
        namespace=settings.namespace,
        agent=identity.agent.get("name"),
        redis="external" if settings.redis_url else "embedded",
        embeddings=memory.embedder.model_name if memory.embedder else "none",
        llm=settings.llm.model or "none",
        mcp=f"{settings.mcp.host}:{settings.mcp.port}/mcp" if http else "off",
        instance=lease.holder.instance,
    )
    try:
        await daemon.run(stop, supervisor)
        if http is not None:
            http.should_exit = True
        await asyncio.wait_for(supervisor.wait(), timeout=5)
    finally:
        if llm is not None:
            await llm.aclose()
        log.info("aether stopped", answered=daemon.answered)

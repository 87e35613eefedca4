"""``aether up``, ``status``, ``send``, ``mcp`` and ``maintenance run``: the running agent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import structlog
import typer

from aether.errors import ConfigError
from aether.interfaces import cli_identity, ranges
from aether.interfaces.common import (
    EXIT_ERROR,
    AppState,
    emit,
    fail,
    group,
    local_time,
    plural,
    read_operator_zone,
    redis_client,
    run,
    state,
    wants_json,
)

maintenance_app = group("The maintenance engine.")
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
log = structlog.get_logger("aether.up")


def register(app: typer.Typer) -> None:
    """Add the daemon commands to the root app."""
    app.command()(up)
    app.command()(status)
    app.command()(send)
    app.command()(mcp)


def up(ctx: typer.Context) -> None:
    """Run the agent until Ctrl-C (inbox, heartbeat, maintenance).

    With AETHER_MCP__PORT set it also serves the MCP tools over HTTP.
    """
    st = state(ctx)
    run(ctx, lambda: _up(st))


async def _up(st: AppState) -> None:
    from aether.memory.embeddings import preload_local_model
    from aether.memory.layer import MemoryLayer
    from aether.memory.search import MemorySearch
    from aether.runtime import embedding_service
    from aether.runtime.daemon import Daemon
    from aether.runtime.llm import LLMClient
    from aether.store.client import connect

    settings = st.settings
    if settings.mcp.port and (
        settings.mcp.token is None or not settings.mcp.token.get_secret_value().strip()
    ):
        raise ConfigError(
            "AETHER_MCP__PORT is set: set AETHER_MCP__TOKEN to a non-empty bearer token"
        )
    # first of all, so that a SIGTERM during start-up is a clean stop, not a kill
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    client = await connect(settings)
    identity = await cli_identity.identity_store(st, client, actor="daemon").ensure(
        cli_identity.identity_dir(st)
    )
    layer = MemoryLayer.open(settings, client, actor="daemon")
    await MemorySearch(layer).ensure_index()
    started = datetime.now(UTC).isoformat()
    about = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": started,
        "consumer": settings.daemon.consumer,
    }
    tasks = [asyncio.create_task(embedding_service.announce(client, layer.keys, stop, about))]
    if layer.embedder is not None and settings.embeddings == "local" and not stop.is_set():
        # the model loads once, here; in a daemon thread, so a SIGTERM meanwhile is not
        # held up by it (asyncio's own worker threads are waited for at exit)
        loader = threading.Thread(target=preload_local_model, name="model-load", daemon=True)
        loader.start()
        while loader.is_alive() and not stop.is_set():
            await asyncio.sleep(0.1)
    if layer.embedder is not None and not stop.is_set():
        await layer.embedder.embed_many(["aether warm-up"])
        tasks.append(
            asyncio.create_task(embedding_service.serve(client, layer.keys, layer.embedder, stop))
        )
    llm = LLMClient.from_settings(settings)
    daemon = Daemon(settings, layer, llm)
    http = _mcp_http(st, layer, daemon) if settings.mcp.port else None
    if http is not None:
        tasks.append(asyncio.create_task(http.serve()))
    log.info(
        "aether is up",
        namespace=settings.namespace,
        agent=identity.agent.get("name"),
        redis="external" if settings.redis_url else "embedded",
        embeddings=layer.embedder.model_name if layer.embedder else "none",
        llm=settings.llm_model or "none",
        mcp=f"{settings.mcp.host}:{settings.mcp.port}/mcp" if http else "off",
    )
    try:
        await daemon.run(stop)
        if http is not None:
            http.should_exit = True
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)
    finally:
        if llm is not None:
            await llm.aclose()
        await client.aclose()
        log.info("aether stopped", answered=daemon.answered)


def _mcp_http(st: AppState, layer: Any, daemon: Any) -> Any:
    import uvicorn

    class _Server(uvicorn.Server):
        """uvicorn without its own signal handlers: the daemon's stop event rules."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    from aether.interfaces.mcp import Services, http_app

    token = st.settings.mcp.token.get_secret_value() if st.settings.mcp.token else ""
    services = Services(layer, daemon.checkpoints, st.settings)
    config = uvicorn.Config(
        http_app(services, token),
        host=st.settings.mcp.host,
        port=st.settings.mcp.port or 0,
        log_level="warning",
        lifespan="on",
    )
    return _Server(config)


def status(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Whether the daemon is up, and how it is doing.

    Its last beat, inbox depth, last maintenance, Redis memory and file permissions.

    Exits 1 when the daemon is down.
    """
    st = state(ctx)

    zones: list[ZoneInfo] = []  # the operator's, read with the rest

    async def body() -> dict[str, Any]:
        from aether.identity.flags import HeartbeatState
        from aether.runtime.inbox import Inbox
        from aether.server.security import security_report
        from aether.store.codec import byte_map, text

        async with redis_client(st.settings) as client:
            keys = st.keys
            presence = await client.get(keys.daemon_presence())
            beat = await HeartbeatState(client, keys).get()
            depth = await Inbox(client, keys).depth()
            last = {
                text(k): text(v)
                for k, v in byte_map(await client.hgetall(keys.daemon_maintenance())).items()
            }
            memory: Any = await client.info("memory")
            security = await security_report(st.settings, client)
            zones.append(await read_operator_zone(client, keys))
            return {
                "alive": presence is not None,
                "daemon": json.loads(presence) if presence else None,
                "last_beat": beat.last_beat.isoformat() if beat.last_beat else None,
                "beats": beat.beats,
                "inbox": depth,
                "outbox": await client.xlen(keys.outbox()),
                "last_maintenance": last.get("at"),
                "redis_memory": memory.get("used_memory_human"),
                "security": security,
            }

    data = run(ctx, body)

    def when(iso: str | None) -> str:
        if not iso:
            return "never"
        return local_time(datetime.fromisoformat(iso).timestamp(), zones[0])

    def render() -> None:
        alive = "up" if data["alive"] else "DOWN"
        pid = f" (pid {data['daemon'].get('pid')})" if data["daemon"] else ""
        print(f"daemon: {alive}{pid}")
        print(f"last beat: {when(data['last_beat'])} ({plural(data['beats'], 'beat')})")
        print(
            f"inbox: {data['inbox']['waiting']} waiting, {data['inbox']['pending']} in progress; "
            f"outbox: {data['outbox']}"
        )
        print(f"last maintenance: {when(data['last_maintenance'])}")
        print(f"redis memory: {data['redis_memory']}")
        sec = data["security"]
        print(
            f"security: home {sec['home_mode']}, data files {sec['data_files_mode']}, socket "
            f"{sec['socket_mode'] or '-'}, auth {'on' if sec['auth'] else 'OFF'}, MCP "
            + (f"{sec['mcp']['host']}:{sec['mcp']['port']}" if sec["mcp"]["port"] else "off")
        )
        for warning in sec["warnings"]:
            print(f"  warning: {warning}")

    emit(data, wants_json(ctx, json_), render)
    if not data["alive"]:
        raise typer.Exit(EXIT_ERROR)


def send(
    ctx: typer.Context,
    message: Annotated[str, typer.Argument(help="What to say to the running agent.")],
    session: Annotated[str | None, typer.Option("--session", help="Chat session.")] = None,
    timeout: Annotated[
        float, ranges.TIMEOUT_S.option("--timeout", help="Seconds to wait.")
    ] = 120.0,
    json_: JsonOpt = False,
) -> None:
    """Send the running agent a message and print its reply."""
    st = state(ctx)
    as_json = wants_json(ctx, json_)
    if not message.strip():
        fail("the message is empty", as_json, kind="invalid")

    async def body() -> dict[str, str] | None:
        from aether.ids import check_id
        from aether.runtime.inbox import Inbox, wait_for_reply

        if session:
            check_id(session, "session id")
        async with redis_client(st.settings) as client:
            if not await client.exists(st.keys.daemon_presence()):
                raise ConfigError("the daemon is not running: start it with 'aether up'")
            message_id = await Inbox(client, st.keys).send(message, session)
            return await wait_for_reply(client, st.keys, message_id, timeout)

    reply = run(ctx, body)
    if reply is None:
        fail(
            f"no reply within {timeout:g} s (the message stays in the inbox)",
            as_json,
            kind="timeout",
        )
    if reply.get("error"):
        fail(reply["error"], as_json, kind="reply")
    emit(reply, as_json, lambda: print(reply.get("content", "")))


def mcp(ctx: typer.Context) -> None:
    """Serve the MCP tools over stdio (for an MCP client to launch)."""
    from aether.interfaces.mcp import serve_stdio

    st = state(ctx)
    run(ctx, lambda: serve_stdio(st.settings))


@maintenance_app.command("run")
def maintenance_run(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report; change nothing.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Compress old daily logs, prune checkpoints, check scratchpad TTLs, reflect."""
    st = state(ctx)

    async def body() -> dict[str, Any]:
        from aether.checkpoints.manager import Checkpoints
        from aether.maintenance.engine import MaintenanceEngine
        from aether.memory.layer import MemoryLayer
        from aether.memory.search import MemorySearch
        from aether.runtime.llm import LLMClient

        async with redis_client(st.settings) as client:
            layer = MemoryLayer.open(st.settings, client, actor="cli", via_daemon=True)
            await MemorySearch(layer).ensure_index()
            checkpoints = Checkpoints(client, st.keys, keep=st.settings.checkpoints.keep)
            llm = LLMClient.from_settings(st.settings)
            try:
                engine = MaintenanceEngine(
                    layer, checkpoints, llm, actor="cli", beliefs=st.settings.beliefs
                )
                report = await engine.run(dry_run=dry_run)
            finally:
                if llm is not None:
                    await llm.aclose()
            return report.to_dict()

    data = run(ctx, body)

    def render() -> None:
        print(f"maintenance{' (dry run)' if dry_run else ''}: {data['duration_ms']} ms")
        for step in data["steps"]:
            cp = f" [checkpoint {step['checkpoint']}]" if step["checkpoint"] else ""
            print(f"  {step['name']}: {step['detail']}{cp}")

    emit(data, wants_json(ctx, json_), render)

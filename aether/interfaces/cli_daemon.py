"""``aether up``, ``status``, ``send``, ``mcp`` and ``maintenance run``: the running agent."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any
from zoneinfo import ZoneInfo

import structlog
import typer
from pydantic import ValidationError
from redis.asyncio import Redis

from aether.codec import epoch
from aether.errors import AetherError, ConfigError
from aether.interfaces import cli_identity
from aether.interfaces.common import (
    EXIT_ERROR,
    AppState,
    JsonOpt,
    arguments,
    call,
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
from aether.operations import ranges

if TYPE_CHECKING:
    from aether.keys import Keyspace
    from aether.operations import Parts
    from aether.runtime.llm import LLMClient

maintenance_app = group("The maintenance engine.")
log = structlog.get_logger("aether.up")


def up(
    ctx: typer.Context,
    standby: Annotated[
        bool,
        typer.Option(
            "--standby",
            help="When another daemon runs this namespace, wait and take over when it stops.",
        ),
    ] = False,
    agents: Annotated[
        str | None,
        typer.Option(
            "--agents",
            help="Run several agents in this process: comma-separated namespaces "
            "(e.g. '{agent-a},{agent-b}'), each with its own lease, inbox and schedule, "
            "sharing the embedding model.",
        ),
    ] = None,
    stop_redis: Annotated[
        bool,
        typer.Option(
            "--stop-redis",
            help="Stop the embedded Redis when the daemon exits (by default it keeps "
            "running for other commands and agents; any command starts it again).",
        ),
    ] = False,
) -> None:
    """Run the agent until Ctrl-C (inbox, heartbeat, maintenance).

    With AETHER_MCP__PORT set it also serves the MCP tools over HTTP. One daemon runs a
    namespace: a second one exits 1 naming the first, unless started with --standby.
    The embedded Redis keeps running after the daemon exits unless --stop-redis.
    """
    st = state(ctx)
    fleet = [_agent_state(st, name) for name in _namespaces(agents)] if agents else [st]
    try:
        run(ctx, lambda: _up(fleet, standby))
    finally:
        if stop_redis and st.settings.redis_url is None:
            from aether.server.embedded import EmbeddedRedis

            EmbeddedRedis(st.settings).stop()


def _namespaces(agents: str) -> list[str]:
    names = [name.strip() for name in agents.split(",") if name.strip()]
    if not names or len(set(names)) != len(names):
        raise typer.BadParameter("give distinct namespaces, e.g. --agents '{a},{b}'")
    return names


def _agent_state(st: AppState, namespace: str) -> AppState:
    """The state of one agent of a fleet: the same settings, its own namespace (validated)."""
    try:
        settings = type(st.settings).model_validate(
            st.settings.model_dump() | {"namespace": namespace}
        )
    except ValidationError as e:
        reason = "; ".join(str(error["msg"]) for error in e.errors())
        raise typer.BadParameter(f"namespace {namespace!r}: {reason}") from e
    return AppState(settings, st.json)


async def _up(fleet: list[AppState], standby: bool) -> None:
    settings = fleet[0].settings
    if settings.mcp.port and len(fleet) > 1:
        raise ConfigError(
            "--agents with AETHER_MCP__PORT: MCP over HTTP serves one agent; run one "
            "process per agent to serve MCP"
        )
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
    if len(fleet) == 1:
        await _up_one(fleet[0], standby, stop)
        return
    try:
        async with asyncio.TaskGroup() as group:  # one agent failing stops them all
            for member in fleet:
                group.create_task(_up_one(member, standby, stop))
    except* AetherError as failed:
        stop.set()
        raise failed.exceptions[0] from None


async def _up_one(st: AppState, standby: bool, stop: asyncio.Event) -> None:
    """One agent's daemon, until ``stop`` (``aether.runtime.startup``)."""
    from aether.runtime.startup import run_agent

    await run_agent(
        st.settings,
        stop,
        identity_dir=cli_identity.identity_dir(st),
        standby=standby,
        mcp_http=lambda parts, llm: _mcp_http(st, parts, llm),
    )


def _mcp_http(st: AppState, parts: Parts, llm: LLMClient | None) -> Any:
    import uvicorn

    class _Server(uvicorn.Server):
        """uvicorn without its own signal handlers: the daemon's stop event rules."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    from aether.interfaces.mcp import http_app

    token = st.settings.mcp.token.get_secret_value() if st.settings.mcp.token else ""
    config = uvicorn.Config(
        http_app(parts, token, llm),
        host=st.settings.mcp.host,
        port=st.settings.mcp.port or 0,
        log_level="warning",
        lifespan="on",
    )
    return _Server(config)


def status(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Whether the daemon is up, and how it is doing.

    The daemon's state (starting, up, degraded with the reasons, or down), its last beat,
    inbox depth, last maintenance, Redis memory and file permissions. It only reads: an
    embedded Redis that is not running stays stopped.

    Exits 0 when the daemon is up or degraded, 1 otherwise (a health check).
    """
    st = state(ctx)
    as_json = wants_json(ctx, json_)
    zones: list[ZoneInfo] = []  # the operator's, read with the rest

    async def body() -> dict[str, Any]:
        from aether.errors import ServerError
        from aether.runtime.status import daemon_status
        from aether.store.client import connect

        try:
            client = await connect(st.settings, start=False)
        except ServerError as e:
            return {"state": "unknown", "redis": {"reachable": False, "error": str(e)}}
        try:
            zones.append(await read_operator_zone(client, st.keys))
            return await daemon_status(client, st.keys, st.settings)
        finally:
            await client.aclose()

    data = run(ctx, body)
    emit(data, as_json, lambda: _print_status(data, zones[0] if zones else None))
    if data["state"] not in ("up", "degraded"):
        raise typer.Exit(EXIT_ERROR)


_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:\d{2}|Z)?")


def _print_status(data: dict[str, Any], zone: ZoneInfo | None) -> None:
    """``aether status`` for people."""
    if not data["redis"]["reachable"]:
        print(f"redis: unavailable ({data['redis']['error']})")
        print("daemon: unknown (its state lives in Redis)")
        return

    def when(at: float | None) -> str:
        if at is None or zone is None:
            return "never"
        return local_time(at, zone)

    holder = data["daemon"]
    who = f" (pid {holder['pid']} on {holder['host']})" if holder else ""
    print(f"daemon: {data['state'] if data['state'] != 'down' else 'DOWN'}{who}")
    for reason in data["reasons"]:  # the daemon writes UTC; people read their own zone
        print(f"  {_ISO_TIME.sub(lambda m: when(epoch(m.group(0))), reason)}")
    runs = data["running"]
    print(f"runs ({'as configured here: no daemon' if runs['source'] != 'daemon' else 'daemon'}):")
    model = runs["model"]
    print(f"  model: {model['name'] + ' at ' + model['endpoint'] if model else 'none'}")
    mcp_http = runs["mcp"]
    print(
        "  mcp: "
        + (
            f"{mcp_http['transport']} on {mcp_http['host']}:{mcp_http['port']}, auth "
            f"{'on' if mcp_http['auth'] else 'OFF'}"
            if mcp_http
            else "off"
        )
    )
    started = f", since {when(epoch(runs['started_at']))}" if runs["started_at"] else ""
    print(
        f"  embeddings: {runs['embeddings'] or 'none (full text only)'}; archetype "
        f"{runs['archetype']}; aether {runs['version']}{started}"
    )
    print(f"last beat: {when(data['last_beat'])} ({plural(data['beats'], 'beat')})")
    print(
        f"inbox: {data['inbox']['waiting']} waiting, {data['inbox']['pending']} in progress; "
        f"outbox: {data['outbox']}"
    )
    for waiting in data.get("approvals", []):
        print(
            f"  approval {waiting['id']}: {waiting['tool']} in session {waiting['session']} "
            f"waits until {when(waiting['expires_at'])}; answer: {waiting['approve']} "
            f"(or deny)"
        )
    print(f"last maintenance: {when(data['last_maintenance'])}")
    print(f"redis memory: {data['redis']['memory']}")
    sec = data["security"]
    print(
        f"security: home {sec['home_mode']}, data files {sec['data_files_mode']}, socket "
        f"{sec['socket_mode'] or '-'}, auth {'on' if sec['auth'] else 'OFF'}, MCP "
        + (f"{sec['mcp']['host']}:{sec['mcp']['port']}" if sec["mcp"]["port"] else "off")
    )
    for warning in sec["warnings"]:
        print(f"  warning: {warning}")
    for server in data.get("mcp", []):
        line = f"mcp server {server['name']} ({server['transport']}): {server['state']}"
        line += f" since {when(server['since'])}, {plural(server['tools'], 'tool')}"
        if server["restarts"]:
            line += f", {plural(server['restarts'], 'restart')}"
        print(
            line
            + (f"; {server['error']}" if server["error"] and server["state"] != "ready" else "")
        )


async def _daemon_present(client: Redis, keys: Keyspace, wait_s: float) -> bool:
    """Whether a daemon holds the namespace, waiting up to ``wait_s`` for one.

    A daemon reconnecting after a Redis restart takes its lease again within a lease
    period, so a message sent just then waits for it rather than being refused. Where
    no daemon is in the inbox group (none ever ran, or it stopped cleanly) there is no
    wait.
    """
    from aether.runtime.inbox import Inbox

    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while not await client.exists(keys.daemon_presence()):
        if loop.time() >= deadline or not await Inbox(client, keys).consumers():
            return False
        await asyncio.sleep(0.25)
    return True


def send(
    ctx: typer.Context,
    message: Annotated[
        str,
        typer.Argument(help="What to say to the running agent ('-': read it from stdin)."),
    ],
    session: Annotated[str | None, typer.Option("--session", help="Chat session.")] = None,
    timeout: Annotated[
        float, ranges.TIMEOUT_S.option("--timeout", help="Seconds to wait.")
    ] = 120.0,
    json_: JsonOpt = False,
) -> None:
    """Send the running agent a message and print its reply.

    With '-' the message is read from stdin (up to the inbox's limit, 1 MiB). --timeout
    is honoured even while the agent's turn waits for an approval: the error then names
    the approval to answer.
    """
    from aether.runtime.inbox import MAX_MESSAGE_BYTES

    st = state(ctx)
    as_json = wants_json(ctx, json_)
    if message == "-":
        raw = sys.stdin.buffer.read(MAX_MESSAGE_BYTES + 1)
        if len(raw) > MAX_MESSAGE_BYTES:
            fail(
                f"the message on stdin is over {MAX_MESSAGE_BYTES} bytes: the inbox takes "
                "at most that; nothing was sent",
                as_json,
                kind="invalid",
            )
        message = raw.decode("utf-8", "replace")
    if not message.strip():
        fail("the message is empty", as_json, kind="invalid")
    waiting_on: list[str] = []  # the approval the turn waits on when the time runs out

    async def body() -> dict[str, str] | None:
        from aether.ids import check_id
        from aether.registry.approvals import Approvals
        from aether.runtime.inbox import Inbox, wait_for_reply
        from aether.runtime.lease import LEASE_S

        if session:
            check_id(session, "session id")
        async with redis_client(st.settings) as client:
            if not await _daemon_present(client, st.keys, min(timeout, LEASE_S)):
                raise ConfigError("the daemon is not running: start it with 'aether up'")
            if not await client.exists(st.keys.daemon_health()):
                log.info("the daemon is starting; the message waits in its inbox")
            message_id = await Inbox(client, st.keys).send(message, session)
            approvals = Approvals(client, st.keys)
            told: set[str] = set()

            async def tell_approvals() -> None:
                waiting = await approvals.pending(session or st.settings.daemon.session)
                prefixes = await approvals.prefixes(waiting)
                waiting_on[:] = [
                    f"{prefixes[r.id]} ({r.tool}): answer with 'aether approvals approve "
                    f"{prefixes[r.id]}' or 'aether approvals deny {prefixes[r.id]}'"
                    for r in waiting
                ]
                for request in waiting:
                    if request.id not in told:
                        told.add(request.id)
                        short = prefixes[request.id]
                        print(
                            f"waiting: the agent asks to run {request.tool}; answer with "
                            f"'aether approvals approve {short}' or 'aether approvals "
                            f"deny {short}' (denied in "
                            f"{max(0, request.expires_at - time.time()):.0f} s otherwise)",
                            file=sys.stderr,
                            flush=True,
                        )

            return await wait_for_reply(client, st.keys, message_id, timeout, tell_approvals)

    reply = run(ctx, body)
    if reply is None:
        why = "the message stays in the inbox"
        if waiting_on:
            why = "the agent's turn waits for approval " + "; ".join(waiting_on)
        fail(f"no reply within {timeout:g} s ({why})", as_json, kind="timeout")
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
    from aether.operations import maintenance as maintenance_ops

    args = arguments(ctx, maintenance_ops.MaintenanceArgs, dry_run=dry_run)
    data = call(ctx, maintenance_ops.maintenance_run, args, llm=True)

    def render() -> None:
        print(f"maintenance{' (dry run)' if dry_run else ''}: {data['duration_ms']} ms")
        for step in data["steps"]:
            cp = f" [checkpoint {step['checkpoint']}]" if step["checkpoint"] else ""
            print(f"  {step['name']}: {step['detail']}{cp}")

    emit(data, wants_json(ctx, json_), render)

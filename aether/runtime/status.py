"""The running agent's status, read from Redis: what ``aether status`` and the console show.

It only reads; times are epoch seconds.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from redis.asyncio import Redis

from aether.checkpoints.erasure import pending_view
from aether.codec import byte_map, epoch, text
from aether.config import Settings
from aether.identity.flags import HeartbeatState
from aether.keys import Keyspace
from aether.registry.approvals import Approvals
from aether.runtime.inbox import Inbox
from aether.runtime.lease import parse_holder
from aether.server.security import security_report

__all__ = ["daemon_status", "running"]


def running(
    settings: Settings,
    *,
    embeddings: str | None = None,
    mcp_serving: bool | None = None,
    started_at: str | None = None,
) -> dict[str, Any]:
    """What a daemon with ``settings`` runs: the record ``aether status`` and the console show.

    The daemon publishes it with its health (what it loaded, what it serves); without a
    daemon, status shows the one of the settings of the process asking, marked so.

    Args:
        settings: the daemon's settings.
        embeddings: the embedding model it loaded (default: the configured one).
        mcp_serving: whether it serves MCP over HTTP (default: as configured).
        started_at: when it started (ISO time).
    """
    from urllib.parse import urlsplit

    from aether import __version__

    llm = settings.llm
    model = None
    if llm.base_url and llm.model:
        model = {"name": llm.model, "endpoint": urlsplit(llm.base_url).netloc or llm.base_url}
    serving = bool(settings.mcp.port) if mcp_serving is None else mcp_serving
    token = settings.mcp.token.get_secret_value().strip() if settings.mcp.token else ""
    provider = settings.embedding.provider
    return {
        "version": __version__,
        "started_at": started_at,
        "namespace": settings.namespace,
        "archetype": settings.archetype,
        "model": model,
        "embeddings": None if provider == "none" else (embeddings or provider),
        "mcp": (
            {
                "transport": "streamable-http",
                "host": settings.mcp.host,
                "port": settings.mcp.port,
                "auth": bool(token),
            }
            if serving
            else None
        ),
        "redis": "external" if settings.redis_url else "embedded",
    }


async def daemon_status(client: Redis, keys: Keyspace, settings: Settings) -> dict[str, Any]:
    """The daemon's state: ``down``, ``starting``, ``up`` or ``degraded`` with its reasons.

    With its lease holder, beats and alerts, inbox depth, the tool calls waiting for the
    operator's approval (each parks its own session's turn only), a pending erasure, last
    maintenance, Redis memory, security and MCP servers.
    """
    holder = parse_holder(await client.get(keys.daemon_presence()))
    raw_health = await client.get(keys.daemon_health())
    health = json.loads(raw_health) if raw_health else None
    beat = await HeartbeatState(client, keys).get()
    last = {
        text(k): text(v)
        for k, v in byte_map(await client.hgetall(keys.daemon_maintenance())).items()
    }
    memory: Any = await client.info("memory")
    state = "down" if holder is None else health["state"] if health else "starting"
    hold = {text(k): text(v) for k, v in byte_map(await client.hgetall(keys.write_hold())).items()}
    erasure = pending_view(hold if hold.get("kind") == "erase" else None)
    reasons = health["reasons"] if health and holder else []
    runs = (health or {}).get("runs") if holder else None
    source = "daemon" if runs else "configured here"
    runs = runs or running(settings)
    mcp = runs.get("mcp")
    if erasure is not None and not any("erasure" in r for r in reasons):
        reasons = [
            *reasons,
            f"erasure {erasure['id']} is pending in phase {erasure['phase']} (writes "
            f"{erasure['writes']}): {erasure['resolve']}",
        ]
    approvals = Approvals(client, keys)
    waiting = await approvals.pending()
    prefixes = await approvals.prefixes(waiting, pending=[r.id for r in waiting])
    return {
        "state": state,
        "alive": state in ("up", "degraded"),
        "reasons": reasons,
        "erasure": erasure,
        "daemon": {**asdict(holder), "started_at": epoch(holder.started_at)} if holder else None,
        "redis": {"reachable": True, "memory": memory.get("used_memory_human")},
        "last_beat": epoch(beat.last_beat),
        "beats": beat.beats,
        "alerts": beat.alerts[-10:],
        "inbox": await Inbox(client, keys).depth(),
        "approvals": [
            {
                "id": r.id,
                "tool": r.tool,
                "session": r.session,
                "requested_at": r.requested_at,
                "expires_at": r.expires_at,
                "approve": f"aether approvals approve {prefixes.get(r.id, r.id)}",
            }
            for r in waiting
        ],
        "outbox": await client.xlen(keys.outbox()),
        "last_maintenance": epoch(last.get("at")),
        "running": {**runs, "source": source},
        "security": await security_report(
            settings,
            client,
            mcp={"host": mcp["host"], "port": mcp["port"], "auth": mcp["auth"]} if mcp else None,
        ),
        "mcp": (health or {}).get("mcp", []) if holder else [],
    }

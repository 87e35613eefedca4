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

__all__ = ["daemon_status"]


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
    if erasure is not None and not any("erasure" in r for r in reasons):
        reasons = [
            *reasons,
            f"erasure {erasure['id']} is pending in phase {erasure['phase']} (writes "
            f"{erasure['writes']}): {erasure['resolve']}",
        ]
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
                "approve": f"aether approvals approve {r.id}",
            }
            for r in await Approvals(client, keys).pending()
        ],
        "outbox": await client.xlen(keys.outbox()),
        "last_maintenance": epoch(last.get("at")),
        "security": await security_report(settings, client),
        "mcp": (health or {}).get("mcp", []) if holder else [],
    }

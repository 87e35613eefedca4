"""Who can reach an agent's memory: the ``security`` block of ``aether status``.

It reports the modes of what aether keeps on disk (home, Redis data files and logs, the
socket), whether Redis asks for a password, where it listens, and how MCP over HTTP is
bound, and warns about anything wider than owner-only or reachable beyond loopback.
See ``docs/security.md`` for the threat model.
"""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from redis.asyncio import Redis
from redis.exceptions import RedisError

from aether.config import Settings
from aether.files import HOME_FOLDERS, owned_entries, wider_than_owner
from aether.server.embedded import EmbeddedRedis

__all__ = ["is_loopback", "security_report"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _mode(path: Path) -> str | None:
    try:
        return f"{stat.S_IMODE(path.lstat().st_mode):04o}"
    except OSError:
        return None


def _widest(root: Path) -> tuple[str | None, list[str]]:
    """The widest mode of the regular files and folders below ``root``, and the wide ones."""
    entries = [(path, mode) for path, mode in owned_entries(root) if path != root]
    widest = 0
    for _, mode in entries:
        widest |= stat.S_IMODE(mode) & 0o077
    wide = [str(path) for path, mode in entries if wider_than_owner(mode)]
    return (f"{0o600 | widest:04o}" if entries else None), wide


async def _config(client: Redis, name: str) -> str | None:
    try:
        value: dict[Any, Any] = await client.config_get(name)
    except RedisError:
        return None  # managed Redis often forbids CONFIG
    raw = value.get(name, value.get(name.encode()))
    return raw.decode() if isinstance(raw, bytes) else raw


async def security_report(
    settings: Settings, client: Redis, mcp: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The security block: modes, auth, listeners and the warnings they call for.

    Args:
        settings: the settings of the files and Redis to judge.
        client: the namespace's client.
        mcp: the MCP listener a running daemon serves (``host``, ``port``, ``auth``);
            ``None``: none is served.
    """
    warnings: list[str] = []
    home = settings.home
    home_mode = _mode(home)
    if home_mode and int(home_mode, 8) & 0o077:
        warnings.append(f"home {home} is {home_mode}: other users can list it (want 0700)")
    data_mode: str | None = None
    wide: list[str] = []
    for name in HOME_FOLDERS:
        mode, found = _widest(home / name)
        if mode and (data_mode is None or int(mode, 8) > int(data_mode, 8)):
            data_mode = mode
        wide += found
    if wide:
        warnings.append(
            f"{len(wide)} files or folders are readable by other users, e.g. {wide[0]} "
            "(run any aether command that starts Redis to tighten them, or chmod go-rwx)"
        )
    embedded = settings.redis_url is None
    socket_mode = None
    if embedded:
        socket = EmbeddedRedis(settings).socket_path
        socket_mode = _mode(socket)
        if socket_mode and int(socket_mode, 8) & 0o077:
            warnings.append(f"the Redis socket {socket} is {socket_mode} (want 0700)")
        auth = bool(await _config(client, "requirepass"))
    else:
        url = settings.redis_url.get_secret_value() if settings.redis_url else ""
        auth = urlsplit(url).password is not None or "password=" in url
    if not auth:
        warnings.append("Redis accepts clients without a password")
    port = await _config(client, "port")
    bind = (await _config(client, "bind") or "").split()
    tcp = bool(port and port != "0")
    beyond = [b for b in bind if not is_loopback(b.lstrip("-"))] if tcp else []
    if tcp and (beyond or not bind):
        warnings.append(f"Redis listens on TCP port {port} beyond loopback ({' '.join(bind)})")
    listener = {
        "port": mcp["port"] if mcp else None,
        "host": mcp["host"] if mcp else settings.mcp.host,
        "token_set": bool(mcp and mcp.get("auth")),
    }
    if mcp and not is_loopback(str(mcp["host"])):
        warnings.append(
            f"MCP over HTTP is bound to {mcp['host']}: beyond loopback, put a TLS "
            "proxy in front (docs/security.md)"
        )
    return {
        "home": str(home),
        "home_mode": home_mode,
        "data_files_mode": data_mode,
        "socket_mode": socket_mode,
        "auth": auth,
        "redis_tcp": {"port": int(port) if port and port.isdigit() else None, "bind": bind},
        "mcp": listener,
        "warnings": warnings,
    }

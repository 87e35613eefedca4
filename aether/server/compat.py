"""Check that a Redis server can hold aether's state: version >= 7.4, search and JSON."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from aether.codec import command
from aether.errors import IncompatibleServerError

MIN_VERSION = (7, 4)
REQUIRED_MODULES = {"search": "search", "ReJSON": "JSON"}


def _parse_version(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def module_names(reply: Any) -> set[str]:
    """The names of the modules a ``MODULE LIST`` reply lists (RESP2 or RESP3)."""
    names: set[str] = set()
    for module in reply or []:
        if isinstance(module, dict):
            name = module.get(b"name", module.get("name"))
        else:
            flat = list(module)
            pairs = dict(zip(flat[::2], flat[1::2], strict=False))
            name = pairs.get(b"name", pairs.get("name"))
        if isinstance(name, bytes):
            name = name.decode()
        if name:
            names.add(str(name))
    return names


async def verify_server(client: Redis, where: str) -> str:
    """Verify the server's version and modules.

    Args:
        client: a connected client.
        where: how to name the server in the error (URL without password).

    Returns:
        The server version.

    Raises:
        IncompatibleServerError: one line that names what is missing and the fix.
    """
    info = await client.info("server")
    version = str(info.get("redis_version", "0"))
    modules = module_names(await command(client, "MODULE", "LIST"))
    missing = [label for name, label in REQUIRED_MODULES.items() if name not in modules]
    too_old = _parse_version(version)[:2] < MIN_VERSION
    if too_old or missing:
        problems = []
        if too_old:
            problems.append(f"version {version} < 7.4")
        if missing:
            problems.append("no " + " and no ".join(missing) + " module")
        raise IncompatibleServerError(
            f"Redis at {where} cannot be used ({'; '.join(problems)}): aether needs Redis >= 7.4 "
            "with the search and JSON modules; point AETHER_REDIS_URL at Redis 8 or Redis Stack, "
            "or unset it to use the embedded server"
        )
    return version

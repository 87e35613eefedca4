"""Decoding Redis replies, and times as epoch seconds.

aether's clients speak bytes (DUMP payloads are binary).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis


def text(value: object) -> str:
    """A reply value as text (UTF-8)."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a string reply, got {type(value).__name__}")


def texts(values: object) -> list[str]:
    """A list reply as texts."""
    if not isinstance(values, list | tuple):
        raise TypeError(f"expected a list reply, got {type(values).__name__}")
    return [text(v) for v in values]


def byte_map(value: object) -> dict[bytes, bytes]:
    """A hash or stream-entry reply as a bytes-to-bytes mapping."""
    if not isinstance(value, dict):
        return {}
    return {
        (k if isinstance(k, bytes) else str(k).encode()): (
            v if isinstance(v, bytes) else str(v).encode()
        )
        for k, v in value.items()
    }


async def command(client: Redis, *args: Any) -> Any:
    """Send a raw command (one the typed client has no method for)."""
    return await client.execute_command(*args)  # type: ignore[no-untyped-call]


def epoch(value: object) -> float | None:
    """A time as epoch seconds, the one format of every ``--json`` time.

    Accepts a number, a number as text, an ISO-8601 text (naive means UTC) or a datetime;
    ``None`` or an empty value gives ``None``.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.timestamp() if value.tzinfo else value.replace(tzinfo=UTC).timestamp()
    if isinstance(value, int | float):
        return float(value)
    raw = value.decode() if isinstance(value, bytes) else str(value)
    try:
        return float(raw)
    except ValueError:
        return epoch(datetime.fromisoformat(raw))

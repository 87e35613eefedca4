"""The CLI's readers of option text that a type alone does not read (``--since 7d``).

A field's CLI hint names its parser (:func:`aether.operations.base.for_the_cli`); the
command reads the option as text and hands the parser's value to the operation. A parser
raises ``InvalidOperationError`` on text it cannot read: a usage error (64).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aether.errors import InvalidOperationError
from aether.operations import ranges

__all__ = ["PARSERS", "Parser", "parse_since"]


@dataclass(frozen=True)
class Parser:
    """How the CLI reads one kind of option text.

    Attributes:
        read: (the text, the option's flag for errors) -> the argument's value.
        help: what the option accepts (its help on the CLI).
        metavar: the placeholder help shows.
    """

    read: Callable[[str, str], Any]
    help: str
    metavar: str


def parse_since(value: str | None, flag: str = "--since") -> datetime | None:
    """``7d``, ``12h``, ``30m``, ``90s`` ago, or an ISO-8601 date/time (UTC when naive).

    Raises:
        InvalidOperationError: anything else, or more than 100 years back.
    """
    if value is None:
        return None
    match = re.fullmatch(r"(\d{1,14})([dhms])", value.strip())
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        seconds = amount * {"d": 86_400, "h": 3_600, "m": 60, "s": 1}[unit]
        if seconds > ranges.SINCE_MAX_DAYS * 86_400:
            raise InvalidOperationError(
                f"{flag} {value!r} is too far back: at most {ranges.SINCE_MAX_DAYS} days"
            )
        return datetime.now(UTC) - timedelta(seconds=seconds)
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as e:
        raise InvalidOperationError(
            f"{flag} {value!r}: use 7d, 12h, 30m, 90s or an ISO-8601 time"
        ) from e
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _since_timestamp(value: str, flag: str) -> float | None:
    when = parse_since(value, flag)
    return when.timestamp() if when else None


PARSERS: dict[str, Parser] = {
    "since": Parser(_since_timestamp, "7d, 12h, 30m, 90s or ISO-8601.", "SINCE"),
}
"""The parsers a field's CLI hint may name."""

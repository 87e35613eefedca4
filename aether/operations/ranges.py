"""The declared range of every numeric argument (agent, MCP and CLI), in one place.

A value out of its range is a usage error (exit 64) before anything runs, so no
command ever hands Redis an integer it cannot hold or answers "found nothing" to a
nonsensical argument. Help shows each range (``[1<=x<=1000]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

__all__ = [
    "CONFIDENCE",
    "DEPTH",
    "KEEP",
    "LIMIT",
    "MAX_TOKENS",
    "PRIORITY",
    "SCORE",
    "SINCE_MAX_DAYS",
    "TIMEOUT_S",
    "TTL_S",
    "VERSION",
    "Range",
]


@dataclass(frozen=True)
class Range:
    """A closed interval of accepted values."""

    low: int | float
    high: int | float

    def option(self, *decls: str, help: str) -> Any:
        """A typer option that refuses values outside the range."""
        import typer  # only the CLI needs it

        return typer.Option(*decls, min=self.low, max=self.high, help=help)

    def field(self, description: str, *, extra: dict[str, Any] | None = None) -> Any:
        """A pydantic field in the range: an MCP tool's argument, its bounds in the schema.

        ``extra`` is the field's ``json_schema_extra`` (how the CLI offers it, say).
        """
        return Field(ge=self.low, le=self.high, description=description, json_schema_extra=extra)


LIMIT = Range(1, 1000)
LEDGER_LIMIT = Range(1, 100_000)
MAX_TOKENS = Range(50, 2_000_000)
TTL_S = Range(1, 10 * 365 * 86_400)
KEEP = Range(1, 100_000)
DEPTH = Range(1, 4)
PRIORITY = Range(1, 5)
VERSION = Range(1, 1_000_000)
SCORE = Range(0.0, 1.0)
CONFIDENCE = Range(0.0, 1.0)
TIMEOUT_S = Range(0.1, 86_400.0)
SINCE_MAX_DAYS = 100 * 366

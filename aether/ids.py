"""Time-sortable identifiers (ULID) for entries, memories and checkpoints."""

from __future__ import annotations

import re

from ulid import ULID

from aether.errors import InvalidOperationError

_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def new_id() -> str:
    """A new ULID: 26 characters, sorts by creation time."""
    return str(ULID())


def check_id(value: str, what: str = "id") -> str:
    """Validate an id given by a caller (letters, digits, ``_ . -``; at most 128).

    Raises:
        InvalidOperationError: the id is empty, too long or has other characters.
    """
    if not _SAFE_ID.match(value):
        raise InvalidOperationError(
            f"invalid {what} {value[:40]!r}: use 1-128 letters, digits, '_', '.' or '-'"
        )
    return value

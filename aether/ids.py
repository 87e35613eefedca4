"""Time-sortable identifiers (ULID) for entries, memories and checkpoints."""

from __future__ import annotations

import re

from ulid import ULID

from aether.errors import InvalidOperationError

_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


ID_LENGTH = 26
"""Characters in a whole id (a ULID)."""


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


MIN_PREFIX = 4


def shortest_prefixes(ids: list[str], among: list[str] | None = None) -> dict[str, str]:
    """Each id's shortest prefix (at least :data:`MIN_PREFIX` characters) that names it alone.

    Args:
        ids: the ids to shorten.
        among: the ids a prefix must tell them apart from (default: ``ids``).
    """
    others = sorted(set(ids if among is None else [*among, *ids]))
    out: dict[str, str] = {}
    for i in ids:
        at = others.index(i)
        shared = 0
        for neighbour in (
            others[at - 1] if at else "",
            others[at + 1] if at + 1 < len(others) else "",
        ):
            common = 0
            for a, b in zip(i, neighbour, strict=False):
                if a != b:
                    break
                common += 1
            shared = max(shared, common)
        out[i] = i[: max(MIN_PREFIX, shared + 1)]
    return out


def resolve_prefix(ids: list[str], given: str, what: str = "id") -> str:
    """The one id in ``ids`` equal to ``given`` or starting with it.

    Raises:
        InvalidOperationError: the prefix is shorter than 4 characters or malformed.
        NotFoundError: nothing matches.
        AmbiguousIdError: several match.
    """
    from aether.errors import AmbiguousIdError, NotFoundError

    check_id(given, what)
    if given in ids:
        return given
    if len(given) < MIN_PREFIX:
        raise InvalidOperationError(f"a {what} prefix needs at least {MIN_PREFIX} characters")
    matches = [i for i in ids if i.startswith(given)]
    if not matches:
        raise NotFoundError(f"no {what} {given!r}")
    if len(matches) > 1:
        raise AmbiguousIdError(f"{what} prefix {given!r} matches {len(matches)}; give more")
    return matches[0]

"""Memory scopes: global, session, workspace, repository.

Why: docs/design.md, "Decisions, failures and scopes".

A scope is written ``global`` or ``<kind>:<id>`` (``repository:aether``,
``session:main``). Events, entities, decisions and failures carry one; queries filter
by it. A query for a scope also sees ``global`` memories unless told otherwise.
"""

from __future__ import annotations

from aether.errors import InvalidOperationError
from aether.ids import check_id

SCOPE_KINDS = ("global", "session", "workspace", "repository")
GLOBAL = "global"


def check_scope(scope: str | None) -> str:
    """A valid scope string (``None`` means ``global``).

    Raises:
        InvalidOperationError: an unknown kind, or a missing or malformed id.
    """
    if scope is None or scope == GLOBAL:
        return GLOBAL
    kind, _, ident = scope.partition(":")
    if kind not in SCOPE_KINDS or kind == GLOBAL:
        raise InvalidOperationError(
            f"scope {scope[:60]!r}: use global, session:ID, workspace:ID or repository:ID"
        )
    if not ident:
        raise InvalidOperationError(f"scope {scope!r} needs an id after '{kind}:'")
    check_id(ident, f"{kind} id")
    return f"{kind}:{ident}"

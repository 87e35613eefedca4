"""What a search is limited to, as one value: the filter Redis and the Qdrant mirror apply.

A search's criteria (kind, source, tags, time, session, scopes, a caller's own
condition) are validated once here and read by whichever vector source answers: the
RediSearch filter expression (:meth:`SearchFilter.expression`) or the mirror's payload
criteria (:meth:`SearchFilter.criteria`). Filter values go through redisvl's escaping
``Tag`` and ``Num`` filters: user text never reaches query syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from redisvl.query.filter import FilterExpression, Num, Tag
from redisvl.utils.token_escaper import TokenEscaper

from aether.memory.storage.records import check_kind, check_source, check_tags, check_timestamp
from aether.memory.storage.scopes import check_scope

__all__ = ["SearchFilter"]


class _Tag(Tag):  # type: ignore[misc]
    """redisvl's tag filter, a lone ``_`` escaped too (RediSearch refuses ``@tags:{_}``)."""

    escaper = TokenEscaper(escape_chars_re=re.compile(TokenEscaper.TAG_ESCAPED_CHARS + "|^_$"))


@dataclass(frozen=True)
class SearchFilter:
    """The criteria a search's candidates must meet (each ``None`` or empty: no limit).

    Attributes:
        kind: one kind of memory.
        source: one source.
        tags: any of these tags.
        since: from this time on.
        session: one conversation.
        scopes: any of these scopes.
        where: a caller's own condition over the indexed fields (Redis only).
    """

    kind: str | None = None
    source: str | None = None
    tags: list[str] | None = None
    since: datetime | float | None = None
    session: str | None = None
    scopes: list[str] | None = None
    where: FilterExpression | None = None

    def expression(self) -> FilterExpression | None:
        """The redisvl filter of these criteria (``None`` when unfiltered)."""
        parts: list[FilterExpression] = [] if self.where is None else [self.where]
        if self.scopes:
            parts.append(_Tag("scope") == [check_scope(s) for s in self.scopes])
        if self.kind:
            parts.append(_Tag("kind") == check_kind(self.kind))
        if self.source:
            parts.append(_Tag("source") == check_source(self.source))
        if self.tags:
            parts.append(_Tag("tags") == check_tags(self.tags))
        if self.since is not None:
            parts.append(Num("timestamp") >= check_timestamp(self.since))
        if self.session:
            parts.append(_Tag("session") == self.session)
        if not parts:
            return None
        combined = parts[0]
        for part in parts[1:]:
            combined = combined & part
        return combined

    def criteria(self) -> dict[str, Any]:
        """The same criteria as the Qdrant mirror reads them."""
        plain = {name: getattr(self, name) for name in ("kind", "source", "tags", "session")}
        since = check_timestamp(self.since) if self.since is not None else None
        return plain | {"since": since, "scopes": [check_scope(x) for x in self.scopes or []]}

"""Typed memory records and the one registry of memory kinds.

A record is a RedisJSON document indexed by ``ns:memory:idx``; its field names are the
index's field names. Records are ``TypedDict``s, not pydantic models, by choice: they are
read and written as plain JSON objects on the hot path (a search reads a shortlist of
partial documents, the context assembler dozens), so a dict that mypy checks costs
nothing at run time, while a model would be built and dumped at every hop. Validation
happens where records enter: :func:`base_record` and the ``check_*`` functions (builders
used by the CLI, MCP tools, runtime tools and maintenance), and pydantic's ``ImportLine``
for import files.

Each kind has its record type (:class:`DailyEntry`, :class:`LongTermRecord`,
:class:`Belief`, :class:`Event`, :class:`Decision`, :class:`Failure`) over the fields
every memory has (:class:`MemoryRecord`); :class:`MemoryDoc` is what a read returns (any
kind, possibly only some fields). :data:`MEMORY_KINDS` is the registry: key builder,
label, whether export/import carries the kind. Adding a kind is one entry there (and its
name in :data:`Kind`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, cast, get_args

from typing_extensions import TypedDict

from aether.errors import InvalidOperationError
from aether.keys import Keyspace

Source = Literal["user", "agent", "system"]
Kind = Literal["daily", "longterm", "belief", "event", "decision", "failure"]
# the CLI, validation and error messages all read these (one place)
SOURCES: tuple[str, ...] = get_args(Source)
KINDS: tuple[str, ...] = get_args(Kind)
MAX_TAGS = 32
# The fields a search hit carries (never the embedding): fewer paths, faster reads.
HIT_FIELDS: tuple[str, ...] = (
    "id",
    "kind",
    "content",
    "source",
    "tags",
    "score",
    "session",
    "timestamp",
    "status",
    "confidence",
    "reinforced_at",
    "type",
    "outcome",
    "scope",
    "pattern",
)
_TAG = re.compile(r"^[^\x00-\x1f]{1,64}$")


def check_content(content: str, max_bytes: int) -> str:
    """Non-empty text within the size limit."""
    if not isinstance(content, str) or not content.strip():
        raise InvalidOperationError("content is empty")
    size = len(content.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise InvalidOperationError(f"content is {size} bytes, over the limit of {max_bytes}")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidOperationError("content is not valid Unicode text") from e
    return content


def check_source(source: str) -> str:
    """One of user, agent, system."""
    if source not in SOURCES:
        raise InvalidOperationError(f"unknown source {source!r}: use one of {', '.join(SOURCES)}")
    return source


def check_kind(kind: str) -> Kind:
    """One of the memory kinds (``KINDS``)."""
    if kind in KINDS:
        return cast(Kind, kind)
    raise InvalidOperationError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")


def check_tags(tags: list[str] | tuple[str, ...] | None) -> list[str]:
    """At most 32 tags of 1-64 printable characters; duplicates removed, order kept.

    Spaces at either end are dropped: a tag filter ignores them (``"ops "`` is ``ops``),
    and a tag's own vector index (``scoped_indexes``) matches the tag as stored.
    """
    if tags is None:
        return []
    if isinstance(tags, str):
        raise InvalidOperationError("tags must be a list of strings, not one string")
    out: list[str] = []
    for raw in tags:
        if not isinstance(raw, str) or not _TAG.match(raw) or not raw.strip():
            raise InvalidOperationError(f"invalid tag {str(raw)[:40]!r}: 1-64 printable characters")
        tag = raw.strip(" ")
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise InvalidOperationError(f"{len(out)} tags: at most {MAX_TAGS}")
    return out


def check_score(score: float) -> float:
    """Importance between 0 and 1."""
    if not isinstance(score, int | float) or not math.isfinite(score) or not 0 <= score <= 1:
        raise InvalidOperationError(f"score must be between 0 and 1, not {score!r}")
    return float(score)


def check_timestamp(when: datetime | float | None) -> float:
    """Seconds since the epoch (now when ``None``); naive datetimes are UTC."""
    if when is None:
        return datetime.now(UTC).timestamp()
    if isinstance(when, datetime):
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    if not isinstance(when, int | float) or not math.isfinite(when) or when < 0:
        raise InvalidOperationError(f"invalid timestamp {when!r}")
    return float(when)


def content_hash(kind: str, content: str, source: str, tags: list[str], timestamp: float) -> str:
    """Identity of a record's content, for exact-duplicate detection."""
    payload = json.dumps([kind, content, source, sorted(tags), round(timestamp, 3)])
    return hashlib.sha1(payload.encode()).hexdigest()[:20]


class MemoryRecord(TypedDict, total=False):
    """The fields every memory document has (builders always set the first eight)."""

    id: str
    kind: Kind
    content: str
    source: str
    tags: list[str]
    score: float
    timestamp: float
    hash: str
    session: str
    scope: str
    embedding: list[float]
    """Only in flight, from ``attach_embeddings`` to ``put``: stored in the vector hash."""
    passage_embeddings: list[list[float]]
    """Only in flight, like ``embedding``: the vectors of a long text's later passages
    (``aether.memory.storage.readings.passages``), stored in passage hashes."""


class DailyEntry(MemoryRecord, total=False):
    """A daily log entry."""

    day: str


class LongTermRecord(MemoryRecord, total=False):
    """A distilled long-term memory; ``sources`` are the entries it came from."""

    sources: list[str]


class Belief(MemoryRecord, total=False):
    """A belief with its lifecycle (see ``aether.memory.knowledge.beliefs``)."""

    type: str
    confidence: float
    reinforced_at: float
    status: str
    evidence: list[str]
    supersedes: str | None
    superseded_by: str | None
    slots: list[str]
    """Subject-and-attribute keys of what it states (``aether.memory.knowledge.facts``)."""
    valid_from: float
    """When the statement says it became true ("since March"), if it says."""
    valid_until: float
    """When the statement says it stops being true ("until Friday"), if it says."""
    effective_confidence: float
    """Computed when read, never stored."""


class Event(MemoryRecord, total=False):
    """Something that happened in a session (docs/design.md, "Entity graph and events")."""

    type: str
    actor: str
    payload: dict[str, object]
    summary: str
    outcome: str
    parent: str
    duration_ms: float | None
    keywords: list[str]


class Decision(MemoryRecord, total=False):
    """A decision and how it turned out."""

    title: str
    choice: str
    rationale: str
    outcome: str
    outcome_note: str


class Failure(MemoryRecord, total=False):
    """A failure, grouped by its pattern key."""

    error: str
    context: str
    pattern: str
    event: str


class MemoryDoc(DailyEntry, LongTermRecord, Belief, Event, Decision, Failure, total=False):
    """A memory document as read: any kind, and only the fields asked for."""


@dataclass(frozen=True)
class KindSpec:
    """One memory kind in the registry.

    Attributes:
        name: the ``kind`` field's value.
        label: how people are told about them ("daily entries").
        key: the keyspace's builder of a document key from an id.
        record: the kind's record type.
        transferable: whether ``memory export``/``import`` carry the kind.
    """

    name: Kind
    label: str
    key: Callable[[Keyspace, str], str]
    record: type[MemoryRecord]
    transferable: bool = False

    def prefix(self, keys: Keyspace) -> str:
        """The key prefix of this kind's documents."""
        return self.key(keys, "")


MEMORY_KINDS: Mapping[str, KindSpec] = {
    spec.name: spec
    for spec in (
        KindSpec("daily", "daily entries", Keyspace.daily_entry, DailyEntry, True),
        KindSpec("longterm", "long-term memories", Keyspace.longterm, LongTermRecord, True),
        KindSpec("belief", "beliefs", Keyspace.belief, Belief),
        KindSpec("event", "events", Keyspace.event, Event),
        KindSpec("decision", "decisions", Keyspace.decision, Decision),
        KindSpec("failure", "failures", Keyspace.failure, Failure),
    )
}
assert tuple(MEMORY_KINDS) == KINDS, "every Kind has one registry entry"


def memory_prefixes(keys: Keyspace) -> list[str]:
    """Key prefixes of every memory kind's documents (what the search index covers)."""
    return [spec.prefix(keys) for spec in MEMORY_KINDS.values()]


def record_key(keys: Keyspace, kind: str, record_id: str) -> str:
    """The key of a memory document of ``kind``.

    Raises:
        InvalidOperationError: unknown kind.
    """
    return MEMORY_KINDS[check_kind(kind)].key(keys, record_id)


def base_record(
    kind: str,
    content: str,
    *,
    max_bytes: int,
    source: str,
    tags: list[str] | None,
    score: float,
    timestamp: datetime | float | None,
    record_id: str | None,
) -> MemoryDoc:
    """The validated fields every memory document has (id, kind, content, ..., hash).

    Typed as the widest record so that each kind's builder adds its own fields.
    """
    from aether.ids import check_id, new_id

    content = check_content(content, max_bytes)
    clean_tags = check_tags(tags)
    ts = check_timestamp(timestamp)
    return {
        "id": check_id(record_id, f"{kind} id") if record_id else new_id(),
        "kind": check_kind(kind),
        "content": content,
        "source": check_source(source),
        "tags": clean_tags,
        "score": check_score(score),
        "timestamp": ts,
        "hash": content_hash(kind, content, source, clean_tags, ts),
    }


def day_of(timestamp: float) -> str:
    """The UTC day (``YYYY-MM-DD``) of a timestamp."""
    return datetime.fromtimestamp(timestamp, tz=UTC).date().isoformat()


def public(doc: Mapping[str, object]) -> dict[str, object]:
    """A document without its embedding (for people and JSON output)."""
    return {k: v for k, v in doc.items() if k != "embedding"}

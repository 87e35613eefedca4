"""Validated memory records: what a daily entry or long-term memory document holds.

Documents are RedisJSON values indexed by ``ns:memory:idx``; field names here are the
index's field names.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from aether.errors import InvalidOperationError

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


def check_kind(kind: str) -> str:
    """One of daily, longterm, belief."""
    if kind not in KINDS:
        raise InvalidOperationError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    return kind


def check_tags(tags: list[str] | tuple[str, ...] | None) -> list[str]:
    """At most 32 tags of 1-64 printable characters; duplicates removed, order kept."""
    if tags is None:
        return []
    if isinstance(tags, str):
        raise InvalidOperationError("tags must be a list of strings, not one string")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not _TAG.match(tag) or not tag.strip():
            raise InvalidOperationError(f"invalid tag {str(tag)[:40]!r}: 1-64 printable characters")
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
) -> dict[str, Any]:
    """The validated fields every memory document has (id, kind, content, ..., hash)."""
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


def public(doc: dict[str, Any]) -> dict[str, Any]:
    """A document without its embedding (for people and JSON output)."""
    return {k: v for k, v in doc.items() if k != "embedding"}

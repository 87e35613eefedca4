"""Value-level diffs: what a key held at a checkpoint against what it holds now.

The journal keeps, for every change, the ops that undo it. A key's value at a checkpoint
is its value now with its inverses after the checkpoint applied newest first, which is
what a rollback would do. The exact pre-images (``RESTORE`` of a DUMP) are decoded by
restoring them into a short-lived scratch key; the structural inverses (pops, pushes,
sorted-set adds and removals) are replayed in Python. Nothing of the agent's state is
written.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from redis.asyncio import Redis

from aether.codec import text
from aether.keys import Keyspace
from aether.store.values import ABSENT, Value, ValueType, decode_images

# arrays of numbers longer than this (vectors) show as a count, not element by element
_VECTOR_AT = 8

Change = Literal["created", "modified", "deleted"]


@dataclass
class FieldChange:
    """One field (hash field, JSON path, sorted-set member or the string) that changed."""

    field: str
    before: str | None
    after: str | None


@dataclass
class KeyChange:
    """How one key differs between a checkpoint and now."""

    key: str
    tier: str
    change: Change
    type: ValueType
    fields: list[FieldChange] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return asdict(self)


def shown(raw: bytes | str | None) -> str | None:
    """A stored value as text: UTF-8 as is, anything else as its size."""
    if raw is None or isinstance(raw, str):
        return raw
    try:
        decoded = raw.decode()
    except UnicodeDecodeError:
        return f"<{len(raw)} bytes>"
    return decoded if decoded.isprintable() or decoded.strip() else f"<{len(raw)} bytes>"


def _replay(value: Value, op: list[bytes]) -> Value:
    """Apply one structural inverse op to a list or sorted set held in Python."""
    cmd, args = text(op[0]), op[2:]
    if cmd in ("RPOP", "LPOP", "RPUSH", "LPUSH"):
        items: list[bytes] = list(value.content or [])
        if cmd == "RPOP":
            items = items[: max(len(items) - int(args[0]), 0)]
        elif cmd == "LPOP":
            items = items[int(args[0]) :]
        elif cmd == "RPUSH":
            items = items + list(args)
        else:
            items = list(reversed(args)) + items
        return Value("list", items) if items else ABSENT
    scores: dict[bytes, float] = dict(value.content or {})
    if cmd == "ZADD":
        start = 1 if args and args[0] == b"GT" else 0
        for i in range(start, len(args) - 1, 2):
            score, member = float(args[i]), args[i + 1]
            if start == 0 or member not in scores or score > scores[member]:
                scores[member] = score
    elif cmd == "ZREM":
        for member in args:
            scores.pop(member, None)
    else:
        raise ValueError(f"cannot replay {cmd}")
    return Value("zset", scores) if scores else ABSENT


async def values_at_checkpoint(
    client: Redis, keys: Keyspace, nows: Sequence[Value], undos: Sequence[list[list[bytes]]]
) -> list[Value]:
    """Keys' values at a checkpoint, from their values now and their inverses in undo order.

    Each key's ``undo`` is its inverse ops after the checkpoint, newest change first, each
    change's ops in their application order (the order a rollback applies them); their
    images (a scratch key decodes DUMP payloads) are decoded together.
    """
    starts: list[Value] = []
    rests: list[list[list[bytes]]] = []
    images: dict[int, bytes] = {}  # position -> the DUMP payload its replay starts from
    for at, (now, undo) in enumerate(zip(nows, undos, strict=True)):
        last_image = max(
            (i for i, op in enumerate(undo) if op[0] in (b"RESTORE", b"DEL")), default=None
        )
        value, rest = now, undo
        if last_image is not None:
            op = undo[last_image]
            value = ABSENT
            if op[0] == b"RESTORE":
                images[at] = op[2]
            rest = undo[last_image + 1 :]
        starts.append(value)
        rests.append(rest)
    decoded = await decode_images(client, keys, list(images.values()))
    for at, value in zip(images, decoded, strict=True):
        starts[at] = value
    out = []
    for value, rest in zip(starts, rests, strict=True):
        for op in rest:
            value = _replay(value, op)
        out.append(value)
    return out


def _flatten(doc: Any, path: str = "") -> dict[str, str]:
    """A JSON document as ``path -> value`` leaves (objects walked; arrays are leaves)."""
    if isinstance(doc, dict) and doc:
        out: dict[str, str] = {}
        for name, child in doc.items():
            out.update(_flatten(child, f"{path}.{name}" if path else str(name)))
        return out
    numeric = isinstance(doc, list) and all(isinstance(x, int | float) for x in doc)
    if numeric and len(doc) > _VECTOR_AT:
        return {path or "$": f"<{len(doc)} numbers>"}
    return {path or "$": doc if isinstance(doc, str) else json.dumps(doc, sort_keys=True)}


def _field_changes(before: dict[str, Any], after: dict[str, Any]) -> list[FieldChange]:
    changes = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old != new:
            changes.append(FieldChange(name, shown(old), shown(new)))
    return changes


def _exact(score: float) -> str:
    """A sorted-set score as it is (``1795552110.77``, ``3``): never rounded to 6 digits."""
    return str(int(score)) if float(score).is_integer() else repr(float(score))


def _members(items: Iterable[bytes]) -> list[str]:
    return [shown(item) or "" for item in items]


def compare(before: Value, after: Value) -> KeyChange | None:
    """How ``after`` differs from ``before`` (None when they are equal).

    The key and tier are left empty for the caller to fill in.
    """
    if before == after:
        return None
    if before.type == "none":
        change: Change = "created"
    elif after.type == "none":
        change = "deleted"
    else:
        change = "modified"
    kind = after.type if after.type != "none" else before.type
    result = KeyChange("", "", change, kind)
    if before.type not in (kind, "none") or after.type not in (kind, "none"):
        result.fields.append(FieldChange("type", before.type, after.type))
        return result
    old, new = before.content, after.content
    if kind == "string":
        result.fields.append(FieldChange("value", shown(old), shown(new)))
    elif kind == "hash":
        result.fields = _field_changes(old or {}, new or {})
    elif kind == "json":
        result.fields = _field_changes(
            _flatten(old) if old is not None else {}, _flatten(new) if new is not None else {}
        )
    elif kind == "zset":
        old_scores, new_scores = old or {}, new or {}
        result.added = _members(sorted(m for m in new_scores if m not in old_scores))
        result.removed = _members(sorted(m for m in old_scores if m not in new_scores))
        result.fields = [
            FieldChange(shown(m) or "", _exact(old_scores[m]), _exact(new_scores[m]))
            for m in sorted(old_scores)
            if m in new_scores and old_scores[m] != new_scores[m]
        ]
    elif kind == "set":
        result.added = _members(sorted(set(new or ()) - set(old or ())))
        result.removed = _members(sorted(set(old or ()) - set(new or ())))
    else:  # a list: the items that came and went, repeats counted
        old_items, new_items = Counter(old or ()), Counter(new or ())
        result.added = _members((new_items - old_items).elements())
        result.removed = _members((old_items - new_items).elements())
    return result

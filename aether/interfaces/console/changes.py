"""A checkpoint's diff as an operator reads it: items, not keys and fields.

The diff (``checkpoint_diff``) lists every changed key with its changed fields. A memory
is several keys (its document, its vector hash, its passages), a belief has a history
list beside it, and the index's counters change with every write. The confirmation page
shows one row per *item* (the keys that belong to one thing merged under it; the
bookkeeping keys in a folded group of their own), a summary per tier and kind of change
counted in items, and pages of :data:`PAGE_SIZE` items, so that its button is in view
and the operator reads what changes, not how it is stored.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aether.keys import Keyspace

__all__ = ["PAGE_SIZE", "FieldView", "ItemChange", "Summary", "items_of", "summary_of"]

PAGE_SIZE = 40
"""Items per page of a confirmation."""
FOLD_AT = 160
"""Characters of a value shown before the rest is folded."""
# tiers whose keys are bookkeeping (recomputed from the items): shown folded, last
BOOKKEEPING = frozenset({"memory index"})
_LABEL_FIELDS = ("content", "statement", "title", "name", "value", "text")


@dataclass
class FieldView:
    """One changed field: its name, before and after (``None``: absent)."""

    name: str
    before: str | None
    after: str | None

    @property
    def folded(self) -> bool:
        """Whether a value is long enough to fold."""
        return any(v is not None and len(v) > FOLD_AT for v in (self.before, self.after))


@dataclass
class ItemChange:
    """One item (a memory, a belief, a task, a thread...) and how it changes back.

    Attributes:
        tier: its tier (``daily``, ``beliefs``, ``threads``...).
        item: its key without the namespace.
        change: ``created``, ``modified`` or ``deleted`` (of its main key).
        label: what it is, in a line (its content when it has one).
        fields: the fields that change, the item's keys merged.
        members: members or elements added and removed (sets, lists, sorted sets).
        keys: every key of the item that changes.
    """

    tier: str
    item: str
    change: str
    label: str
    fields: list[FieldView] = field(default_factory=list)
    members: list[tuple[str, str]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)

    @property
    def bookkeeping(self) -> bool:
        """Whether it is a counter or index the items' changes recompute."""
        return self.tier in BOOKKEEPING


@dataclass
class Summary:
    """Items per tier and kind of change, and the totals."""

    rows: list[tuple[str, int, int, int]]
    items: int
    keys: int


def _label(item: str, fields: list[FieldView]) -> str:
    for wanted in _LABEL_FIELDS:
        for f in fields:
            if f.name == wanted or f.name.endswith("." + wanted):
                value = f.after if f.after is not None else f.before
                if value:
                    return value if len(value) <= 120 else value[:119] + "…"
    if fields:  # what changes, when nothing says what it is
        names = ", ".join(f.name for f in fields[:3])
        return f"{item}: {names}" + (" …" if len(fields) > 3 else "")
    return item


def items_of(changes: list[dict[str, Any]], keys: Keyspace) -> list[ItemChange]:
    """The diff's key changes grouped into items (bookkeeping last), in the diff's order."""
    by_item: dict[str, ItemChange] = {}
    for change in changes:
        key = str(change["key"])
        owner = keys.owner(key) or key
        item = owner[len(keys.prefix) :] if keys.owns(owner) else owner
        found = by_item.get(item)
        if found is None:
            found = by_item[item] = ItemChange(
                tier=str(change["tier"]), item=item, change=str(change["change"]), label=item
            )
        if key == owner:  # the item's own key says what happens to it
            found.change = str(change["change"])
            found.tier = str(change["tier"])
        prefix = "" if key == owner else _suffix(key, owner) + " "
        for f in change.get("fields") or []:
            found.fields.append(FieldView(prefix + str(f["field"]), f["before"], f["after"]))
        found.members += [("+", str(m)) for m in change.get("added") or []]
        found.members += [("-", str(m)) for m in change.get("removed") or []]
        found.keys.append(key)
    out = list(by_item.values())
    for found in out:
        found.label = _label(found.item, found.fields)
    return sorted(out, key=lambda i: i.bookkeeping)


def _suffix(key: str, owner: str) -> str:
    """What distinguishes an owned key from its owner (``vector``, ``history``...)."""
    if ":vec:" in key:
        return "vector" + (key.rsplit("#", 1)[1] if "#" in key else "")
    head = key.split(":")
    return head[1] if len(head) > 1 else "part"


def summary_of(items: list[ItemChange]) -> Summary:
    """Items per tier: created, changed, deleted; ``items`` counts them all (one unit)."""
    counted: Counter[tuple[str, str]] = Counter()
    for item in items:
        counted[(item.tier, item.change)] += 1
    tiers = sorted({tier for tier, _ in counted})
    rows = [
        (
            tier,
            counted[(tier, "created")],
            counted[(tier, "modified")],
            counted[(tier, "deleted")],
        )
        for tier in tiers
    ]
    return Summary(rows=rows, items=len(items), keys=sum(len(i.keys) for i in items))

"""``AetherStore``: LangGraph's long-term store (``BaseStore``) over aether's memory.

Items are journaled state of the agent's namespace
(:class:`aether.integrations.langgraph.items.NamespacedItems`): a rollback rewinds them, an
erasure removes them, redis-cli shows them (``<ns>:langgraph:item:*``). An item put
with something to index is also a long-term memory, scoped to its namespace, so
``search(prefix, query=...)`` is aether's hybrid search (vectors and full text, the
relevance floor: an unrelated query finds nothing), and the agent's own context and
``aether memory search`` find it too::

    async with Aether.open(Settings(namespace="support-bot")) as parts:
        store = AetherStore(parts)
        await store.aput(("users", "u1", "prefs"), "tea", {"text": "likes green tea"})
        hits = await store.asearch(("users", "u1"), query="what does the user drink?")

What is indexed: the fields ``index`` names (LangGraph's paths, ``"$"`` for the whole
value, the default: every string in it), or a put's own ``index`` list; ``index=False``
stores without indexing. ``ttl`` (minutes, as LangGraph counts) hides an item once
passed, is renewed on read when asked, and ``asweep_ttl`` deletes what has expired.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path
from redisvl.query.filter import FilterExpression, Tag

from aether.errors import InvalidOperationError
from aether.integrations.langgraph.items import (
    COMPLETE_TAG,
    STORE_TAG,
    ItemWrite,
    NamespacedItems,
    StoredItem,
    check_namespace,
    prefix_tag,
    value_tag,
)
from aether.integrations.loop import LoopBound

if TYPE_CHECKING:
    from collections.abc import Callable

    from aether.memory.retrieval.hit import SearchHit
    from aether.memory.retrieval.search import MemorySearch
    from aether.operations.parts import Parts

__all__ = ["AetherStore"]

SEARCH_POOL = 5
"""How many memories a search asks for per item it returns (filters drop some)."""
MAX_POOL = 1000
"""The most memories one search asks for."""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _operator(value: Any, operator: str, wanted: Any) -> bool:
    if operator == "$eq":
        return bool(value == wanted)
    if operator == "$ne":
        return bool(value != wanted)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        left, right = _number(value), _number(wanted)
        if left is None or right is None:
            return False
        return {
            "$gt": left > right,
            "$gte": left >= right,
            "$lt": left < right,
            "$lte": left <= right,
        }[operator]
    raise InvalidOperationError(f"unsupported filter operator {operator!r}")


OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def check_filter(wanted: Any) -> None:
    """Refuse a filter with an operator LangGraph does not define.

    Raises:
        InvalidOperationError: an unknown ``$`` operator anywhere in the filter.
    """
    if isinstance(wanted, dict):
        for k, v in wanted.items():
            if isinstance(k, str) and k.startswith("$") and k not in OPERATORS:
                raise InvalidOperationError(f"unsupported filter operator {k!r}")
            check_filter(v)
    elif isinstance(wanted, list | tuple):
        for v in wanted:
            check_filter(v)


def matches(value: Any, wanted: Any) -> bool:
    """Whether a stored value satisfies a LangGraph filter value (nested, with operators)."""
    if isinstance(wanted, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(value, k, v) for k, v in wanted.items())
        if not isinstance(value, dict):
            return False
        return all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _conditions(
    wanted: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], str, Any]]:
    """(path, operator, operand) of each condition of a filter (nested objects by path)."""
    for key, value in wanted.items():
        if isinstance(value, dict) and any(str(k).startswith("$") for k in value):
            for operator, operand in value.items():
                yield (*path, key), operator, operand
        elif isinstance(value, dict):
            yield from _conditions(value, (*path, key))
        else:
            yield (*path, key), "$eq", value


def filter_expression(wanted: dict[str, Any]) -> FilterExpression | None:
    """The part of a LangGraph filter the index can apply: equalities and ``$ne``.

    Each is a value tag (:func:`~aether.integrations.langgraph.items.value_tag`). An item whose
    value has more fields than a memory has tags passes the query; the filter applied
    after the search decides for it, and for the comparisons.
    """
    parts: list[FilterExpression] = []
    for path, operator, operand in _conditions(wanted):
        if isinstance(operand, dict):
            continue  # a whole object compared: after the search
        if operator == "$eq":
            parts.append(Tag("tags") == value_tag(path, operand))
        elif operator == "$ne":
            parts.append(Tag("tags") != value_tag(path, operand))
    if not parts:
        return None
    combined = parts[0]
    for part in parts[1:]:
        combined = combined & part
    return combined | (Tag("tags") != COMPLETE_TAG)


def _valid(namespace: tuple[str, ...]) -> bool:
    """Whether items can be stored under ``namespace`` (labels compared as a tuple)."""
    try:
        check_namespace(namespace)
    except InvalidOperationError:
        return False
    return True


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


def _when(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _item(stored: StoredItem) -> Item:
    return Item(
        value=stored.value,
        key=stored.key,
        namespace=stored.namespace,
        created_at=_when(stored.created_at),
        updated_at=_when(stored.updated_at),
    )


def _search_item(stored: StoredItem, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=stored.namespace,
        key=stored.key,
        value=stored.value,
        created_at=_when(stored.created_at),
        updated_at=_when(stored.updated_at),
        score=score,
    )


class AetherStore(BaseStore):
    """LangGraph's ``BaseStore`` over an aether namespace.

    Args:
        parts: the namespace's parts (``Aether`` from ``Aether.open``).
        index: the value paths indexed for search by default (``["$"]``: every string of
            the value), or LangGraph's ``IndexConfig`` (its ``fields`` are used; aether
            embeds with its own configured embedder, so ``dims`` and ``embed`` are not
            needed); ``None`` means the default.
        ttl: LangGraph's TTL settings (``default_ttl`` in minutes, ``refresh_on_read``).
        clock: the time (epoch seconds); injected by tests.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        parts: Parts,
        *,
        index: list[str] | IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._bridge = LoopBound("AetherStore")
        self.items = NamespacedItems(parts.memory)
        self._parts = parts
        fields = index.get("fields") if isinstance(index, dict) else index
        self.index_fields = list(fields) if fields else ["$"]
        self._ttl: TTLConfig = ttl or TTLConfig(refresh_on_read=True)
        self.ttl_config = self._ttl
        self._clock = clock

    @property
    def search_engine(self) -> MemorySearch:
        """The hybrid search items are found by (the namespace's, judged as configured)."""
        return self._parts.search

    # -- BaseStore ---------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Sync :meth:`abatch` (call it from another thread than the loop's)."""
        return self._bridge.run(self.abatch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations: reads see the state before the batch; its puts apply together."""
        now = self._clock()
        results: list[Result] = []
        puts: list[ItemWrite] = []
        touched: list[StoredItem] = []
        for op in ops:
            if isinstance(op, GetOp):
                found = await self._get(op, now)
                if found is not None and op.refresh_ttl:
                    touched.append(found)
                results.append(None if found is None else _item(found))
            elif isinstance(op, SearchOp):
                hits = await self._search(op, now)
                if op.refresh_ttl:
                    touched.extend(item for item, _ in hits)
                results.append([_search_item(item, score) for item, score in hits])
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts.append(self._write(op))
                results.append(None)
            else:
                raise InvalidOperationError(f"unknown store operation {type(op).__name__}")
        if puts:
            await self.items.write(puts, now)
        if touched and self._ttl.get("refresh_on_read", True):
            written = {(w.namespace, w.key) for w in puts}
            await self.items.touch([t for t in touched if (t.namespace, t.key) not in written], now)
        return results

    async def asweep_ttl(self) -> int:
        """Delete the items whose time to live has passed (one change); returns how many."""
        now = self._clock()
        expired = await self.items.expired(now)
        if expired:
            await self.items.write([ItemWrite(i.namespace, i.key, None) for i in expired], now)
        return len(expired)

    def sweep_ttl(self) -> int:
        """Sync :meth:`asweep_ttl`."""
        return self._bridge.run(self.asweep_ttl())

    # -- operations --------------------------------------------------------------------
    async def _get(self, op: GetOp, now: float) -> StoredItem | None:
        namespace = tuple(op.namespace)
        if not _valid(namespace):
            return None  # nothing is ever stored there ("a.b" is not the labels "a", "b")
        (found,) = await self.items.get_many([(namespace, op.key)])
        return None if found is None or _expired(found, now) else found

    def _write(self, op: PutOp) -> ItemWrite:
        namespace = tuple(op.namespace)
        if namespace and namespace[0] == "langgraph":
            raise InvalidOperationError('a store namespace cannot start with "langgraph"')
        if op.value is None:
            return ItemWrite(namespace, op.key, None)
        value = dict(op.value)
        text: str | None = None
        if op.index is not False:
            paths = self.index_fields if op.index is None else list(op.index)
            found: list[str] = []
            for path in paths:
                if path == "$":
                    found.extend(_strings(value))
                else:
                    found.extend(get_text_at_path(value, tokenize_path(path)))
            text = "\n".join(t for t in found if t.strip()) or None
        minutes = op.ttl if op.ttl is not None else self._ttl.get("default_ttl")
        ttl_s = float(minutes) * 60 if minutes else None
        return ItemWrite(namespace, op.key, value, index_text=text, ttl_s=ttl_s)

    async def _search(self, op: SearchOp, now: float) -> list[tuple[StoredItem, float | None]]:
        check_filter(op.filter or {})
        prefix = tuple(op.namespace_prefix)
        wanted = max(op.limit, 0)
        if wanted == 0 or (prefix and not _valid(prefix)):
            return []

        def kept(
            found: list[tuple[StoredItem, float | None]],
        ) -> list[tuple[StoredItem, float | None]]:
            return [
                (item, score)
                for item, score in found
                if not _expired(item, now)
                and item.namespace[: len(prefix)] == prefix
                and all(matches(item.value.get(k), v) for k, v in (op.filter or {}).items())
            ]

        if not op.query:
            listed: list[tuple[StoredItem, float | None]] = []
            for namespace in await self.items.namespaces():
                if namespace[: len(prefix)] != prefix:
                    continue
                keys = await self.items.keys_in(namespace)
                found = await self.items.get_many([(namespace, k) for k in keys])
                listed.extend((item, None) for item in found if item is not None)
            listed.sort(key=lambda pair: pair[0].updated_at, reverse=True)
            return kept(listed)[op.offset : op.offset + wanted]
        tag = prefix_tag(prefix) if prefix else STORE_TAG
        where = filter_expression(op.filter or {})
        pool = min(MAX_POOL, (op.offset + wanted) * SEARCH_POOL)
        while True:  # what the query cannot filter is filtered here: ask deeper if short
            hits = await self.search_engine.search(
                op.query, kind="longterm", tags=[tag], limit=pool, where=where
            )
            result = kept(await self._hit_items(hits))
            if len(result) >= op.offset + wanted or len(hits) < pool or pool >= MAX_POOL:
                return result[op.offset : op.offset + wanted]
            pool = min(MAX_POOL, pool * 4)

    async def _hit_items(self, hits: list[SearchHit]) -> list[tuple[StoredItem, float | None]]:
        """The items the hits index, each with the relevance it is ranked by, best first."""
        items = await self.items.items_of_memories([h.doc.get("id", "") for h in hits])
        seen: set[tuple[tuple[str, ...], str]] = set()
        out: list[tuple[StoredItem, float | None]] = []
        for hit, item in zip(hits, items, strict=True):
            if item is None or (item.namespace, item.key) in seen:
                continue
            seen.add((item.namespace, item.key))
            out.append((item, hit.relevance))
        out.sort(key=lambda pair: -(pair[1] or 0.0))  # stable: the search's order at ties
        return out

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = await self.items.namespaces()
        if op.match_conditions:
            namespaces = [
                ns
                for ns in namespaces
                if all(_namespace_matches(c, ns) for c in op.match_conditions)
            ]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        return namespaces[op.offset : op.offset + op.limit]


def _expired(item: StoredItem, now: float) -> bool:
    return item.expires_at is not None and item.expires_at <= now

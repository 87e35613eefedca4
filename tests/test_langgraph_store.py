"""AetherStore beside LangGraph's InMemoryStore: the same operations, the same answers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, InvalidNamespaceError
from langgraph.store.memory import InMemoryStore
from pydantic import SecretStr

from aether.app import Aether
from aether.config import EmbeddingSettings, Settings
from aether.errors import InvalidOperationError
from aether.integrations.langgraph import AetherStore
from aether.testing.model import ScriptedOpenAI, bag_of_words

DIMS = 64
ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("users", "u1", "prefs"), "drink", {"text": "likes green tea in the morning", "rank": 3}),
    (("users", "u1", "prefs"), "food", {"text": "allergic to peanuts", "rank": 5}),
    (("users", "u1", "facts"), "city", {"text": "lives in Lisbon near the river", "rank": 1}),
    (("users", "u2", "prefs"), "drink", {"text": "drinks espresso after lunch", "rank": 4}),
    (("teams", "infra"), "oncall", {"text": "pager rotation changes on Mondays", "rank": 2}),
    (("teams", "infra"), "meta", {"text": "nested", "tags": {"env": "prod"}, "list": [1, 2]}),
]


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(dims=DIMS) as server:
        yield server


@pytest.fixture
async def app(redis_home: Path, model: ScriptedOpenAI) -> AsyncIterator[Aether]:
    settings = Settings(
        home=redis_home,
        namespace=f"st{uuid.uuid4().hex[:10]}",
        embedding=EmbeddingSettings(
            provider="openai",
            base_url=model.base_url,
            api_key=SecretStr("test"),
            model="scripted",
            dims=DIMS,
        ),
    )
    async with Aether.open(settings) as opened:
        yield opened


def _memory_store() -> InMemoryStore:
    def embed(texts: list[str]) -> list[list[float]]:
        return [bag_of_words(t, DIMS) for t in texts]

    return InMemoryStore(index={"dims": DIMS, "embed": embed, "fields": ["$"]})


async def _fill(store: BaseStore) -> None:
    for namespace, key, value in ITEMS:
        await store.aput(namespace, key, value)


def _keys(results: list[Any]) -> list[tuple[tuple[str, ...], str]]:
    return sorted((r.namespace, r.key) for r in results)


async def test_same_answers_as_langgraphs_in_memory_store(app: Aether) -> None:
    ours, theirs = AetherStore(app), _memory_store()
    for store in (ours, theirs):
        await _fill(store)
    for kwargs in (
        {},
        {"prefix": ("users",)},
        {"suffix": ("prefs",)},
        {"prefix": ("users", "*", "prefs")},
        {"max_depth": 2},
        {"limit": 2, "offset": 1},
    ):
        assert await ours.alist_namespaces(**kwargs) == await theirs.alist_namespaces(**kwargs), (
            kwargs
        )

    for store in (ours, theirs):
        await store.aput(
            ("users", "u1", "prefs"), "drink", {"text": "switched to mint tea", "rank": 3}
        )
        await store.adelete(("users", "u2", "prefs"), "drink")
        await store.adelete(("users", "u9"), "never-there")

    # exact-match operations: identical
    for namespace, key, _ in ITEMS:
        a, b = await ours.aget(namespace, key), await theirs.aget(namespace, key)
        assert (a is None) == (b is None), (namespace, key)
        if a is not None and b is not None:
            assert (a.namespace, a.key, a.value) == (b.namespace, b.key, b.value)
    assert (await ours.aget(("users", "u1", "prefs"), "drink")).value[
        "text"
    ] == "switched to mint tea"  # type: ignore[union-attr]

    # a namespace whose last item went is not listed (InMemoryStore keeps listing it,
    # and lists one that was only deleted from; LangGraph's Postgres store does not)
    assert ("users", "u2", "prefs") not in await ours.alist_namespaces()
    assert ("users", "u9") not in await ours.alist_namespaces()

    for prefix, flt in (
        (("users",), None),
        (("users", "u1"), {"rank": 5}),
        (("users",), {"rank": {"$gte": 3}}),
        (("users",), {"rank": {"$lt": 3}}),
        (("users",), {"rank": {"$ne": 5}}),
        (("teams",), {"tags": {"env": "prod"}}),
        (("teams",), {"list": [1, 2]}),
        (("nobody",), None),
    ):
        a = await ours.asearch(prefix, filter=flt, limit=50)
        b = await theirs.asearch(prefix, filter=flt, limit=50)
        assert _keys(a) == _keys(b), (prefix, flt)

    # search by an item's own text finds that item first, in both
    for namespace, key, value in ITEMS[1:3] + ITEMS[4:5]:
        a = await ours.asearch(namespace[:1], query=value["text"], limit=3)
        b = await theirs.asearch(namespace[:1], query=value["text"], limit=3)
        assert a and b, value
        assert (a[0].namespace, a[0].key) == (b[0].namespace, b[0].key) == (namespace, key)
        assert a[0].score is not None
    mint = await ours.asearch(("users",), query="switched to mint tea")
    assert (mint[0].namespace, mint[0].key) == (("users", "u1", "prefs"), "drink")
    # the relevance floor: an unrelated query finds nothing
    assert await ours.asearch(("users",), query="quarterly tax filing deadline") == []
    # and the search stays inside the prefix
    assert all(r.namespace[:1] == ("teams",) for r in await ours.asearch(("teams",), query="tea"))


async def test_items_are_memory_and_roll_back_and_erase(app: Aether) -> None:
    store = AetherStore(app)
    await store.aput(("users", "u1"), "home", {"text": "Ottoline Brandt lives at 12 Rua Augusta"})
    await store.aput(("users", "u1"), "pet", {"text": "has a cat called Miso"})
    await store.aput(("users", "u1"), "quiet", {"text": "not searchable"}, index=False)
    # the agent's own search finds store items, scoped to their namespace
    hits = await app.search.search("cat called Miso", scopes=["workspace:users.u1"])
    assert hits and "Miso" in hits[0].doc["content"]
    assert await store.asearch(("users",), query="not searchable") == []
    assert (await store.aget(("users", "u1"), "quiet")) is not None

    before = await app.checkpoints.create(label="two items", actor="test")
    await store.adelete(("users", "u1"), "pet")
    await store.aput(("users", "u1"), "car", {"text": "drives a green van"})
    assert await store.aget(("users", "u1"), "pet") is None
    await app.checkpoints.rollback_to(before.id, actor="test")
    assert (await store.aget(("users", "u1"), "pet")) is not None
    assert await store.aget(("users", "u1"), "car") is None
    assert _keys(await store.asearch(("users",), query="cat called Miso"))[0][1] == "pet"

    await app.eraser().erase(subject="Ottoline Brandt")
    assert await app.eraser().verify("Ottoline Brandt") == []
    assert await store.aget(("users", "u1"), "home") is None
    assert await store.asearch(("users",), query="12 Rua Augusta") == []
    assert (await store.aget(("users", "u1"), "pet")) is not None


async def test_ttl_hides_refreshes_and_sweeps(app: Aether) -> None:
    clock = Clock()
    store = AetherStore(app, clock=clock)
    await store.aput(("s",), "short", {"text": "expires soon"}, ttl=1)  # one minute
    await store.aput(("s",), "long", {"text": "stays"})
    clock.now += 50
    assert await store.aget(("s",), "short") is not None  # read: renewed to now + 60 s
    clock.now += 50
    assert await store.aget(("s",), "short", refresh_ttl=False) is not None
    clock.now += 20
    assert await store.aget(("s",), "short") is None
    assert _keys(await store.asearch(("s",))) == [(("s",), "long")]
    assert await store.asweep_ttl() == 1
    assert await store.items.keys_in(("s",)) == ["long"]


async def test_sync_api_from_a_thread(app: Aether) -> None:
    store = AetherStore(app)
    await asyncio.to_thread(store.put, ("a",), "k", {"v": 1})
    assert (await asyncio.to_thread(store.get, ("a",), "k")).value == {"v": 1}  # type: ignore[union-attr]
    with pytest.raises(InvalidOperationError, match="async ones"):
        store.get(("a",), "k")


async def test_bad_input_is_refused_and_changes_nothing(app: Aether) -> None:
    store = AetherStore(app)
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("bad.label",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("langgraph", "x"), "k", {"v": 1})
    with pytest.raises(InvalidOperationError, match="JSON"):
        await store.aput(("a",), "k", {"v": object()})
    with pytest.raises(InvalidOperationError, match="at most"):
        await store.aput(("a",), "k", {"v": "x" * 2_000_000})
    with pytest.raises(InvalidOperationError, match="operator"):
        await store.asearch(("a",), filter={"v": {"$regex": ".*"}})
    await store.aput(("a",), "ok", {"q": "special chars: * ? [ ] ( ) | @ - ~ \" '"})
    assert await store.asearch(("a",), query="* ? [ ] ( ) | @ - ~ \" '") is not None
    assert await store.alist_namespaces() == [("a",)]


async def test_index_fields_as_langgraph_configures_them(app: Aether) -> None:
    """LangGraph's IndexConfig works as given: its fields say what is searchable."""
    store = AetherStore(app, index={"dims": 64, "embed": lambda xs: [], "fields": ["title"]})
    await store.aput(("docs",), "a", {"title": "harbour pilot schedule", "body": "ignored words"})
    assert [h.key for h in await store.asearch(("docs",), query="harbour pilot schedule")] == ["a"]
    assert await store.asearch(("docs",), query="ignored words") == []


async def test_a_filter_matching_one_of_many_similar_items_finds_it(app: Aether) -> None:
    """The filter is applied in the query: 300 near-identical items, one matches."""
    store = AetherStore(app)
    for n in range(300):
        owner = "ada" if n == 217 else f"user{n}"
        text = f"printer jams on floor two, ticket {n}"
        await store.aput(("tickets",), f"t{n}", {"text": text, "owner": owner})
    found = await store.asearch(("tickets",), query="printer jams", filter={"owner": "ada"})
    assert [h.key for h in found] == ["t217"]
    nested = await store.asearch(
        ("tickets",), query="printer jams", filter={"owner": {"$eq": "ada"}}, limit=3
    )
    assert [h.key for h in nested] == ["t217"]
    others = await store.asearch(
        ("tickets",), query="printer jams", filter={"owner": {"$ne": "ada"}}, limit=50
    )
    assert len(others) == 50 and "t217" not in {h.key for h in others}
    # what the index cannot compare is filtered after the search, deeper when needed
    await store.aput(("tickets",), "late", {"text": "printer jams again", "floor": 9})
    ranged = await store.asearch(("tickets",), query="printer jams", filter={"floor": {"$gt": 5}})
    assert [h.key for h in ranged] == ["late"]


async def test_the_score_is_what_the_results_are_ranked_by(app: Aether) -> None:
    store = AetherStore(app)
    for n, text in enumerate(["harbour pilot boards at dawn", "harbour pilot", "pilot boat"]):
        await store.aput(("docs",), f"d{n}", {"text": text})
    found = await store.asearch(("docs",), query="harbour pilot boards", limit=10)
    scores = [h.score for h in found]
    assert found and all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    hits = await app.search.search("harbour pilot boards", kind="longterm", limit=10)
    assert abs(scores[0] - max(h.relevance for h in hits)) < 1e-3  # recency moves with now


async def test_namespaces_are_compared_as_tuples_never_as_joined_strings(app: Aether) -> None:
    from langgraph.store.base import GetOp, SearchOp

    store = AetherStore(app)
    await store.aput(("foo", "bar"), "k", {"text": "kept under two labels"})
    [raw] = await store.abatch([GetOp(("foo.bar",), "k")])
    assert raw is None
    [hits] = await store.abatch([SearchOp(("foo.bar",), query="kept under two labels")])
    assert hits == []
    assert (await store.aget(("foo", "bar"), "k")) is not None
    assert [h.key for h in await store.asearch(("foo",), query="kept under two labels")] == ["k"]

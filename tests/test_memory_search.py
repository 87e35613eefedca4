"""Search: full text, filters, escaping, hybrid with local embeddings, fallback, import/export."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from redis.asyncio import Redis

from aether.config import MemorySettings, Settings
from aether.errors import InvalidOperationError
from aether.keys import Keyspace
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage.embeddings import make_embedder
from aether.memory.storage.fulltext import ensure_index
from aether.memory.storage.index_schemas import indexes_current
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.vectors import ensure_vector_index
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.longterm import LongTermMemory
from aether.memory.transfer import export_file, import_file
from aether.store.state import Store
from tests.conftest import dump_state, invoke_cli

NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()
SPECIAL = [
    "@",
    "-",
    "|",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "~",
    "*",
    ":",
    "\\",
    "a@b.c",
    "x-y",
    '"unbalanced',
    "it's",
    "@content:(evil) | *",
    "{deploy}",
    "[1 10]",
    "~fuzzy",
    "pre*",
    "ns:key",
    "back\\slash",
    "   ",
    "émoji 🧠",
    "%%%",
    "$param",
]


@pytest.fixture
async def text_layer(store: Store) -> MemoryLayer:
    layer = MemoryLayer(store, MemorySettings())
    await MemorySearch(layer).ensure_index()
    return layer


async def _seed(layer: MemoryLayer) -> dict[str, str]:
    daily, lt = DailyLog(layer), LongTermMemory(layer)
    ids = {}
    deploy_tags = ["release notes, v2", "ci"]
    ids["deploy"] = (
        await daily.log(
            "Deployed the billing service to staging", "agent", deploy_tags, timestamp=NOW - 3600
        )
    )["id"]
    ids["cat"] = (
        await daily.log(
            "The operator adopted a cat named Miso", "user", ["life"], timestamp=NOW - 86_400 * 40
        )
    )["id"]
    ids["tests"] = (
        await daily.log("Integration tests failed: redis timeout", "system", timestamp=NOW - 60)
    )["id"]
    ids["pref"] = (
        await lt.add(
            "The operator prefers concise deployment reports",
            tags=["preference"],
            timestamp=NOW - 86_400,
        )
    )["id"]
    return ids


async def test_full_text_search_stems_and_filters(text_layer: MemoryLayer) -> None:
    ids = await _seed(text_layer)
    search = MemorySearch(text_layer)
    hits = await search.search("deploying billing", now=NOW)
    assert hits[0].doc["id"] == ids["deploy"]  # "deploying" matches "Deployed" (stemming)
    assert {h.doc["id"] for h in await search.search("deploy", kind="longterm", now=NOW)} == {
        ids["pref"]
    }
    assert [h.doc["id"] for h in await search.search("operator", source="user", now=NOW)] == [
        ids["cat"]
    ]
    tagged = await search.search("deployed", tags=["release notes, v2"], now=NOW)
    assert [h.doc["id"] for h in tagged] == [ids["deploy"]]
    recent = await search.search("operator", since=NOW - 86_400 * 2, now=NOW)
    assert [h.doc["id"] for h in recent] == [ids["pref"]]
    assert await search.search("nothing matches this", now=NOW) == []
    assert "embedding" not in hits[0].doc


async def test_recency_breaks_ties(text_layer: MemoryLayer) -> None:
    daily = DailyLog(text_layer)
    old = await daily.log("weekly sync notes", timestamp=NOW - 86_400 * 300)
    new = await daily.log("weekly sync notes", timestamp=NOW - 3600)
    hits = await MemorySearch(text_layer).search("weekly sync", now=NOW)
    assert [h.doc["id"] for h in hits] == [new["id"], old["id"]]
    assert hits[0].relevance > hits[1].relevance


async def test_a_hit_lifts_the_turns_around_it_in_its_session(text_layer: MemoryLayer) -> None:
    daily = DailyLog(text_layer)
    turns = [
        ("s1", "Caroline: What did you do over the weekend?"),
        ("s2", "Bob: The printer on floor two is jammed again"),
        ("s1", "Melanie: I painted a sunrise over the lake"),
        ("s1", "Caroline: Lovely, you should show it somewhere"),
        ("s1", "Melanie: Maybe at the autumn fair"),
        ("s1", "Caroline: Let me know when it is"),
        ("s1", "Melanie: Will do, see you then"),
    ]
    ids = [
        (await daily.log(text, "user", session=session, timestamp=NOW - 600 + i))["id"]
        for i, (session, text) in enumerate(turns)
    ]
    hits = await MemorySearch(text_layer).search("painted sunrise", now=NOW)
    found = {h.doc["id"]: h for h in hits}
    assert hits[0].doc["id"] == ids[2]
    assert {ids[0], ids[3], ids[4]} <= set(found)  # one and two turns away
    assert ids[1] not in found  # next to the hit in the day's log, but another session
    assert ids[5] not in found and ids[6] not in found  # three and four turns away
    match = [found[ids[i]].match or 0.0 for i in (3, 4)]
    assert match == sorted(match, reverse=True)  # the nearer turn gets the larger share


async def test_a_memory_tagged_with_a_name_in_the_query_ranks_first(
    text_layer: MemoryLayer,
) -> None:
    daily = DailyLog(text_layer)
    other = await daily.log("went hiking in the hills", "user", ["melanie"], timestamp=NOW - 60)
    named = await daily.log("went hiking in the hills", "user", ["caroline"], timestamp=NOW - 120)
    hits = await MemorySearch(text_layer).search("where did Caroline go hiking", now=NOW)
    assert [h.doc["id"] for h in hits] == [named["id"], other["id"]]


@pytest.mark.parametrize("query", SPECIAL)
async def test_special_characters_never_break_queries(text_layer: MemoryLayer, query: str) -> None:
    await DailyLog(text_layer).log(f"note about {query} and deploys")
    await MemorySearch(text_layer).search(query)  # no syntax error, whatever the text
    await MemorySearch(text_layer).search("deploys", tags=[query.strip() or "x"])


async def test_search_bad_input(text_layer: MemoryLayer) -> None:
    search = MemorySearch(text_layer)
    with pytest.raises(InvalidOperationError, match="unknown kind"):
        await search.search("x", kind="gossip")
    with pytest.raises(InvalidOperationError, match="unknown source"):
        await search.search("x", source="robot")
    with pytest.raises(InvalidOperationError, match="limit"):
        await search.search("x", limit=0)


async def test_fallback_substring_when_index_is_gone(
    text_layer: MemoryLayer, client: Redis, keys: Keyspace
) -> None:
    await DailyLog(text_layer).log("Caroline joined the support group")
    await DailyLog(text_layer).log("unrelated")
    await client.execute_command("FT.DROPINDEX", keys.memory_index())
    hits = await MemorySearch(text_layer).search("support group")
    assert [h.content for h in hits] == ["Caroline joined the support group"]


async def test_indexes_are_idempotent_and_follow_the_embedder(
    client: Redis, keys: Keyspace
) -> None:
    await ensure_index(client, keys)
    fingerprint = await client.get(keys.memory_index_schema())
    await ensure_index(client, keys)
    assert await client.get(keys.memory_index_schema()) == fingerprint
    info = await client.execute_command("FT.INFO", keys.memory_index())
    assert b"VECTOR" not in json.dumps(str(info)).encode()  # vectors have their own index
    await ensure_vector_index(client, keys, 384, "float32")
    vector_fingerprint = await client.get(keys.vector_index_schema())
    await ensure_vector_index(client, keys, 384, "float32")
    assert await client.get(keys.vector_index_schema()) == vector_fingerprint
    await ensure_vector_index(client, keys, 384, "float16")  # a changed datatype rebuilds
    assert await client.get(keys.vector_index_schema()) != vector_fingerprint


async def test_a_command_tells_the_indexes_are_current_without_the_search_engine(
    client: Redis, keys: Keyspace
) -> None:
    assert not await indexes_current(client, keys, None, "float32")  # none yet
    await ensure_index(client, keys)
    assert await indexes_current(client, keys, None, "float32")  # full text only
    assert not await indexes_current(client, keys, 384, "float32")  # no vector index yet
    await ensure_vector_index(client, keys, 384, "float16")
    assert await indexes_current(client, keys, 384, "float16")
    assert not await indexes_current(client, keys, 384, "float32")  # another datatype
    assert not await indexes_current(client, keys, 768, "float16")  # another model's size
    await client.set(keys.memory_index_schema(), "an older schema")
    assert not await indexes_current(client, keys, 384, "float16")
    info = await client.execute_command("FT.INFO", keys.vector_index())
    assert b"FLOAT16" in json.dumps(str(info)).encode()


async def test_hybrid_search_with_local_embeddings(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = MemoryLayer.open(settings, client)
    assert layer.embedder is not None and layer.embedder.dims == 384
    search = MemorySearch(layer)
    await search.ensure_index()
    daily = DailyLog(layer)
    car = await daily.log("I bought a new automobile yesterday", timestamp=NOW - 100)
    await daily.log("The quarterly tax report is due", timestamp=NOW - 100)
    await daily.log("Planted tomatoes in the garden", timestamp=NOW - 100)
    hits = await search.search("my car", now=NOW)  # no shared word: the vectors find it
    assert hits[0].doc["id"] == car["id"] and hits[0].vector_rank == 1
    # each text is embedded once: the cache holds it and answers the next time
    calls = 0
    inner = layer.embedder.inner
    original = inner.embed_many

    async def counting(texts: list[str]) -> list[list[float]]:
        nonlocal calls
        calls += len(texts)
        return await original(texts)

    inner.embed_many = counting  # type: ignore[method-assign]
    await layer.embedder.embed_many(["I bought a new automobile yesterday", "my car"])
    assert calls == 0
    await layer.embedder.embed_many(["a sentence never seen"])
    assert calls == 1


async def test_embeddings_none_and_missing_openai_config(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    from aether.errors import ConfigError

    assert (
        make_embedder(settings.model_copy(update={"embedding": {"provider": "none"}}), client, keys)
        is None
    )
    with pytest.raises(ConfigError, match="AETHER_EMBEDDING__MODEL"):
        make_embedder(
            settings.model_copy(update={"embedding": {"provider": "openai"}}), client, keys
        )


async def test_import_export_round_trip_and_duplicates(
    text_layer: MemoryLayer, client: Redis, tmp_path: Path, redis_home: Path
) -> None:
    await _seed(text_layer)
    first = tmp_path / "first.jsonl"
    assert await export_file(text_layer, first) == 4
    other = MemoryLayer(Store(client, Keyspace(text_layer.keys.ns + "b")), MemorySettings())
    report = await import_file(other, first)
    assert (report.read, report.imported, report.duplicates) == (4, 4, 0)
    second = tmp_path / "second.jsonl"
    await export_file(other, second)
    assert first.read_text() == second.read_text()  # the round trip is exact
    again = await import_file(other, first)
    assert (again.imported, again.duplicates) == (0, 4)


async def test_import_bad_file_writes_nothing(
    text_layer: MemoryLayer, client: Redis, keys: Keyspace, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    good = json.dumps({"kind": "daily", "content": "fine", "timestamp": NOW})
    for lines, message in [
        ([good, "{not json"], "line 2"),
        ([good, json.dumps({"kind": "gossip", "content": "x"})], "line 2: unknown kind"),
        ([json.dumps({"kind": "daily", "content": ""})], "line 1: content is empty"),
        ([json.dumps([1, 2])], "line 1: not a JSON object"),
    ]:
        bad.write_text("\n".join(lines) + "\n")
        with pytest.raises(InvalidOperationError, match=message):
            await import_file(text_layer, bad)
    with pytest.raises(InvalidOperationError, match="cannot read"):
        await import_file(text_layer, tmp_path / "missing.jsonl")
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(InvalidOperationError, match="cannot read"):
        await import_file(text_layer, bad)
    assert await dump_state(client, keys) == {}


def test_cli_memory(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    logged = invoke_cli(env, "memory", "log", "Shipped release v3 to production", "--tag", "a, b")
    assert logged.returncode == 0, logged.stderr
    found = invoke_cli(env, "memory", "search", "release @shipped (v3)", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)[0]["tags"] == ["a, b"]
    assert invoke_cli(env, "memory", "search", "nothing like this").returncode == 2
    bad = invoke_cli(env, "memory", "search", "x", "--kind", "gossip")
    assert bad.returncode == 64 and "gossip" in bad.stderr  # a usage error: not a kind
    empty = invoke_cli(env, "memory", "log", "")
    assert empty.returncode == 1 and "empty" in empty.stderr
    out = tmp_path / "out.jsonl"
    assert invoke_cli(env, "memory", "export", str(out)).returncode == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["format"] == "aether-memory" and lines[0]["keys"] == len(lines) - 1
    entries = [x["value"]["content"] for x in lines[1:] if x["key"].startswith("daily:entry:")]
    assert entries == ["Shipped release v3 to production"]
    other = {**env, "AETHER_NAMESPACE": env["AETHER_NAMESPACE"] + "x"}
    imported = invoke_cli(other, "memory", "import", str(out), "--json")
    assert imported.returncode == 0 and json.loads(imported.stdout)["created"] == len(lines) - 1
    assert invoke_cli(env, "memory", "scratch", "set", "p1", "draft").returncode == 0
    assert invoke_cli(env, "memory", "scratch", "get", "p1").stdout.strip() == "draft"
    assert invoke_cli(env, "memory", "scratch", "get", "nope").returncode == 2
    refused = invoke_cli(env, "memory", "longterm", "flush")
    assert refused.returncode == 1 and "--yes" in refused.stderr


class _MustNotLoad:
    """The fallback embedder: calling it means the daemon did not answer."""

    model_name = "all-MiniLM-L6-v2"
    dims = 384
    calls = 0

    async def embed_many(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [[0.0] * self.dims for _ in texts]


async def test_daemon_embeds_for_short_lived_commands(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    import asyncio

    from aether.runtime.embedding_service import DaemonEmbedder, serve
    from aether.runtime.health import Health
    from aether.runtime.lease import DaemonLease, Holder, keep_alive

    fallback = _MustNotLoad()
    asker = DaemonEmbedder(client, keys, fallback, timeout_s=20)
    assert await asker.embed_many(["no daemon yet"]) == [[0.0] * 384]  # no daemon: local
    assert fallback.calls == 1
    daemon_layer = MemoryLayer.open(settings, client)
    assert daemon_layer.embedder is not None
    stop = asyncio.Event()
    lease = DaemonLease(client, keys, Holder.this_process())
    await lease.acquire()
    tasks = [
        asyncio.create_task(keep_alive(lease, Health(ready=True), stop)),
        asyncio.create_task(serve(client, keys, daemon_layer.embedder, stop)),
    ]
    try:
        for _ in range(50):
            if await client.exists(keys.daemon_health()):
                break
            await asyncio.sleep(0.05)
        vectors = await asker.embed_many(["the daemon answers this", "and this"])
    finally:
        stop.set()
        await asyncio.gather(*tasks)
        await lease.release()
    assert fallback.calls == 1 and asker.served_by_daemon == 1
    expected = await daemon_layer.embedder.embed_many(["the daemon answers this", "and this"])
    assert vectors == expected
    assert await client.exists(keys.daemon_presence()) == 0  # gone when the daemon stops
    assert await client.exists(keys.daemon_health()) == 0


async def test_openai_embeddings_through_the_real_client(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    from aether.testing.model import ScriptedOpenAI

    with ScriptedOpenAI(dims=64) as server:
        configured = settings.model_copy(
            update={
                "embedding": settings.embedding.model_copy(
                    update={
                        "provider": "openai",
                        "model": "text-embedding-test",
                        "base_url": server.base_url,
                        "dims": 64,
                    }
                ),
            }
        )
        layer = MemoryLayer.open(configured, client)
        assert layer.embedder is not None and layer.embedder.dims == 64
        search = MemorySearch(layer)
        await search.ensure_index()
        daily = DailyLog(layer)
        kiwi = await daily.log("zebra kiwi mango", timestamp=NOW)
        await daily.log("quarterly tax forms", timestamp=NOW)
        hits = await search.search("kiwi", now=NOW)
        assert hits[0].doc["id"] == kiwi["id"] and hits[0].vector_rank == 1
        sent = [r for r in server.requests if r["path"].endswith("/embeddings")]
        assert sent and sent[0]["body"]["model"] == "text-embedding-test"
        before = len(server.requests)
        await layer.embedder.embed("kiwi")  # cached: no new request
        assert len(server.requests) == before


async def test_raw_search_replies_read_the_same_over_resp2_and_resp3(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    from redis.asyncio import ConnectionPool
    from redisvl.query import TextQuery

    from aether.memory.storage.fulltext import search_command, search_results
    from aether.memory.storage.vectors import knn_query, nearest_rows

    layer = MemoryLayer.open(settings, client)
    search = MemorySearch(layer)
    await search.ensure_index()
    log = DailyLog(layer)
    for text in ("the blue heron flew over the lake", "a heron stood in the reeds", "taxes due"):
        await log.log(text)
    pool = client.connection_pool
    resp2 = Redis(
        connection_pool=ConnectionPool(
            connection_class=pool.connection_class, **{**pool.connection_kwargs, "protocol": 2}
        )
    )
    text = TextQuery("heron", "content", text_scorer="BM25STD", num_results=5, stopwords=None)
    text.no_content()
    assert layer.embedder is not None
    vector_index = layer.vector_index()
    assert vector_index is not None
    vector = await layer.embedder.embed("a bird by the water")
    knn = knn_query(vector, None, 3, layer.settings.vector_datatype)
    try:
        read: list[tuple[list[tuple[str, float, object]], list[tuple[str, float]]]] = []
        for c in (client, resp2):
            found = search_results(
                await c.execute_command(*search_command(search.index, text)),  # type: ignore[no-untyped-call]
                scores=True,
                fields=False,
            )
            near = nearest_rows(
                keys,
                await c.execute_command(*search_command(vector_index, knn)),  # type: ignore[no-untyped-call]
            )
            read.append((found, near))
    finally:
        await resp2.aclose()
    (found3, near3), (found2, near2) = read
    assert [k for k, _, _ in found3] == [k for k, _, _ in found2] and len(found3) == 2
    assert [round(s, 6) for _, s, _ in found3] == [round(s, 6) for _, s, _ in found2]
    assert near3 == near2 and len(near3) == 3
    assert near3[0][1] > near3[-1][1] and "heron" in str((await layer.get_docs([near3[0][0]]))[0])


async def _herons_and_chores(layer: MemoryLayer) -> DailyLog:
    """30 daily entries, 6 of them tagged ``birds`` and the rest ``chores``."""
    log = DailyLog(layer)
    for i in range(30):
        tags = ["birds"] if i % 5 == 0 else ["chores"]
        await log.log(f"note {i}: a heron by the lake, then the dishes", tags=tags)
    return log


@pytest.mark.parametrize("policy", ["batches", "adhoc_bf"])
async def test_a_filtered_vector_search_applies_the_policy_it_is_given(
    settings: Settings, client: Redis, policy: str
) -> None:
    """``memory.knn_filtered_policy`` reaches RediSearch (HYBRID_POLICY) and a filtered
    search still finds only what passes its filter; without a filter it is not sent."""
    from aether.memory.retrieval.search_filter import SearchFilter
    from aether.memory.storage.vectors import knn_query

    memory = settings.memory.model_copy(
        update={"knn_filtered_policy": policy, "knn_ef_runtime": 64}
    )
    layer = MemoryLayer.open(settings.model_copy(update={"memory": memory}), client)
    search = MemorySearch(layer)
    await search.ensure_index()
    await _herons_and_chores(layer)
    found = await search.search("heron lake", tags=["birds"], limit=10)
    assert len(found) == 6 and all(h.doc.get("tags") == ["birds"] for h in found)
    assert len(await search.search("heron lake", limit=10)) == 10

    flt = SearchFilter(None, None, ["birds"], None, None).expression()
    vector = [0.1] * 384
    filtered = str(knn_query(vector, flt, 5, "float16", "batches", 64))
    assert "HYBRID_POLICY BATCHES" in filtered and "EF_RUNTIME" in filtered
    assert "HYBRID_POLICY" not in str(knn_query(vector, None, 5, "float16", "batches"))
    assert "HYBRID_POLICY" not in str(knn_query(vector, flt, 5, "float16", "auto"))


async def test_the_adaptive_policy_brute_forces_small_filters_and_walks_large_ones(
    settings: Settings, client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``adaptive`` (the default) asks the vector index whether a filter passes more than
    ``brute_force_max`` readings for the index's size and chooses brute force up to that,
    batches above; both answers are kept for their time to live (a time limit asked about
    by its hour), and the results are what the filter passes either way."""
    from aether.memory.retrieval import filter_size
    from aether.memory.retrieval.search_filter import SearchFilter
    from aether.memory.retrieval.vector_source import Knn, RedisVectors

    assert settings.memory.knn_filtered_policy == "adaptive"
    layer = MemoryLayer.open(settings, client)
    search = MemorySearch(layer)
    await search.ensure_index()
    log = await _herons_and_chores(layer)
    sent: list[str] = []
    command = RedisVectors.command

    def spy(self: RedisVectors, vector: list[float], plan: Knn, pool: int) -> object:
        sent.append(plan.policy)
        return command(self, vector, plan, pool)

    monkeypatch.setattr(RedisVectors, "command", spy)
    clock = [1_000.0]
    vectors = search.candidates.vectors
    assert isinstance(vectors, RedisVectors)
    sizes = vectors.sizes = filter_size.FilterSizes(clock=lambda: clock[0])
    index, text = layer.vector_index(), layer.text_index()
    assert index is not None

    found = await search.search("heron lake", tags=["birds"], limit=10)
    assert len(found) == 6 and all(h.doc.get("tags") == ["birds"] for h in found)
    assert sent[-1] == "adhoc_bf"  # 6 readings pass, at most 1,000 are brute-forced
    assert await search.search("heron lake", limit=10) and sent[-1] == "auto"  # no filter
    assert await sizes.memories(text) == 30

    # brute force over at most isqrt(BREAK_EVEN x memories) readings
    monkeypatch.setattr(filter_size, "BRUTE_FORCE_MIN", 0)
    monkeypatch.setattr(filter_size, "BREAK_EVEN", 2)
    birds = SearchFilter(tags=["birds"])
    assert await sizes.policy(client, index, text, birds) == "adhoc_bf"  # 6 <= isqrt(60)
    for i in range(4):
        await log.log(f"later {i}: another heron on the lake", tags=["birds"])
    assert await sizes.policy(client, index, text, birds) == "adhoc_bf"  # both answers kept
    clock[0] += filter_size.SIZE_TTL_S + 1
    assert await sizes.policy(client, index, text, birds) == "batches"  # 10 > isqrt(68)
    assert await sizes.memories(text) == 34
    found = await search.search("heron lake", tags=["birds"], limit=20)
    assert sent[-1] == "batches"
    assert len(found) == 10 and all(h.doc.get("tags") == ["birds"] for h in found)

    # a time limit that moves with the clock meets its hour's answer again
    asked = len(sizes._large)
    hour = 3_600 * 490_000
    for since in (hour + 10.0, hour + 1_800.0, hour + 3_599.0):
        await sizes.policy(client, index, text, SearchFilter(since=since))
    assert len(sizes._large) == asked + 1
    await sizes.policy(client, index, text, SearchFilter(since=hour + 3_600.0))
    assert len(sizes._large) == asked + 2

    monkeypatch.setattr(filter_size, "SIZES_KEPT", 2)  # the least recently used go
    await sizes.policy(client, index, text, SearchFilter(kind="daily"))
    assert len(sizes._large) == 2
    assert await sizes.policy(client, index, text, SearchFilter()) == "auto"  # nothing to ask

    # a tag full of query syntax is asked about as the tag it is
    await log.log("a heron in braces", tags=["odd {tag} | * @x"])
    odd = SearchFilter(tags=["odd {tag} | * @x"])
    odd_filter = odd.expression()
    assert odd_filter is not None
    assert await sizes.large(client, index, odd_filter, 0)  # passes 1 > 0
    assert not await sizes.large(client, index, odd_filter, 1)  # passes 1, not more
    found = await search.search("heron", tags=["odd {tag} | * @x"], limit=5)
    assert [h.doc.get("tags") for h in found] == [["odd {tag} | * @x"]]

    kept = dict(sizes._large)
    elsewhere = MemoryLayer.open(settings.model_copy(update={"namespace": "noindex"}), client)
    missing = elsewhere.vector_index()  # never created: the questions are refused
    assert missing is not None
    assert await sizes.policy(client, missing, elsewhere.text_index(), birds) == "auto"
    assert await sizes.policy(client, missing, text, birds) == "auto"
    assert sizes._large == kept  # a refusal is not kept
    with pytest.raises(InvalidOperationError):  # a bad criterion: refused before the probe
        await search.search("heron", tags=["x" * 65], limit=5)
    assert sizes._large == kept


async def test_the_memory_counters_answer_for_a_large_tag_or_kind_without_the_probe(
    settings: Settings, client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter of tags alone (or one kind alone) whose counter is past brute force's
    reach is answered from ``memory:topics`` / ``memory:counts``, not by walking the
    index's matches; a count below it, or a filter with another criterion, is probed; a
    rollback of the memories takes the counters, and so the answer, back."""
    from aether.checkpoints.manager import Checkpoints
    from aether.memory.retrieval import filter_size
    from aether.memory.retrieval.search_filter import SearchFilter
    from aether.memory.retrieval.vector_source import RedisVectors

    layer = MemoryLayer.open(settings, client)
    search = MemorySearch(layer)
    await search.ensure_index()
    log = await _herons_and_chores(layer)
    vectors = search.candidates.vectors
    assert isinstance(vectors, RedisVectors)
    probes: list[str] = []
    probe = filter_size.search_command

    def counted_probe(*args: object, **kwargs: object) -> object:
        probes.append(str(args[1]))
        return probe(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(filter_size, "search_command", counted_probe)
    monkeypatch.setattr(filter_size, "BRUTE_FORCE_MIN", 0)
    monkeypatch.setattr(filter_size, "BREAK_EVEN", 2)  # brute force up to isqrt(2 x 30) = 7
    index, text = layer.vector_index(), layer.text_index()
    assert index is not None

    def fresh() -> filter_size.FilterSizes:
        return filter_size.FilterSizes(keys=layer.keys)

    # 24 chores > 7: the counter answers, nothing is probed
    assert await fresh().policy(client, index, text, SearchFilter(tags=["chores"])) == "batches"
    assert await fresh().policy(client, index, text, SearchFilter(kind="daily")) == "batches"
    either = SearchFilter(tags=["birds", "chores"])  # any of them: at least the larger
    assert await fresh().policy(client, index, text, either) == "batches"
    assert probes == []
    # 6 birds <= 7: the probe asks (and finds 6, brute force)
    assert await fresh().policy(client, index, text, SearchFilter(tags=["birds"])) == "adhoc_bf"
    assert len(probes) == 1
    # another criterion passes fewer than the tag: probed, and the probe's answer stands
    since = SearchFilter(tags=["chores"], since=time.time() + 3_600)
    assert await fresh().policy(client, index, text, since) == "adhoc_bf"
    both = SearchFilter(tags=["chores"], kind="daily")
    assert await fresh().policy(client, index, text, both) == "batches"
    assert len(probes) == 3
    # an unknown tag has no count: probed, passes nothing
    assert await fresh().policy(client, index, text, SearchFilter(tags=["none"])) == "adhoc_bf"
    assert len(probes) == 4

    # the counters move with the journaled change, rollback included
    checkpoints = Checkpoints(client, layer.keys)
    checkpoint = await checkpoints.create(label="before more birds")
    for i in range(4):
        await log.log(f"later {i}: another heron on the lake", tags=["birds"])
    birds = SearchFilter(tags=["birds"])
    assert await fresh().policy(client, index, text, birds) == "batches"  # 10 > isqrt(68)
    assert len(probes) == 4
    await checkpoints.rollback_to(checkpoint.id)
    assert await fresh().policy(client, index, text, birds) == "adhoc_bf"
    assert len(probes) == 5
    found = await search.search("heron lake", tags=["birds"], limit=10)
    assert len(found) == 6 and all(h.doc.get("tags") == ["birds"] for h in found)
    assert len(probes) == 6  # the search's own sizes probe a small tag
    found = await search.search("dishes", tags=["chores"], limit=30)
    assert len(found) == 24 and len(probes) == 6  # and take a large one's count


def test_brute_force_reaches_further_as_the_index_grows() -> None:
    """Where brute force and the graph's walk break even (decision 0011's figures)."""
    from aether.memory.retrieval.filter_size import brute_force_max

    assert brute_force_max(0) == brute_force_max(1_000) == 1_000
    assert brute_force_max(100_000) == 7_071
    assert brute_force_max(1_000_000) == 22_360
    assert brute_force_max(10_000_000) == 70_710

"""Compact vectors: binary hashes beside the documents, journaled, migrated once."""

from __future__ import annotations

import time

from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.keys import Keyspace
from aether.memory.knowledge.beliefs import Beliefs
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage import vectors
from aether.memory.storage.layer import MemoryLayer, read_mget
from aether.memory.storage.vector_layout import migrate_vectors
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.store.state import Mutation

NOW = time.time()


async def _layer(settings: Settings, client: Redis, datatype: str = "float32") -> MemoryLayer:
    settings = settings.model_copy(
        update={"memory": settings.memory.model_copy(update={"vector_datatype": datatype})}
    )
    layer = MemoryLayer.open(settings, client)
    await migrate_vectors(layer)  # what Aether.ready does at a daemon's start
    await MemorySearch(layer).ensure_index()
    return layer


async def test_a_vector_is_a_binary_hash_and_the_journal_holds_bytes(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = await _layer(settings, client)
    doc = await DailyLog(layer).log("I bought a new automobile yesterday", tags=["car, new"])
    key = keys.daily_entry(doc["id"])
    stored = await layer.get_docs([key])
    assert stored[0] is not None and "embedding" not in stored[0]
    blob = await client.hget(keys.vector(key), "embedding")
    assert blob is not None and len(blob) == 384 * 4
    assert await client.hget(keys.vector(key), "tags") == b"car, new"
    assert await client.hget(keys.vector(key), "kind") == b"daily"
    entry = (await client.xrevrange(keys.journal(), count=1))[0][1]
    packed = b"".join(v for v in entry.values())
    # no archive follows: the journal keeps the keys touched and the inverses, no vector
    assert blob not in packed and b"f" not in entry
    assert b'"embedding"' not in packed  # and the JSON document holds no array
    await client.set(keys.archive_cursor(), "0-0")  # an archive follows from now on
    doc = await DailyLog(layer).log("I sold my old bicycle", tags=["bike"])
    blob = await client.hget(keys.vector(keys.daily_entry(doc["id"])), "embedding")
    entry = (await client.xrevrange(keys.journal(), count=1))[0][1]
    packed = b"".join(v for v in entry.values())
    assert blob is not None and blob in packed  # kept for replay, as bytes, not as text
    assert b'"embedding"' not in packed


async def test_vectors_follow_rollback_and_undo(
    settings: Settings, client: Redis, keys: Keyspace, checkpoints: Checkpoints
) -> None:
    layer = await _layer(settings, client)
    search = MemorySearch(layer)
    await DailyLog(layer).log("The quarterly tax report is due", timestamp=NOW - 100)
    cp = await checkpoints.create(label="before the car")
    car = await DailyLog(layer).log("I bought a new automobile yesterday", timestamp=NOW - 50)
    vector_key = keys.vector(keys.daily_entry(car["id"]))

    async def car_found() -> bool:
        hits = await search.search("my car", now=NOW)  # no shared word: only vectors find it
        return any(h.doc["id"] == car["id"] and h.vector_rank == 1 for h in hits)

    assert await car_found()
    await checkpoints.rollback_to(cp.id)
    assert not await client.exists(vector_key)
    assert not await car_found()
    await checkpoints.undo()
    assert await client.exists(vector_key)
    assert await car_found()


async def test_filters_apply_to_the_vector_half(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = await _layer(settings, client)
    search = MemorySearch(layer)
    daily = DailyLog(layer)
    await daily.log("I bought a new automobile yesterday", tags=["home"], timestamp=NOW - 9)
    work = await daily.log("The company car needs new tyres", tags=["work"], timestamp=NOW - 9)
    hits = await search.search("vehicle", tags=["work"], now=NOW)
    assert [h.doc["id"] for h in hits] == [work["id"]]
    assert await search.search("vehicle", since=NOW - 1, now=NOW) == []


async def test_a_forgotten_belief_leaves_the_vector_neighbours(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = await _layer(settings, client)
    beliefs = Beliefs(layer, settings.beliefs)
    report = await beliefs.remember("The NAS has 12 TB of disks")
    belief_id = report.outcomes[0].belief["id"]
    vector = await layer.embed("The NAS has 12 TB of disks")
    assert [d["id"] for d, _ in await beliefs.similar("NAS disks", vector)] == [belief_id]
    await beliefs.forget(belief_id)
    assert await client.hget(keys.vector(keys.belief(belief_id)), "status") == b"forgotten"
    assert await beliefs.similar("NAS disks", vector) == []


async def _old_layout(layer: MemoryLayer, count: int) -> list[str]:
    """Documents as aether wrote them before compact vectors: the array inside the JSON."""
    assert layer.embedder is not None
    docs = [
        build_entry(layer, f"note {i} about the garden and tomatoes", timestamp=NOW - i)
        for i in range(count)
    ]
    found = await layer.embedder.embed_many([d["content"] for d in docs])
    m = DailyLog(layer).mutation([])
    for doc, vector in zip(docs, found, strict=True):
        m.json_set(layer.keys.daily_entry(doc["id"]), {**doc, "embedding": vector})
    await layer.store.apply(m, "old layout")
    return [layer.keys.daily_entry(d["id"]) for d in docs]


async def test_an_old_namespace_migrates_once_journaled(
    settings: Settings, client: Redis, keys: Keyspace, checkpoints: Checkpoints
) -> None:
    layer = MemoryLayer.open(settings, client)
    assert settings.memory.vector_datatype == "float16"  # the default
    old = await _old_layout(layer, 450)  # more than one batch
    told: list[tuple[int, int]] = []  # the storage layer tells; the caller shows it
    moved = await migrate_vectors(layer, checkpoints, progress=lambda *at: told.append(at))
    assert moved == 450 and told[-1] == (450, 450) and len(told) > 1
    assert await client.get(keys.memory_layout()) == b"readings-float16"
    assert await client.execute_command("JSON.TYPE", old[0], "$.embedding") == [[]]
    assert len(await client.hget(keys.vector(old[0]), "embedding") or b"") == 384 * 2
    assert await migrate_vectors(layer, checkpoints) == 0  # once
    search = MemorySearch(layer)
    await search.ensure_index()
    hits = await search.search("vegetable patch", limit=5, now=NOW)
    assert hits and all(h.vector_rank for h in hits)
    # the checkpoint taken before the move rolls it back to the old form
    before = [c for c in await checkpoints.list() if c.label.startswith("before moving vectors")]
    assert len(before) == 1
    await checkpoints.rollback_to(before[0].id)
    assert await client.execute_command("JSON.TYPE", old[0], "$.embedding") == [[b"array"]]
    assert not await client.exists(keys.vector(old[0]), keys.memory_layout())
    assert await migrate_vectors(layer) == 450  # and the next start migrates again


async def test_a_changed_datatype_reencodes_the_vectors(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = await _layer(settings, client)
    doc = await DailyLog(layer).log("I bought a new automobile yesterday", timestamp=NOW - 5)
    half = await _layer(settings, client, "float16")  # a start migrates
    assert await client.get(keys.memory_layout()) == b"readings-float16"
    blob = await client.hget(keys.vector(keys.daily_entry(doc["id"])), "embedding")
    assert blob is not None and len(blob) == 384 * 2
    hits = await MemorySearch(half).search("my car", now=NOW)
    assert hits[0].doc["id"] == doc["id"] and hits[0].vector_rank == 1


async def test_removal_deletes_the_vector_and_an_empty_namespace_keeps_no_marker(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = await _layer(settings, client)
    assert not await client.exists(keys.memory_layout())
    doc = await DailyLog(layer).log("short lived", timestamp=NOW)
    key = keys.daily_entry(doc["id"])
    await layer.store.apply(layer.remove(Mutation(), key), "remove")
    assert not await client.exists(key, keys.vector(key))
    assert vectors.decode(vectors.encode([0.5, -0.25], "float16"), "float16") == [0.5, -0.25]


async def test_long_memories_of_an_older_namespace_gain_their_passages_once(
    settings: Settings, client: Redis, keys: Keyspace, checkpoints: Checkpoints
) -> None:
    layer = await _layer(settings, client)
    text = "assistant: " + "We reviewed the logging setup and the retry policy. " * 30
    text += "At the very end: the staging database moved to port 6543 on the new host."
    doc = build_entry(layer, text, timestamp=NOW)
    await layer.attach_embeddings([doc])
    doc.pop("passage_embeddings")  # written the way aether did before passages
    m = DailyLog(layer).mutation([doc]).set(keys.memory_layout(), "vectors-float32")
    await layer.store.apply(m, "old layout")
    key = keys.daily_entry(doc["id"])
    assert not await client.exists(keys.passage_vector(key, 2))

    assert await migrate_vectors(layer, checkpoints) == 1
    assert await client.get(keys.memory_layout()) == b"readings-float32"
    assert await client.exists(keys.passage_vector(key, 2))
    assert await migrate_vectors(layer, checkpoints) == 0  # once
    hits = await MemorySearch(layer).search("which port does the staging database use", now=NOW)
    assert hits and hits[0].key == key
    # the checkpoint taken first brings the older form back, and the next start redoes it
    before = [c for c in await checkpoints.list() if c.label.startswith("before moving vectors")]
    await checkpoints.rollback_to(before[0].id)
    assert not await client.exists(keys.passage_vector(key, 2))
    assert await client.get(keys.memory_layout()) == b"vectors-float32"
    assert await migrate_vectors(layer) == 1


async def test_documents_are_read_in_order_with_the_missing_ones_as_none(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = await _layer(settings, client)
    daily = DailyLog(layer)
    first = await daily.log('He said "hi", then \\ and ünïcode ☃')
    second = await daily.log("a second entry")
    wanted = [keys.daily_entry("gone"), keys.daily_entry(first["id"])]
    wanted += [keys.daily_entry("also-gone"), keys.daily_entry(second["id"])]
    found = await layer.get_docs(wanted)
    assert found[0] is None and found[2] is None
    assert found[1] is not None and found[1]["content"] == first["content"]
    assert found[3] is not None and found[3]["id"] == second["id"]
    assert await layer.get_docs([keys.daily_entry("gone")]) == [None]
    assert read_mget([None, '[{"a": 1}]', b"[]"]) == [None, {"a": 1}, None]

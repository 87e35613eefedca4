"""A large tag's own vector index (issue 65: filtered search at a million memories).

Maintenance gives the tags more memories carry than a filtered search brute-forces an
HNSW index of their own readings; a search filtered by one such tag walks it, under the
rest of its filter, and finds what the namespace's index finds. The index follows the
hashes (writes, a rollback), is dropped when its tag shrinks, when a search finds it gone
it searches the namespace's index, and an erasure of a text its tag holds drops it before
Redis's files are rewritten (its definition names the tag).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.codec import command
from aether.config import Settings
from aether.maintenance.engine import MaintenanceEngine
from aether.memory.retrieval import filter_size
from aether.memory.retrieval.search import MemorySearch
from aether.memory.retrieval.vector_source import Knn, RedisVectors
from aether.memory.storage.fulltext import search_results, wait_indexed
from aether.memory.storage.index_schemas import TAG_SEPARATOR, folded_tag
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import check_tags
from aether.memory.storage.scoped_indexes import ScopedIndexes, scopable, tag_forms
from aether.memory.storage.vectors import encode
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.operations import Caller, Parts
from aether.operations.erasure import EraseArgs, VerifyArgs, erase, erase_verify
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from tests.conftest import run_cli

BIRDS = ["heron", "kingfisher", "egret", "grebe", "osprey", "cormorant"]


@pytest.fixture
def small_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """Brute force reaches isqrt(2 x memories): about 8 of the 36 memories below."""
    monkeypatch.setattr(filter_size, "BRUTE_FORCE_MIN", 0)
    monkeypatch.setattr(filter_size, "BREAK_EVEN", 2)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Knn]]:
    """The plan of every KNN a search sends."""
    plans: list[Knn] = []
    command_of = RedisVectors.command

    def spy(self: RedisVectors, vector: list[float], plan: Knn, pool: int) -> object:
        plans.append(plan)
        return command_of(self, vector, plan, pool)

    monkeypatch.setattr(RedisVectors, "command", spy)
    yield plans


async def _fill(layer: MemoryLayer) -> DailyLog:
    """36 entries: 24 ``chores`` (some spelt ``Chores``), 6 ``birds``, 3 ``chore`` and 3
    ``chores-later`` (tags a substring test would confuse with ``chores``)."""
    log = DailyLog(layer)
    for i in range(24):
        tag = "Chores" if i % 6 == 0 else "chores"
        bird = BIRDS[i % len(BIRDS)]
        await log.log(f"chore {i}: the {bird} feeder cleaned, then the dishes", tags=[tag])
    for i, bird in enumerate(BIRDS):
        await log.log(f"sighting {i}: a {bird} by the lake", tags=["birds"])
    for i in range(3):
        await log.log(f"a chore {i} for the weekend: the heron pond", tags=["chore"])
        await log.log(f"a later chore {i}: the heron pond", tags=["chores-later"])
    return log


async def _ready(scoped: ScopedIndexes, layer: MemoryLayer, tag: str) -> None:
    vectors = layer.vector_index()
    assert vectors is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        scoped.forget()
        if await scoped.ready(vectors, tag) is not None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the index of {tag!r} never finished scanning")


async def _drop_all(client: Redis, layer: MemoryLayer) -> None:
    scoped = ScopedIndexes(client, layer.keys)
    for name in await scoped.names():
        await scoped.drop(name)


async def _filled(
    settings: Settings, client: Redis
) -> tuple[MemoryLayer, ScopedIndexes, MaintenanceEngine]:
    """A namespace :func:`_fill` wrote, its scoped indexes, and its maintenance."""
    layer = MemoryLayer.open(settings, client)
    await MemorySearch(layer).ensure_index()
    await _fill(layer)
    return layer, ScopedIndexes(client, layer.keys), _maintenance(layer, client)


def _plain(settings: Settings, client: Redis) -> MemorySearch:
    """A search that never uses a tag's own index."""
    memory = settings.memory.model_copy(update={"scoped_indexes": 0})
    return MemorySearch(MemoryLayer.open(settings.model_copy(update={"memory": memory}), client))


def _maintenance(layer: MemoryLayer, client: Redis) -> MaintenanceEngine:
    return MaintenanceEngine(layer, Checkpoints(client, layer.keys))


async def test_a_large_tag_gets_its_own_index_which_a_search_by_it_walks(
    settings: Settings, client: Redis, small_reach: None, sent: list[Knn]
) -> None:
    layer = MemoryLayer.open(settings, client)
    search = MemorySearch(layer)
    await search.ensure_index()
    await _fill(layer)
    scoped = ScopedIndexes(client, layer.keys)
    engine = _maintenance(layer, client)
    try:
        planned = await engine.scoped_indexes(dry_run=True)
        assert planned.changed == 1 and await scoped.names() == []  # a dry run makes nothing
        made = await engine.scoped_indexes(dry_run=False)
        assert made.changed == 1 and len(await scoped.names()) == 1
        assert "chores" not in str(made.items)  # the report names the index, not the tag
        assert (await engine.scoped_indexes(dry_run=False)).changed == 0  # idempotent
        await _ready(scoped, layer, "chores")
        name = (await scoped.names())[0]
        # its readings: the 24 memories tagged chores in either case, not chore nor chores-later
        reply = await command(client, "FT.SEARCH", name, "*", "LIMIT", "0", "0")
        assert (reply[b"total_results"] if isinstance(reply, dict) else reply[0]) == 24

        plain = _plain(settings, client)
        for tags, since in ((["chores"], None), ([" CHORES "], None), (["chores"], 1.0)):
            sent.clear()
            found = await search.search("heron feeder", tags=tags, since=since, limit=10)
            assert [p.index.name for p in sent] == [name]  # the tag's own graph
            assert sent[0].flt is None if since is None else "timestamp" in str(sent[0].flt)
            expected = await plain.search("heron feeder", tags=tags, since=since, limit=10)
            assert [h.key for h in found] == [h.key for h in expected] and len(found) == 10
            assert all(h.doc["tags"][0].lower() == "chores" for h in found)
        for tags in (["birds"], ["birds", "chores"], ["chore"]):
            sent.clear()
            await search.search("heron", tags=tags, limit=5)
            assert [p.index.name for p in sent] == [layer.keys.vector_index()]

        # the index follows the hashes: a write, and a rollback of it
        checkpoints = Checkpoints(client, layer.keys)
        before = await checkpoints.create(label="before the pelican")
        await DailyLog(layer).log("chore 99: the pelican netting mended", tags=["chores"])
        found = await search.search("pelican netting", tags=["chores"], limit=3)
        assert "pelican" in found[0].doc["content"]
        await checkpoints.rollback_to(before.id)
        found = await search.search("pelican netting", tags=["chores"], limit=3)
        assert all("pelican" not in h.doc["content"] for h in found)
    finally:
        await _drop_all(client, layer)


async def test_maintenance_keeps_an_index_while_its_tag_has_half_the_reach_then_drops_it(
    settings: Settings, client: Redis, small_reach: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer, scoped, engine = await _filled(settings, client)
    try:
        assert (await engine.scoped_indexes(dry_run=False)).changed == 1
        [first] = await scoped.names()
        # a new spelling of the tag: the index is made again listing it (a name of its own)
        await DailyLog(layer).log("chore 25: the gull wire fixed", tags=["CHORES"])
        assert (await engine.scoped_indexes(dry_run=False)).changed == 2
        [second] = await scoped.names()
        assert second != first and sorted((await scoped.forms())[second]) == [
            "CHORES",
            "Chores",
            "chores",
        ]
        monkeypatch.setattr(filter_size, "BREAK_EVEN", 20)  # reach isqrt(740) = 27 > 25
        assert (await engine.scoped_indexes(dry_run=False)).changed == 0  # 25 >= 13: kept
        monkeypatch.setattr(filter_size, "BREAK_EVEN", 80)  # reach 54: 25 < 27, dropped
        shrunk = await engine.scoped_indexes(dry_run=False)
        assert shrunk.changed == 1 and await scoped.names() == []
        monkeypatch.setattr(filter_size, "BREAK_EVEN", 2)
        none = settings.memory.model_copy(update={"scoped_indexes": 0})
        assert (await engine.scoped_indexes(dry_run=False)).changed == 1
        layer.settings = none
        assert (await engine.scoped_indexes(dry_run=False)).changed == 1  # 0: every one goes
        assert await scoped.names() == []
    finally:
        await _drop_all(client, layer)


async def test_a_tag_some_memory_carries_with_spaces_around_it_gets_no_index(
    settings: Settings, client: Redis, small_reach: None
) -> None:
    """Tags are trimmed as they are written (a tag filter ignores the spaces); a memory
    written before that, with ``" chores"``, would be passed by the tag filter and missed
    by an index's expression, so its tag gets none, and an index it had is dropped."""
    assert check_tags([" chores ", "chores", "a b"]) == ["chores", "a b"]
    layer, scoped, engine = await _filled(settings, client)
    try:
        assert (await engine.scoped_indexes(dry_run=False)).changed == 1
        old = build_entry(layer, "chore from before: the heron hide swept")
        old["tags"] = [" chores"]  # as an older release wrote it
        old["embedding"] = await layer.embed("the heron hide swept")
        await layer.store.apply(DailyLog(layer).mutation([old]), "test.old")
        assert (await engine.scoped_indexes(dry_run=False)).changed == 1
        assert await scoped.names() == []
        found = await MemorySearch(layer).search("heron hide", tags=["chores"], limit=3)
        assert "hide swept" in found[0].doc["content"]  # the filter's, with the old memory
    finally:
        await _drop_all(client, layer)


async def test_a_tag_that_cannot_sit_in_the_expression_gets_no_index(
    settings: Settings, client: Redis, small_reach: None, sent: list[Knn]
) -> None:
    odd = ['he said "hi"', "back\\slash", "café"]
    assert not any(scopable(tag) for tag in odd) and scopable("chores {x} | @y")
    with pytest.raises(ValueError):
        tag_forms(odd[0])
    with pytest.raises(ValueError):
        tag_forms("chores", ["chore"])  # not a spelling of the tag
    assert tag_forms("Chores", ["CHORES", "chores"]) == ["CHORES", "chores"]
    layer = MemoryLayer.open(settings, client)
    search = MemorySearch(layer)
    await search.ensure_index()
    log = DailyLog(layer)
    for i in range(30):
        await log.log(f"note {i}: the heron again", tags=[odd[i % 3]])
    try:
        assert (await _maintenance(layer, client).scoped_indexes(dry_run=False)).changed == 0
        found = await search.search("heron", tags=[odd[0]], limit=20)
        assert len(found) == 10 and all(h.doc["tags"] == [odd[0]] for h in found)
        assert [p.index.name for p in sent] == [layer.keys.vector_index()]
    finally:
        await _drop_all(client, layer)


async def test_a_search_that_finds_its_tags_index_dropped_searches_the_namespaces(
    settings: Settings, client: Redis, small_reach: None, sent: list[Knn]
) -> None:
    """Another process (a daemon's maintenance, an erasure) drops the index while this
    search still trusts its answer: the search answers from the namespace's index."""
    layer = MemoryLayer.open(settings, client)
    search = MemorySearch(layer)
    await search.ensure_index()
    await _fill(layer)
    scoped = ScopedIndexes(client, layer.keys)
    try:
        await _maintenance(layer, client).scoped_indexes(dry_run=False)
        await _ready(scoped, layer, "chores")
        first = await search.search("heron feeder", tags=["chores"], limit=5)
        name = sent[-1].index.name
        assert name.startswith(layer.keys.scoped_index_prefix())
        assert await ScopedIndexes(client, layer.keys).drop(name)  # elsewhere
        sent.clear()
        again = await search.search("heron feeder", tags=["chores"], limit=5)
        assert [p.index.name for p in sent] == [name, layer.keys.vector_index()]
        assert [h.key for h in again] == [h.key for h in first]
        with pytest.raises(ValueError):
            await scoped.drop(layer.keys.vector_index())  # never the namespace's own
    finally:
        await _drop_all(client, layer)


async def test_an_erasure_drops_the_index_whose_tag_holds_the_subject(
    settings: Settings, client: Redis, small_reach: None
) -> None:
    parts = Parts(settings, client, actor="test")
    await parts.ready()
    layer = parts.memory
    log = DailyLog(layer)
    for i in range(20):
        await log.log(f"step {i} of the migration", tags=["project Zorvath"])
    for i in range(20):
        await log.log(f"step {i} of the cleanup", tags=["cleanup"])
    scoped = ScopedIndexes(client, layer.keys)
    try:
        made = await _maintenance(layer, client).scoped_indexes(dry_run=False)
        assert made.changed == 2
        caller = Caller(actor="operator")
        found = await erase_verify(parts, caller, VerifyArgs(text="zorvath"))
        assert [s["detail"] for s in found.found if s["place"].startswith(scoped.prefix())] == [
            "a scoped index's tag"
        ]
        report = await erase(parts, caller, EraseArgs(text="Zorvath"))
        assert report["files"] == "clean"
        left = await scoped.tags()
        assert list(left.values()) == ["cleanup"]  # the other tag's index stays
        assert (await erase_verify(parts, caller, VerifyArgs(text="zorvath"))).clean
    finally:
        await _drop_all(client, layer)


async def test_the_maintenance_command_makes_the_index_a_search_command_then_uses(
    settings: Settings, client: Redis, model_cli_env: dict[str, str]
) -> None:
    """Through the CLI as processes, at the real reach: 1,100 memories of 1,150 carry one
    tag, past the 1,000 readings a filtered search brute-forces."""
    layer = MemoryLayer.open(settings, client)
    await MemorySearch(layer).ensure_index()
    assert layer.embedder is not None
    rng = np.random.default_rng(7)
    daily = DailyLog(layer)
    for start in range(0, 1_150, 250):
        docs: list[dict[str, Any]] = []
        for i in range(start, min(start + 250, 1_150)):
            tag = "ops" if i < 1_100 else "home"
            doc = build_entry(layer, f"runbook step {i}: rotate the key", tags=[tag])
            vector = rng.normal(size=layer.embedder.dims)
            doc["embedding"] = [float(x) for x in vector / np.linalg.norm(vector)]
            docs.append(doc)
        await layer.store.apply(daily.mutation(docs), "test.fill")
    scoped = ScopedIndexes(client, layer.keys)
    try:
        ran = await asyncio.to_thread(run_cli, model_cli_env, "maintenance", "run", "--json")
        assert ran.returncode == 0, ran.stderr
        steps = {s["name"]: s for s in json.loads(ran.stdout)["steps"]}
        assert steps["scoped_indexes"]["changed"] == 1, steps["scoped_indexes"]
        assert "past 1000 memories" in steps["scoped_indexes"]["detail"]
        await _ready(scoped, layer, "ops")
        assert list((await scoped.tags()).values()) == ["ops"]
        listed = await asyncio.to_thread(run_cli, model_cli_env, "memory", "indexes", "--json")
        assert listed.returncode == 0, listed.stderr
        rows = {row["covers"]: row for row in json.loads(listed.stdout)}
        assert rows["vectors tagged 'ops'"]["documents"] == 1_100
        assert rows["vectors tagged 'ops'"]["scanned"] == 1.0
        assert rows["memories' vectors"]["documents"] >= 1_150  # and maintenance's own notes
        assert rows["memories' text"]["documents"] >= 1_150
        table = await asyncio.to_thread(run_cli, model_cli_env, "memory", "indexes")
        assert "vectors tagged 'ops'" in table.stdout and "1,100" in table.stdout
        args = ("memory", "search", "rotate the key", "--tag", "ops", "--limit", "5", "--json")
        found = await asyncio.to_thread(run_cli, model_cli_env, *args)
        assert found.returncode == 0, found.stderr
        hits = json.loads(found.stdout)
        assert len(hits) == 5 and all(h["tags"] == ["ops"] for h in hits), hits
    finally:
        await _drop_all(client, layer)


_TAG_TEXT = st.text(alphabet="aAbB -_|{}@.:\u00a0\u212a", min_size=1, max_size=6).filter(str.strip)


@given(
    tagged=st.lists(st.lists(_TAG_TEXT, min_size=0, max_size=3), min_size=1, max_size=12),
    wanted=_TAG_TEXT.filter(scopable),
)
@example(tagged=[["A"], ["a"]], wanted="a")
@example(tagged=[["a"], [], ["b"], []], wanted="a")
@example(tagged=[["Ops", "b"], ["OPS"], ["x", "oPs"], [" ops"]], wanted="ops")
@examples(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_scoped_index_holds_exactly_what_the_tag_filter_passes(
    redis_home: Path, tagged: list[list[str]], wanted: str
) -> None:
    """Over hashes with random tags (case, spaces, query syntax, a Kelvin sign, a
    non-breaking space), the index of ``wanted`` holds the same hashes as the namespace's
    index answers for the filter of that tag: half the hashes written as they are now
    (tags trimmed, ASCII letters folded), half as an older release wrote them (as given),
    whose spellings the index lists as maintenance would (they are in ``memory:topics``);
    some hashes there before the index (it scans them), the others written after (it is
    told of them as they are written: RediSearch judges the two ways apart)."""
    asyncio.run(_same_as_the_filter(redis_home, tagged, wanted))


async def _same_as_the_filter(home: Path, tagged: list[list[str]], wanted: str) -> None:
    from aether.memory.retrieval.search_filter import SearchFilter

    settings = Settings(home=home, namespace=f"t{uuid.uuid4().hex[:12]}")
    client = await connect(settings)
    layer = MemoryLayer.open(settings, client)
    try:
        await MemorySearch(layer).ensure_index()
        vectors = layer.vector_index()
        assert vectors is not None and layer.embedder is not None
        seen: set[str] = set()
        hashes: list[tuple[str, dict[str, Any]]] = []
        for i, tags in enumerate(tagged):
            vector = encode([1.0] * layer.embedder.dims, layer.settings.vector_datatype)
            fields: dict[str, Any] = {"embedding": vector}
            written = [folded_tag(t) for t in check_tags(tags)] if i % 2 else check_tags(tags)
            if written:
                fields["tags"] = TAG_SEPARATOR.join(written)
            if not i % 2:  # an older release's: its spellings are counted as written
                seen |= {t for t in written if folded_tag(t) == folded_tag(wanted)}
            hashes.append((layer.keys.vector(layer.keys.daily_entry(f"e{i}")), fields))
        before, after = hashes[::2], hashes[1::2]  # the index scans some, is told of others
        for key, fields in before:
            await client.hset(key, mapping=fields)
        scoped = ScopedIndexes(client, layer.keys)
        name = await scoped.create(vectors, wanted, seen)
        await _ready(scoped, layer, wanted)
        for key, fields in after:
            await client.hset(key, mapping=fields)
        flt = SearchFilter(tags=[wanted]).expression()
        by_filter = await command(
            client, "FT.SEARCH", vectors.name, str(flt), "NOCONTENT", "LIMIT", "0", "100"
        )
        everything = await command(
            client, "FT.SEARCH", vectors.name, "*", "NOCONTENT", "LIMIT", "0", "100"
        )
        held = await command(client, "FT.SEARCH", name, "*", "NOCONTENT", "LIMIT", "0", "100")
        assert _ids(held) == _ids(by_filter), (tagged, wanted)
        assert len(_ids(everything)) == len(tagged)  # every hash was indexed
    finally:
        await _drop_all(client, layer)
        await client.aclose()


def _ids(reply: Any) -> set[str]:
    return {key for key, _, _ in search_results(reply, scores=False, fields=False)}


async def test_a_tags_index_is_back_after_redis_is_killed_and_restarted(
    tmp_path: Path, small_reach: None, sent: list[Knn]
) -> None:
    """The index's definition is in Redis's files (the AOF, and the base a rewrite
    leaves): a server killed and started again scans the hashes into it, and a search
    by the tag walks it again and finds what it found before."""
    home = tmp_path / "home"
    server = EmbeddedRedis(Settings(home=home, redis_appendfsync="always"))
    server.start()
    settings = Settings(home=home, namespace="faults")
    client = await connect(settings)
    try:
        layer = MemoryLayer.open(settings, client)
        search = MemorySearch(layer)
        await search.ensure_index()
        await _fill(layer)
        await _maintenance(layer, client).scoped_indexes(dry_run=False)
        scoped = ScopedIndexes(client, layer.keys)
        await _ready(scoped, layer, "chores")
        [name] = await scoped.names()
        before = [h.key for h in await search.search("heron feeder", tags=["chores"], limit=8)]
        for rewrite in (False, True):
            if rewrite:
                await client.bgrewriteaof()
                await asyncio.sleep(1)
            pid = server.status().pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            await client.aclose()
            server.start()
            client = await connect(settings)
            layer = MemoryLayer.open(settings, client)
            search = MemorySearch(layer)
            scoped = ScopedIndexes(client, layer.keys)
            vectors = layer.vector_index()
            assert vectors is not None
            for index in (layer.text_index(), vectors):  # the others scan again too
                await wait_indexed(index)
            await _ready(scoped, layer, "chores")
            assert await scoped.names() == [name]
            sent.clear()
            found = await search.search("heron feeder", tags=["chores"], limit=8)
            assert [p.index.name for p in sent] == [name]
            # what the namespace's index finds now (a rebuilt index may order exact ties
            # of these near-identical memories differently from before the restart)
            expected = await _plain(settings, client).search(
                "heron feeder", tags=["chores"], limit=8
            )
            assert [h.key for h in found] == [h.key for h in expected]
            assert len(set(before) & {h.key for h in found}) >= 6
    finally:
        await client.aclose()
        server.stop()

"""One coherent memory: one remember, derived memory follows the truth, search can say nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.keys import Keyspace
from aether.maintenance.engine import MaintenanceEngine
from aether.memory.knowledge.beliefs import Beliefs
from aether.memory.knowledge.graph import Graph, entity_id
from aether.memory.knowledge.learner import ConversationLearner
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.longterm import LongTermMemory
from aether.runtime.llm import LLMClient
from aether.testing.model import ScriptedOpenAI, completion
from tests.conftest import dump_state, invoke_cli

NONSENSE = ("quantum chromodynamics zebra", "zzzz qqqq", "xkcd vbnm qwpo")


@pytest.fixture
async def text_only(settings: Settings, client: Redis) -> tuple[Settings, MemoryLayer]:
    """Settings without embeddings, and a memory layer on them with its index."""
    s = settings.model_copy(update={"embedding": {"provider": "none"}})
    layer = MemoryLayer.open(s, client)
    await MemorySearch(layer).ensure_index()
    return s, layer


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return invoke_cli(env, *args)


def test_a_superseded_fact_never_comes_back_through_maintenance(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    """The 12 TB -> 16 TB case, as a user meets it: remember, maintain, preview."""
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    first = json.loads(_cli(env, "remember", "The NAS has 12 TB of disks", "--json").stdout)
    note = json.loads(
        _cli(
            env,
            "memory",
            "longterm",
            "add",
            "Inventory: the NAS has 12 TB of disks in RAID 6",
            "--json",
        ).stdout
    )
    for line in ("copied the holiday photos", "renewed the domain", "fixed the printer queue"):
        assert _cli(env, "memory", "log", line).returncode == 0
    second = json.loads(_cli(env, "remember", "The NAS has 16 TB of disks", "--json").stdout)
    assert second["beliefs"][0]["action"] == "superseded"
    assert second["beliefs"][0]["previous"] == first["beliefs"][0]["id"]
    maintained = _cli(env, "maintenance", "run", "--json")
    assert maintained.returncode == 0, maintained.stderr
    preview = json.loads(_cli(env, "context", "preview", "How big is the NAS?", "--json").stdout)
    assert "16 TB" in preview["text"]
    assert "12 TB" not in preview["text"]  # not the belief, the note, the entry or a reflection
    found = json.loads(_cli(env, "memory", "search", "NAS disks TB", "--json").stdout)
    assert all("12 TB" not in hit["content"] for hit in found)
    everything = json.loads(
        _cli(env, "memory", "search", "NAS disks TB", "--include-inactive", "--json").stdout
    )
    ids = {hit["id"] for hit in everything}
    assert first["beliefs"][0]["id"] in ids and note["id"] in ids
    for query in NONSENSE:
        nothing = _cli(env, "memory", "search", query)
        assert nothing.returncode == 2 and not nothing.stdout.strip(), query
    # an id-less file imported twice: the second import adds nothing, and says so
    lines = [{"kind": "longterm", "content": f"imported fact {i}"} for i in range(3)]
    path = tmp_path / "facts.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    once = json.loads(_cli(env, "memory", "import", str(path), "--json").stdout)
    again = json.loads(_cli(env, "memory", "import", str(path), "--json").stdout)
    assert (once["imported"], again["imported"], again["duplicates"]) == (3, 0, 3)
    assert "imported 0 of 3 (3 duplicates" in _cli(env, "memory", "import", str(path)).stdout


async def test_search_floor_and_inactive_beliefs_with_local_embeddings(
    settings: Settings, client: Redis
) -> None:
    layer = MemoryLayer.open(settings, client)
    search = MemorySearch(layer)
    await search.ensure_index()
    daily = DailyLog(layer)
    car = await daily.log("I bought a new automobile yesterday")
    await daily.log("The quarterly tax report is due on Friday")
    await daily.log("Planted tomatoes and basil in the garden")
    beliefs = Beliefs(layer, settings.beliefs)
    old = await beliefs.remember("Caroline lives in Lisbon")
    new = await beliefs.remember("Caroline lives in Porto")
    assert new.outcomes[0].action == "superseded"
    hits = await search.search("my car", limit=5)  # no shared word: similar enough
    assert hits[0].doc["id"] == car["id"] and hits[0].similarity is not None
    for query in NONSENSE:
        assert await search.search(query, limit=10) == [], query
    found = await search.search("where does Caroline live", limit=10)
    old_id = old.outcomes[0].belief["id"]
    assert old_id not in {h.doc["id"] for h in found}
    assert new.outcomes[0].belief["id"] in {h.doc["id"] for h in found}
    # the entry remember logged for Lisbon is superseded with the belief
    assert all("Lisbon" not in h.content for h in found)
    everything = await search.search("where does Caroline live", limit=10, include_inactive=True)
    assert old_id in {h.doc["id"] for h in everything}


async def test_superseding_marks_quoting_notes_and_a_rollback_restores_them(
    text_only: tuple[Settings, MemoryLayer], client: Redis, keys: Keyspace
) -> None:
    s, layer = text_only
    checkpoints = Checkpoints(client, keys)
    beliefs = Beliefs(layer, s.beliefs)
    await beliefs.remember("Sam works at Acme as a welder")
    quoting = await LongTermMemory(layer).add("Note: Sam works at Acme, night shifts")
    unrelated = await LongTermMemory(layer).add("Acme sells anvils to coyotes")
    cp = await checkpoints.create(label="before the change")
    before = await dump_state(client, keys)
    await beliefs.remember("Sam works at Globex as a welder")
    quoted = await LongTermMemory(layer).get(quoting["id"])
    assert quoted.get("status") == "superseded"
    assert (await LongTermMemory(layer).get(unrelated["id"])).get("status") is None
    await checkpoints.rollback_to(cp.id)
    assert await dump_state(client, keys) == before
    # maintenance then reflects nothing that was superseded, nor what remember logged
    await beliefs.remember("Sam works at Globex as a welder")
    daily = DailyLog(layer)
    for line in ("Sam works at Acme", "lunch with Sam", "Sam works at Acme on Mondays"):
        await daily.log(line)
    engine = MaintenanceEngine(layer, checkpoints, beliefs=s.beliefs)
    await engine.run()
    notes = [await LongTermMemory(layer).get(i) for i in await LongTermMemory(layer).ids()]
    reflections = [n for n in notes if "reflection" in n.get("tags", [])]
    assert all("Globex" not in n["content"] for n in reflections)  # remember's entry is not copied
    assert all("Acme" not in n["content"] for n in reflections)  # nor the superseded fact


async def test_a_conversation_feeds_beliefs_and_the_graph_and_rolls_back_with_it(
    text_only: tuple[Settings, MemoryLayer], client: Redis, keys: Keyspace
) -> None:
    s, layer = text_only
    checkpoints = Checkpoints(client, keys)
    chats = ChatSessions(layer)
    learner = ConversationLearner(layer, Beliefs(layer, s.beliefs), speakers={"user": "Melanie"})
    cp = await checkpoints.create(label="before the chat")
    before = await dump_state(client, keys)
    await chats.append("main", "user", "Caroline went to the LGBTQ support group on 7 May.")
    await chats.append("main", "assistant", "That sounds like a good day for her.")
    await chats.append("main", "user", "I moved to Porto last year.")
    assert await learner.backlog() == ["main"]
    report = await learner.learn("main")
    assert report.turns == 3 and report.facts >= 2 and await learner.backlog() == []
    graph = Graph(layer)
    caroline = (await graph.find("Caroline"))[0]
    assert caroline["name"] == "Caroline" and caroline["type"] == "person"
    reached = await graph.expand([caroline["id"]], depth=1)
    names = {node["name"] for node in reached.nodes.values()}
    assert {"LGBTQ support group", "7 May"} <= names
    assert {e[1] for e in reached.edges} >= {"went_to", "on"}
    held = await Beliefs(layer, s.beliefs).select("active")
    assert any("Melanie" in b["content"] and "Porto" in b["content"] for b in held)
    assert (await learner.learn("main")).turns == 0  # the watermark moved with the change
    await checkpoints.rollback_to(cp.id)
    assert await dump_state(client, keys) == before  # beliefs, graph and watermark gone


async def test_llm_extraction_and_its_bad_replies(
    text_only: tuple[Settings, MemoryLayer], client: Redis, keys: Keyspace
) -> None:
    s, layer = text_only
    good = {
        "facts": [{"statement": "Jon works at Acme as a welder"}],
        "entities": [
            {"name": "Jon", "type": "person", "aliases": ["Jonathan"]},
            {"name": "Acme", "type": "organisation"},
        ],
        "relations": [{"source": "Jon", "type": "works_at", "target": "Acme"}],
    }
    replies = [
        completion(json.dumps(good)),
        completion("not json at all {"),
        completion(json.dumps({"facts": [{"statement": "x" * 10_000}]})),
        completion(json.dumps({"entities": [{"name": "@evil:{x} | *", "type": "person"}]})),
    ]
    with ScriptedOpenAI(extractor=lambda body: replies.pop(0)) as server:
        llm = LLMClient(server.base_url, "scripted", max_retries=0)
        beliefs = Beliefs(layer, s.beliefs)
        learner = ConversationLearner(layer, beliefs, llm)
        chats = ChatSessions(layer)
        await chats.append("s1", "user", "Jonathan got a job at Acme, welding.")
        assert (await learner.learn("s1")).extractor == "llm"
        jon = (await Graph(layer).find("Jonathan"))[0]
        assert jon["name"] == "Jon"
        used = []  # malformed JSON, an oversized fact: logged, the turn read without the LLM
        for text_ in ("Bob lives in Paris.", "Ann lives in Rome.", "Zed went to Oslo."):
            await chats.append("s1", "user", text_)
            report = await learner.learn("s1")
            used.append((report.turns, report.extractor))
        assert used == [(1, "deterministic"), (1, "deterministic"), (1, "llm")]
        assert (await Graph(layer).find("Paris"))[0]["type"] == "place"
        odd = await Graph(layer).get(entity_id("person", "@evil:{x} | *"))
        assert odd["name"] == "@evil:{x} | *"  # query syntax in a name is stored as data
        sent = [r for r in server.requests if "response_format" in r["body"]]
        assert sent[0]["body"]["response_format"]["type"] == "json_schema"
        await llm.aclose()

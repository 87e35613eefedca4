"""Relational memory: events and archetypes, the entity graph, decisions and failures,
scopes, repository intelligence."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.context.assembly import ContextAssembler
from aether.errors import InvalidOperationError
from aether.identity.bootstrap import default_identity_dir
from aether.identity.profile import IdentityStore
from aether.memory.code.repository import Repositories, path_id
from aether.memory.knowledge.archetypes import archetype
from aether.memory.knowledge.events import Events
from aether.memory.knowledge.graph import Graph, entity_id
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.decisions import DecisionMemory, FailureMemory
from aether.memory.tiers.patterns import pattern_key
from aether.store.journal import entries_after
from tests.conftest import invoke_cli

SERVICE = """\
from .models import Invoice
from . import tax


def total(items):
    return sum(line(i) for i in items) + tax.rate()


def line(item):
    return Invoice(item).amount
"""
MODELS = """\
class Invoice:
    def __init__(self, item):
        self.amount = item
"""
TAX = "def rate():\n    return 0\n"
TEST = """\
from billing.service import total


def test_total():
    assert total([1, 2]) == 3
"""


async def _layer(settings: Settings, client: Redis) -> MemoryLayer:
    layer = MemoryLayer.open(
        settings.model_copy(update={"embedding": {"provider": "none"}}), client
    )
    await MemorySearch(layer).ensure_index()
    return layer


async def _write_project(events: Events) -> None:
    for path, text in (
        ("billing/service.py", SERVICE),
        ("billing/models.py", MODELS),
        ("billing/tax.py", TAX),
        ("tests/test_service.py", TEST),
    ):
        await events.record(
            "file_write", payload={"path": path, "text": text}, session="dev", outcome="success"
        )


async def test_the_coding_archetype_builds_the_graph(settings: Settings, client: Redis) -> None:
    layer = await _layer(settings, client)
    events = Events(layer, archetype("coding"))
    await _write_project(events)
    graph = Graph(layer)
    service = await graph.get(entity_id("file", "billing/service.py"))
    assert service["properties"]["language"] == "python" and service["mention_count"] == 1
    total = await graph.get(entity_id("function", "billing/service.py:total"))
    assert "total" in total["aliases"] and total["properties"]["line"] == 5
    found = await graph.find("total")
    assert found[0]["name"] == "billing/service.py:total"
    expansion = await graph.expand([entity_id("file", "tests/test_service.py")], depth=2)
    names = {n["name"]: n["hop"] for n in expansion.nodes.values()}
    assert names["billing.service"] == 1  # the test imports and tests the module...
    assert names["billing/service.py"] == 2  # ...which that file implements
    edges = {
        (expansion.nodes[s]["name"], t, expansion.nodes[d]["name"])
        for s, t, d, _, _ in expansion.edges
    }
    assert ("tests/test_service.py", "tests", "billing.service") in edges
    assert ("billing/service.py", "implements", "billing.service") in edges
    deeper = await graph.expand([entity_id("file", "billing/service.py")], depth=2)
    deeper_edges = {
        (deeper.nodes[s]["name"], t, deeper.nodes[d]["name"]) for s, t, d, _, _ in deeper.edges
    }
    assert ("billing/service.py", "imports", "billing.models") in deeper_edges
    assert ("billing/models.py", "implements", "billing.models") in deeper_edges
    assert ("billing/service.py:total", "calls", "billing/service.py:line") in deeper_edges
    assert ("billing/service.py", "defines", "billing/service.py:total") in deeper_edges
    # writing the file again counts a mention and weighs the relations up, once each
    await events.record("file_write", payload={"path": "billing/service.py", "text": SERVICE})
    again = await graph.get(entity_id("file", "billing/service.py"))
    assert again["mention_count"] == 2 and again["salience"] > service["salience"]


async def test_a_2_hop_expansion_is_one_round_trip(settings: Settings, client: Redis) -> None:
    layer = await _layer(settings, client)
    await _write_project(Events(layer, archetype("coding")))
    graph = Graph(layer)
    seed = [entity_id("file", "tests/test_service.py")]
    before: Any = await client.info("commandstats")
    expansion = await graph.expand(seed, depth=2)
    after: Any = await client.info("commandstats")
    calls = {
        name.removeprefix("cmdstat_"): stats["calls"] - before.get(name, {"calls": 0})["calls"]
        for name, stats in after.items()
    }
    changed = {name: n for name, n in calls.items() if n}
    # one FCALL_RO (and the first INFO); the reads inside the function run server-side
    assert changed.pop("fcall_ro") == 1 and changed.pop("info") == 1
    assert set(changed) <= {"zrevrange", "hgetall"}
    assert len(expansion.nodes) >= 4


async def test_events_chain_outcomes_and_bad_input(settings: Settings, client: Redis) -> None:
    layer = await _layer(settings, client)
    events = Events(layer, archetype("coding"))
    run = await events.record(
        "shell_exec",
        payload={"command": "pytest -q"},
        duration_ms=812.5,
        outcome="failure",
        keywords=["tests"],
        session="dev",
    )
    err = await events.record(
        "error",
        payload={"message": "AssertionError: 3 != 4", "path": "billing/service.py"},
        parent=run.event["id"],
        session="dev",
    )
    fix = await events.record(
        "file_edit",
        payload={"path": "billing/service.py", "text": SERVICE},
        parent=err.event["id"],
        outcome="success",
        session="dev",
    )
    chain = await events.chain(fix.event["id"])
    assert [e["type"] for e in chain] == ["shell_exec", "error", "file_edit"]
    assert chain[0]["duration_ms"] == 812.5 and chain[0]["outcome"] == "failure"
    pattern = await Graph(layer).get(
        entity_id("error_pattern", pattern_key("AssertionError: 3 != 4"))
    )
    assert pattern["type"] == "error_pattern"
    recent = await events.recent("dev")
    assert [e["type"] for e in recent] == ["file_edit", "error", "shell_exec"]
    before = await client.dbsize()
    bad_input: list[dict[str, Any]] = [
        {"kind": "teleport"},
        {"kind": "error", "outcome": "meh"},
        {"kind": "error", "parent": "NOPE"},
        {"kind": "error", "scope": "planet:x"},
        {"kind": "error", "actor": "robot"},
        {"kind": "error", "session": "a b"},
    ]
    for bad in bad_input:
        kind = bad.pop("kind")
        with pytest.raises(InvalidOperationError):
            await events.record(kind, payload={"message": "x"}, **bad)
    assert await client.dbsize() == before


async def test_the_general_archetype_relates_what_cooccurs(
    settings: Settings, client: Redis
) -> None:
    layer = await _layer(settings, client)
    events = Events(layer, archetype("general"))
    await events.record(
        "message", summary="Lunch with Alice Smith and Bob in Lisbon", keywords=["travel"]
    )
    alice = entity_id("name", "Alice Smith")
    expansion = await Graph(layer).expand([alice], depth=1)
    assert {n["name"] for n in expansion.nodes.values()} >= {
        "Alice Smith",
        "Bob",
        "Lisbon",
        "travel",
    }
    assert all(t == "co_occurs" for _, t, _, _, _ in expansion.edges)


async def test_a_failure_pattern_is_detected_at_the_third_occurrence(
    settings: Settings, client: Redis
) -> None:
    layer = await _layer(settings, client)
    failures = FailureMemory(layer)
    seen = [
        await failures.record(
            f"TimeoutError: connect to 10.0.0.{i}:6379 took {i}.5s", scope="repository:aether"
        )
        for i in range(1, 5)
    ]
    assert [r.occurrences for r in seen] == [1, 2, 3, 4]
    assert [r.detected for r in seen] == [False, False, True, False]
    assert len({r.pattern for r in seen}) == 1
    [known] = await failures.patterns()
    assert known["count"] == 4 and known["key"] == seen[0].pattern and "detected_at" in known
    await failures.record("KeyError: 'user'")
    assert [p["key"] for p in await failures.patterns()] == [seen[0].pattern]
    with pytest.raises(InvalidOperationError):
        await failures.record("x", pattern="Not A Key!")
    identity = IdentityStore(layer.store, Checkpoints(client, layer.keys))
    await identity.ensure(default_identity_dir())
    assembler = ContextAssembler(layer, identity, settings.context, archetype=archetype("coding"))
    ctx = await assembler.assemble("redis timeout", 2000)
    assert "## Known failure patterns" in ctx.graph.text and seen[0].pattern in ctx.graph.text


async def test_decisions_and_scopes(settings: Settings, client: Redis) -> None:
    layer = await _layer(settings, client)
    decisions = DecisionMemory(layer)
    mine = await decisions.record(
        "Session store", "use Redis streams", "ordered, durable", scope="repository:aether"
    )
    await decisions.record("Lunch", "pasta", scope="global")
    await decisions.set_outcome(mine["id"], "success", "shipped")
    scoped = await decisions.list(scope="repository:aether")
    assert [(d["title"], d["outcome"]) for d in scoped] == [("Session store", "success")]
    assert len(await decisions.list()) == 2
    search = MemorySearch(layer)
    hits = await search.search("redis streams", scopes=["repository:aether"])
    assert [h.doc["id"] for h in hits] == [mine["id"]]
    assert await search.search("pasta", scopes=["repository:aether"]) == []
    for bad in ("repository", "planet:x", "repository:a b"):
        with pytest.raises(InvalidOperationError):
            await decisions.record("t", "c", scope=bad)
    with pytest.raises(InvalidOperationError):
        await decisions.set_outcome(mine["id"], "meh")


def _project(root: Path) -> None:
    files = {
        "billing/__init__.py": "",
        "billing/service.py": SERVICE,
        "billing/models.py": MODELS,
        "billing/tax.py": TAX,
        "tests/test_service.py": TEST,
        "web/src/api.ts": 'import { total } from "./total";\nexport const api = () => total();\n',
        "web/src/total.ts": "export function total() { return 1; }\n",
        "web/src/total.test.ts": 'import { total } from "./total";\ntest("t", () => total());\n',
        "cmd/main.go": (
            'package main\n\nimport "example.com/app/pkg/util"\n\nfunc main() { util.Run() }\n'
        ),
        "pkg/util/util.go": "package util\n\nfunc Run() {}\n",
        "src/lib.rs": "mod cache;\nuse crate::cache::Cache;\npub fn go() { Cache::new(); }\n",
        "src/cache.rs": "pub struct Cache;\nimpl Cache { pub fn new() -> Self { Cache } }\n",
        "README.md": "# not code\n",
        "node_modules/x/index.js": "ignored();\n",
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


async def test_repository_index_queries_and_reindex(
    settings: Settings, client: Redis, tmp_path: Path
) -> None:
    layer = await _layer(settings, client)
    _project(tmp_path)
    repos = Repositories(layer)
    first = await repos.index(tmp_path)
    assert first.files == 12 and len(first.changed) == 12 and first.unchanged == 0
    assert first.languages == {"python": 5, "typescript": 3, "go": 2, "rust": 2}
    deps = await repos.deps(tmp_path / "tests/test_service.py")
    assert [(d["path"], d["depth"]) for d in deps] == [
        ("billing/service.py", 1),
        ("billing/models.py", 2),
        ("billing/tax.py", 2),
    ]
    affected = await repos.affected(tmp_path / "billing/models.py")
    assert [(a["path"], a["depth"], a["test"]) for a in affected] == [
        ("billing/service.py", 1, False),
        ("tests/test_service.py", 2, True),
    ]
    assert [a["path"] for a in await repos.affected(tmp_path / "web/src/total.ts")] == [
        "web/src/api.ts",
        "web/src/total.test.ts",
    ]
    assert [d["path"] for d in await repos.deps(tmp_path / "cmd/main.go")] == ["pkg/util/util.go"]
    assert [d["path"] for d in await repos.deps(tmp_path / "src/lib.rs")] == ["src/cache.rs"]
    related = await repos.related(tmp_path / "billing/service.py")
    assert related[0]["path"] in ("billing/models.py", "billing/tax.py", "tests/test_service.py")
    assert {r["path"] for r in related[:3]} == {
        "billing/models.py",
        "billing/tax.py",
        "tests/test_service.py",
    }
    # change one file: the re-index parses and writes only that one
    marker = (await client.xrevrange(layer.keys.journal(), count=1))[0][0]
    (tmp_path / "billing/tax.py").write_text("def rate():\n    return 0.2\n")
    second = await repos.index(tmp_path)
    assert second.changed == ["billing/tax.py"] and second.unchanged == 11 and not second.removed
    written = [
        key
        async for entry in entries_after(client, layer.keys.journal(), marker.decode())
        for key in entry.touched_keys()
    ]
    file_keys = [k for k in written if ":file:" in k]
    assert file_keys == [layer.keys.repo_file(second.repo, path_id("billing/tax.py"))]
    third = await repos.index(tmp_path)
    assert third.changed == [] and third.unchanged == 12
    (tmp_path / "billing/tax.py").unlink()
    fourth = await repos.index(tmp_path)
    assert fourth.removed == ["billing/tax.py"] and fourth.files == 11
    with pytest.raises(InvalidOperationError):
        await repos.index(tmp_path / "nope")


def test_repo_and_graph_cli(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    _project(tmp_path)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:

        return invoke_cli(env, *args)

    indexed = cli("repo", "index", str(tmp_path), "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["files"] == 12
    deps = cli("repo", "deps", str(tmp_path / "tests/test_service.py"))
    assert deps.returncode == 0 and "billing/service.py" in deps.stdout
    assert (
        "tests/test_service.py"
        in cli("repo", "affected", str(tmp_path / "billing/models.py")).stdout
    )
    outside = cli("repo", "deps", "/etc/hostname")
    assert outside.returncode == 1 and "no indexed repository" in outside.stderr
    assert cli("repo", "list").returncode == 0
    assert cli("graph", "find", "nothing-here").returncode == 2

"""The production stack: the compose file (validated by docker-compose 1.29, its wiring
run against the embedded Redis and the local PostgreSQL), the tool registry and agent
ledger on every available backend, and the Qdrant mirror's search contract."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import yaml
from redis.asyncio import Redis

from aether.app import Aether
from aether.config import Settings
from aether.errors import InvalidOperationError, NotFoundError
from aether.keys import Keyspace
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.longterm import LongTermMemory
from aether.registry.factory import open_registry
from aether.registry.model import LedgerQuery, new_entry
from aether.server.embedded import EmbeddedRedis
from aether.testing.model import ScriptedOpenAI
from tests.conftest import PG_DSN, free_port, invoke_cli, run_cli

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "compose" / "docker-compose.yml"
SECRETS = {"REDIS_PASSWORD": "r3dis", "POSTGRES_PASSWORD": "pgpass", "AETHER_MCP_TOKEN": "tok"}


def _compose(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("docker-compose")
    assert binary, "docker-compose 1.29 is needed (make test installs it: apt docker-compose)"
    clean = {k: v for k, v in os.environ.items() if k not in SECRETS and not k.startswith("AETHER")}
    return subprocess.run(
        [binary, "-f", str(COMPOSE), "config"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_compose_file_is_valid_and_complete() -> None:
    out = _compose(SECRETS)
    assert out.returncode == 0, out.stderr
    config = yaml.safe_load(out.stdout)
    services = config["services"]
    assert set(services) == {"redis", "postgres", "mongo", "qdrant", "aether"}
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
    assert set(config["volumes"]) == {
        "redis-data",
        "postgres-data",
        "mongo-data",
        "qdrant-data",
        "aether-data",
    }
    aether = services["aether"]
    assert aether["build"]["dockerfile"] == "compose/Dockerfile"
    assert {d: c["condition"] for d, c in aether["depends_on"].items()} == dict.fromkeys(
        ("redis", "postgres", "mongo", "qdrant"), "service_healthy"
    )
    env = aether["environment"]
    assert env["AETHER_REDIS_URL"] == "redis://:r3dis@redis:6379/0"
    assert env["AETHER_POSTGRES_DSN"] == "postgresql://aether:pgpass@postgres:5432/aether"
    assert env["AETHER_MONGO_URL"].startswith("mongodb://mongo:27017/")
    assert env["AETHER_QDRANT_URL"] == "http://qdrant:6333" and env["AETHER_MCP__TOKEN"] == "tok"
    assert (ROOT / "compose" / "Dockerfile").read_text().count("aether") >= 3
    # a missing secret is a clear error, not an empty password
    missing = _compose({k: v for k, v in SECRETS.items() if k != "REDIS_PASSWORD"})
    assert missing.returncode != 0 and "set REDIS_PASSWORD" in missing.stderr


def _shell(command: list[str]) -> str:
    assert command[0] in ("CMD", "CMD-SHELL")
    return command[1] if command[0] == "CMD-SHELL" else " ".join(command[1:])


@pytest.fixture
def tcp_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """An embedded Redis listening on TCP: (port, password)."""
    home = tmp_path_factory.mktemp("compose-redis")
    port = free_port()
    server = EmbeddedRedis(Settings(home=home, redis_port=port))
    server.start()
    yield port, server.endpoint().password
    server.stop()


async def _ensure_pg_role() -> None:
    conn = await asyncpg.connect(PG_DSN)
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = 'aether'"):
            await conn.execute("CREATE ROLE aether LOGIN PASSWORD 'pgpass'")
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = 'aether'"):
            await conn.execute("CREATE DATABASE aether OWNER aether")
    finally:
        await conn.close()


def test_the_compose_wiring_against_local_services(
    tcp_redis: tuple[int, str], tmp_path: Path
) -> None:
    port, password = tcp_redis
    asyncio.run(_ensure_pg_role())
    config = yaml.safe_load(_compose({**SECRETS, "REDIS_PASSWORD": password}).stdout)
    services = config["services"]
    # the health checks, pointed at the local services instead of the containers'
    redis_check = _shell(services["redis"]["healthcheck"]["test"]).replace("-p 6379", f"-p {port}")
    env = {**os.environ, **services["redis"]["environment"]}
    assert subprocess.run(["sh", "-c", redis_check], env=env, timeout=30).returncode == 0
    pg_check = _shell(services["postgres"]["healthcheck"]["test"])
    assert subprocess.run(["sh", "-c", pg_check], timeout=30).returncode == 0
    # the daemon's environment, with container host names mapped to local ones
    wired = dict(services["aether"]["environment"])
    wired["AETHER_REDIS_URL"] = wired["AETHER_REDIS_URL"].replace(
        "@redis:6379", f"@127.0.0.1:{port}"
    )
    wired["AETHER_POSTGRES_DSN"] = wired["AETHER_POSTGRES_DSN"].replace("@postgres:", "@127.0.0.1:")
    del wired["AETHER_MONGO_URL"], wired["AETHER_QDRANT_URL"]  # no MongoDB or Qdrant here
    mcp_port = free_port()
    wired.update(
        {
            "AETHER_HOME": str(tmp_path),
            "AETHER_EMBEDDING__PROVIDER": "none",
            "AETHER_MCP__PORT": str(mcp_port),
            "AETHER_MCP__HOST": "127.0.0.1",
            "AETHER_NAMESPACE": f"compose{uuid.uuid4().hex[:6]}",
        }
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("AETHER_")}
    env = {**base, **wired}
    check = _shell(services["aether"]["healthcheck"]["test"])
    assert check == "aether status"

    def aether(*args: str) -> subprocess.CompletedProcess[str]:

        return run_cli(env, *args)

    assert aether("status").returncode == 1  # the health check fails while it is down
    synced = aether("archive", "sync", "--json")
    assert synced.returncode == 0, synced.stderr  # Redis URL + PostgreSQL DSN wiring
    command = [sys.executable, "-m", "aether", *services["aether"]["command"][1:]]
    daemon = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while aether("status").returncode != 0:
            assert daemon.poll() is None and time.monotonic() < deadline
            time.sleep(0.5)
        url = f"http://127.0.0.1:{mcp_port}/mcp"
        assert httpx.post(url, json={}, timeout=10).status_code == 401
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(15) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()


# ------------------------------------------------------------ registry and ledger


@pytest.fixture(params=["redis", "mongo"])
async def services(
    request: pytest.FixtureRequest, settings: Settings, client: Redis
) -> AsyncIterator[Any]:
    s = settings
    if request.param == "mongo":
        url = os.environ.get("AETHER_TEST_MONGO_URL")
        if not url:  # no MongoDB on this machine: say so instead of leaving the case out
            pytest.skip("MongoDB contract: set AETHER_TEST_MONGO_URL to a MongoDB to run it")
        s = settings.model_copy(update={"mongo_url": url})
    opened = open_registry(s, client)
    assert opened.backend == request.param
    yield opened
    await opened.close()


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


async def test_the_tool_registry_contract(services: Any) -> None:
    registry = services.registry
    first = await registry.register("weather", "Weather for a city.", SCHEMA)
    assert first.version == 1 and first.schema == SCHEMA
    same = await registry.register("weather", "Weather for a city.", dict(reversed(SCHEMA.items())))
    assert same.version == 1  # the same definition is not a new version
    changed = {**SCHEMA, "properties": {**SCHEMA["properties"], "days": {"type": "integer"}}}
    second = await registry.register("weather", "Weather for a city.", changed)
    assert second.version == 2
    await registry.register("clock", "The time.", {"type": "object", "properties": {}})
    assert [(t.name, t.version) for t in await registry.tools()] == [("clock", 1), ("weather", 2)]
    assert (await registry.get("weather", 1)).schema == SCHEMA
    assert [v.version for v in await registry.versions("weather")] == [1, 2]
    racing = await asyncio.gather(
        *[registry.register("race", f"Version {i}.", SCHEMA) for i in range(4)]
    )
    assert sorted(r.version for r in racing) == [1, 2, 3, 4]
    with pytest.raises(NotFoundError):
        await registry.get("nope")
    with pytest.raises(NotFoundError):
        await registry.get("weather", 9)
    for name, description, schema in (
        ("bad name!", "x", SCHEMA),
        ("ok", " ", SCHEMA),
        ("ok", "x", {"type": "array"}),
    ):
        with pytest.raises(InvalidOperationError):
            await registry.register(name, description, schema)


async def test_the_agent_ledger_contract(services: Any) -> None:
    ledger = services.ledger
    start = time.time()
    await ledger.append(new_entry("action", summary="checked the inbox"))
    await ledger.append(
        new_entry(
            "llm_call",
            model="m",
            prompt_tokens=120,
            completion_tokens=30,
            cost_usd=0.0015,
            duration_ms=812.0,
            session="main",
        )
    )
    await ledger.append(
        new_entry("llm_call", model="m", prompt_tokens=80, completion_tokens=20, cost_usd=0.001)
    )
    await ledger.append(new_entry("tool_call", summary="memory_search", detail={"q": "x"}))
    latest = await ledger.entries()
    assert [e.kind for e in latest] == ["tool_call", "llm_call", "llm_call", "action"]
    assert [e.prompt_tokens for e in await ledger.entries(LedgerQuery(kind="llm_call"))] == [
        80,
        120,
    ]
    assert len(await ledger.entries(LedgerQuery(limit=2))) == 2
    assert await ledger.entries(LedgerQuery(since=time.time() + 60)) == []
    totals = await ledger.totals(since=start - 1)
    assert totals == {
        "llm_calls": 2,
        "prompt_tokens": 200,
        "completion_tokens": 50,
        "cost_usd": 0.0025,
        "actions": 2,
    }
    for bad in (
        {"kind": "gossip"},
        {"kind": "llm_call", "prompt_tokens": -1},
        {"kind": "action", "detail": {"x": "y" * 70_000}},
    ):
        kind = bad.pop("kind")
        with pytest.raises(InvalidOperationError):
            new_entry(kind, **bad)


async def test_the_ledger_records_the_runtime(settings: Settings, client: Redis) -> None:
    from aether.identity.bootstrap import default_identity_dir
    from aether.runtime.llm import LLMClient
    from aether.testing.model import completion

    with ScriptedOpenAI(
        replies=[
            completion(tool_calls=[("c1", "scratchpad_get", {"id": "x"})]),
            completion("done"),
        ]
    ) as server:
        s = settings.model_copy(
            update={
                "embedding": {"provider": "none"},
                "llm": {"price_in_per_mtok": 2.0, "price_out_per_mtok": 8.0},
            }
        )
        opened = open_registry(s, client)
        wired = Aether(s, client)
        await wired.ready()
        rt = wired.runtime(llm=LLMClient(server.base_url, "m", max_retries=0))
        rt.ledger = opened.ledger
        await rt.identity.ensure(default_identity_dir())
        await rt.step("hello")
    entries = await opened.ledger.entries()
    assert [e.kind for e in entries] == ["llm_call", "tool_call", "llm_call"]
    assert entries[0].prompt_tokens == 10 and entries[0].cost_usd == pytest.approx(60e-6)
    assert entries[1].summary == "scratchpad_get: ok" and entries[1].detail["success"] is True
    assert entries[1].detail["server"] == "aether" and entries[1].detail["outcome"] == "ok"
    assert entries[1].detail["approval"]["decision"] == "allowed"


# ------------------------------------------------------------ Qdrant mirror

NOW = 1_790_000_000.0


async def _search_layer(
    settings: Settings, client: Redis, base_url: str, tmp_path: Path, qdrant_search: bool
) -> MemoryLayer:
    s = settings.model_copy(
        update={
            "qdrant_path": tmp_path / "qdrant",
            "qdrant_search": qdrant_search,
            "embedding": settings.embedding.model_copy(
                update={"provider": "openai", "model": "bow", "base_url": base_url, "dims": 64}
            ),
        }
    )
    layer = MemoryLayer.open(s, client)
    await MemorySearch(layer).ensure_index()
    return layer


@pytest.mark.parametrize("backend", ["redis", "qdrant"])
async def test_the_vector_search_contract(
    settings: Settings, client: Redis, tmp_path: Path, backend: str
) -> None:
    with ScriptedOpenAI(dims=64) as server:
        layer = await _search_layer(
            settings, client, server.base_url, tmp_path, backend == "qdrant"
        )
        assert layer.mirror is not None and layer.qdrant_search == (backend == "qdrant")
        daily, longterm = DailyLog(layer), LongTermMemory(layer)
        kiwi = await daily.log("zebra kiwi mango", tags=["fruit"], timestamp=NOW)
        await daily.log("quarterly tax forms", tags=["admin"], timestamp=NOW - 86_400 * 10)
        old = await daily.log("kiwi orchard visit", tags=["fruit"], timestamp=NOW - 86_400 * 40)
        lasting = await longterm.add("kiwi allergy noted", timestamp=NOW)
        search = MemorySearch(layer, alpha=1.0)  # vectors only: the backend under test
        hits = await search.search("kiwi mango", limit=2, now=NOW)
        assert hits[0].doc["id"] == kiwi["id"] and len(hits) == 2 and hits[0].vector_rank == 1
        assert [h.doc["kind"] for h in await search.search("kiwi", kind="longterm", now=NOW)] == [
            "longterm"
        ]
        tagged = await search.search("quarterly tax", tags=["admin"], now=NOW)
        assert tagged and all("admin" in h.doc["tags"] for h in tagged)
        # the only admin memory is unrelated to kiwis: nothing relevant, nothing found
        assert await search.search("kiwi", tags=["admin"], now=NOW) == []
        recent = await search.search("kiwi", since=NOW - 86_400 * 20, now=NOW)
        assert old["id"] not in {h.doc["id"] for h in recent}
        await longterm.delete(lasting["id"])
        after = await search.search("kiwi allergy", limit=5, now=NOW)
        assert lasting["id"] not in {h.doc["id"] for h in after}  # Redis decides
        if layer.mirror is not None:
            await layer.mirror.close()


async def test_vectors_are_mirrored_to_qdrant(
    settings: Settings, client: Redis, tmp_path: Path
) -> None:
    with ScriptedOpenAI(dims=64) as server:
        layer = await _search_layer(settings, client, server.base_url, tmp_path, False)
        doc = await DailyLog(layer).log("mirrored entry about sailing", timestamp=NOW)
        assert layer.mirror is not None
        from aether.memory.storage.qdrant_mirror import point_id

        points = await layer.mirror.client.retrieve(
            layer.mirror.collection, [point_id(doc["id"])], with_vectors=True
        )
        assert points and points[0].payload is not None and points[0].payload["id"] == doc["id"]
        assert len(points[0].vector) == 64  # type: ignore[arg-type]
        await layer.mirror.close()


def test_docs_keep_a_scaling_note() -> None:
    text = (ROOT / "docs" / "scaling.md").read_text()
    for needle in ("hash slot", "{agent-a}", "AETHER_REDIS_CLUSTER", "--agents", "Qdrant"):
        assert needle in text
    assert re.search(r"AETHER_QDRANT_(URL|SEARCH)", text)
    assert Keyspace("{agent-a}").journal().startswith("{agent-a}:")


def test_registry_and_ledger_cli(cli_env: dict[str, str], namespace: str) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:

        return invoke_cli(env, *args)

    assert cli("tools", "list").returncode == 2  # nothing registered yet
    assert cli("ledger", "list").returncode == 2

    async def seed() -> None:
        from aether.store.client import connect

        settings = Settings(home=Path(env["AETHER_HOME"]), namespace=namespace)
        client = await connect(settings)
        services = open_registry(settings, client)
        await services.registry.register("weather", "Weather for a city.", SCHEMA)
        await services.ledger.append(
            new_entry("llm_call", model="m", prompt_tokens=5, completion_tokens=2, cost_usd=0.01)
        )
        await client.aclose()

    asyncio.run(seed())
    listed = cli("tools", "list")
    assert listed.returncode == 0
    assert [line.split()[:2] for line in listed.stdout.splitlines()] == [
        ["name", "version"],
        ["weather", "v1"],
    ]
    shown = json.loads(cli("tools", "show", "weather", "--json").stdout)
    assert shown["schema"] == SCHEMA
    assert cli("tools", "show", "nope").returncode == 1
    assert "llm_call" in cli("ledger", "list", "--since", "1h").stdout
    totals = json.loads(cli("ledger", "totals", "--json").stdout)
    assert totals["llm_calls"] == 1 and totals["cost_usd"] == 0.01
    bad = cli("ledger", "list", "--kind", "gossip")
    assert bad.returncode == 64 and "--kind" in bad.stderr  # a usage error: not a kind

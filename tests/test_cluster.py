"""Many agents on a real local Redis Cluster (3 primaries from the embedded binaries)."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.crc import key_slot

from aether.app import Aether
from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.errors import BusyError, ConfigError, UnavailableError
from aether.keys import Keyspace
from aether.memory.tiers.daily import DailyLog
from aether.runtime.inbox import Inbox
from aether.store.client import connect
from aether.store.cluster import SlotRedis
from aether.testing.local_cluster import LocalCluster
from aether.testing.model import ScriptedOpenAI
from tests.conftest import dump_state
from tests.test_daemon import SlowModel, _cli, _env, _start


def _slot(namespace: str) -> int:
    return int(key_slot(namespace.encode()))


def _namespaces_on_two_shards(cluster: LocalCluster) -> tuple[str, str]:
    """Two fresh hash-tagged namespaces whose slots are on different primaries."""
    first = f"{{a{uuid.uuid4().hex[:8]}}}"
    while True:
        second = f"{{b{uuid.uuid4().hex[:8]}}}"
        if cluster.owner(_slot(first)) != cluster.owner(_slot(second)):
            return first, second


def _settings(cluster: LocalCluster, home: Path, namespace: str, **extra: object) -> Settings:
    return Settings(
        home=home,
        namespace=namespace,
        redis_url=cluster.url,  # type: ignore[arg-type]
        redis_cluster=True,
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture
async def agents(cluster: LocalCluster, tmp_path: Path) -> AsyncIterator[tuple[Aether, Aether]]:
    names = _namespaces_on_two_shards(cluster)
    opened = []
    for name in names:
        settings = _settings(cluster, tmp_path, name, embedding={"provider": "local"})
        agent = Aether(settings, await connect(settings))
        await agent.ready()
        opened.append(agent)
    yield opened[0], opened[1]
    for agent in opened:
        await agent.client.aclose()


async def test_a_namespace_without_a_hash_tag_is_refused(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"AETHER_NAMESPACE=\{agent-a\}"):
        await connect(_settings(cluster, tmp_path, "plain"))
    with pytest.raises(ConfigError, match="needs AETHER_REDIS_URL"):
        await connect(Settings(home=tmp_path, namespace="{x}", redis_cluster=True))


async def test_two_agents_on_two_shards_journal_search_and_roll_back(
    cluster: LocalCluster, agents: tuple[Aether, Aether]
) -> None:
    a, b = agents
    assert isinstance(a.client, SlotRedis) and isinstance(b.client, SlotRedis)
    assert a.client.owner_address != b.client.owner_address  # really on two shards
    await DailyLog(a.memory).log("Agent A deployed the billing service", "agent")
    await DailyLog(b.memory).log("Agent B adopted a cat named Miso", "user")
    before_a, before_b = await dump_state(a.client, a.keys), await dump_state(b.client, b.keys)
    checkpoint = await a.checkpoints.create(label="before")
    await DailyLog(a.memory).log("Agent A broke production with a bad migration", "agent")
    # hybrid search answers per agent, from its own shard's index, never the other's
    found = await a.search.search("billing deployment", limit=5)
    assert found and "billing" in found[0].content
    assert not any("Miso" in h.content for h in found)
    kitten = await b.search.search("what is the name of the kitten", limit=5)
    assert kitten and "Miso" in kitten[0].content  # through the vector half: no shared word
    # rollback and undo, atomic on A's shard; B untouched
    await a.checkpoints.rollback_to(checkpoint.id)
    assert await dump_state(a.client, a.keys) == before_a
    assert await dump_state(b.client, b.keys) == before_b
    await a.checkpoints.undo()
    assert "bad migration" in (await a.search.search("bad migration", limit=1))[0].content


async def test_the_inbox_answers_each_message_once_on_a_shard(
    agents: tuple[Aether, Aether],
) -> None:
    a, b = agents
    for agent in (a, b):
        first, second = Inbox(agent.client, agent.keys), Inbox(agent.client, agent.keys, "other")
        await first.ensure_group()
        sent = await first.send("hello")
        [message] = await first.read(block_ms=100)
        assert message.id == sent
        assert await first.reply(message, "hi") is not None
        assert await second.reply(message, "a second answer") is None  # already answered
        out: Any = await agent.client.xrange(agent.keys.outbox())
        assert len(out) == 1


async def test_a_slot_moves_to_another_shard_while_the_agent_writes(
    cluster: LocalCluster, agents: tuple[Aether, Aether]
) -> None:
    a, _ = agents
    assert isinstance(a.client, SlotRedis)
    slot = _slot(a.settings.namespace)
    source = cluster.owner(slot)
    target = next(port for port in cluster.ports if port != source)
    daily = DailyLog(a.memory)
    written: list[str] = []
    moved = threading.Event()

    async def keep_writing() -> None:
        while not moved.is_set() or len(written) < 10:
            entry = await daily.log(f"note {len(written)} about the orchard harvest", "agent")
            written.append(entry["id"])
        for _ in range(5):  # and after the move
            entry = await daily.log(f"note {len(written)} about the orchard harvest", "agent")
            written.append(entry["id"])

    def move() -> None:
        try:
            cluster.move_slot(slot, target)
        finally:
            moved.set()

    mover = threading.Thread(target=move)
    writer = asyncio.create_task(keep_writing())
    await asyncio.sleep(0.05)
    mover.start()
    await asyncio.to_thread(mover.join, 60)
    await asyncio.wait_for(writer, 60)
    assert cluster.owner(slot) == target
    assert a.client.owner_address[1] == target  # the client followed MOVED
    stored = await a.memory.get_docs([a.keys.daily_entry(i) for i in written], ("id",))
    assert all(doc is not None for doc in stored)  # every acknowledged write is there
    # the index was created on the new owner, which indexes the migrated documents
    for _ in range(100):
        hits = await a.search.search("orchard harvest", kind="daily", limit=100)
        if len(hits) == len(written):
            break
        await asyncio.sleep(0.1)
    assert {h.doc["id"] for h in hits} == set(written)


def test_the_daemon_keeps_answering_while_its_slot_moves(
    cluster: LocalCluster, cli_env: dict[str, str], tmp_path: Path
) -> None:
    namespace = f"{{d{uuid.uuid4().hex[:8]}}}"
    slot = _slot(namespace)
    with ScriptedOpenAI(responder=SlowModel()) as server:
        env = {
            **_env(cli_env, server),
            "AETHER_NAMESPACE": namespace,
            "AETHER_REDIS_URL": cluster.url,
            "AETHER_REDIS_CLUSTER": "true",
        }
        proc = _start(env, tmp_path / "daemon.log")
        try:
            assert _cli(env, "send", "before the move").stdout.startswith("echo: ")
            noted = _cli(env, "memory", "longterm", "add", "The orchard is in the north field")
            assert noted.returncode == 0, noted.stderr
            source = cluster.owner(slot)
            cluster.move_slot(slot, next(p for p in cluster.ports if p != source))
            after = _cli(env, "send", "after the move")  # the daemon was blocked on the inbox
            assert after.returncode == 0 and "after the move" in after.stdout, after.stderr
            history = json.loads(_cli(env, "--json", "memory", "chat", "show", "main").stdout)
            said = [m["content"] for m in history]
            assert said.count("before the move") == 1 and said.count("after the move") == 1
            found = json.loads(_cli(env, "--json", "memory", "search", "orchard").stdout)
            assert "north field" in found[0]["content"]  # the index followed the slot
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(15) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        assert "hash slot moved" in (tmp_path / "daemon.log").read_text()


async def test_a_key_already_migrated_is_read_through_ask_then_moved(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    namespace = f"{{k{uuid.uuid4().hex[:8]}}}"
    slot = _slot(namespace)
    client = await connect(_settings(cluster, tmp_path, namespace))
    assert isinstance(client, SlotRedis)
    moved, staying = f"{namespace}:moved", f"{namespace}:staying"
    checkpoints = Checkpoints(client, Keyspace(namespace))
    try:
        await client.set(moved, "1")
        await client.set(staying, "2")
        checkpoint = await checkpoints.create()
        source_port = cluster.owner(slot)
        target_port = next(p for p in cluster.ports if p != source_port)
        source, target = cluster.node(source_port), cluster.node(target_port)
        source_id = source.execute_command("CLUSTER", "MYID").decode()
        target_id = target.execute_command("CLUSTER", "MYID").decode()
        target.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        source.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        source.execute_command(
            "MIGRATE", "127.0.0.1", target_port, moved, 0, 5000, "AUTH", cluster.password
        )
        assert await client.get(moved) == b"1"  # ASK: read on the importing node
        assert await client.get(staying) == b"2"  # still on the source
        assert client.owner_address[1] == source_port  # an ASK is not a move
        with pytest.raises(BusyError, match="being migrated"):  # it cannot declare its reads
            await client.fcall_ro("aether_expand", 1, moved, f"{namespace}:", 1, 1, 1, "x")
        listed = len(await checkpoints.list())
        with pytest.raises(BusyError, match="being migrated"):  # an admin action waits
            await checkpoints.rollback_to(checkpoint.id)
        assert len(await checkpoints.list()) == listed  # nothing done, not even a checkpoint
        pipe = client.pipeline(transaction=False)
        pipe.get(moved)
        with pytest.raises(UnavailableError, match="keeps moving"):
            await pipe.execute()  # a pipeline waits for the migration, then gives up
        cluster.move_slot(slot, target_port)  # the rest, and the slot's new owner
        assert await client.get(staying) == b"2"  # MOVED: followed
        assert client.owner_address[1] == target_port
        pipe = client.pipeline(transaction=True)
        pipe.get(moved).get(staying)
        assert await pipe.execute() == [b"1", b"2"]
    finally:
        await client.aclose()


async def test_a_primary_killed_and_restarted_loses_no_acknowledged_write(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    settings = _settings(
        cluster, tmp_path, f"{{r{uuid.uuid4().hex[:8]}}}", embedding={"provider": "none"}
    )
    agent = Aether(settings, await connect(settings))
    try:
        await agent.ready()
        assert isinstance(agent.client, SlotRedis)
        daily = DailyLog(agent.memory)
        written = [(await daily.log(f"entry {i} about the greenhouse"))["id"] for i in range(20)]
        port = agent.client.owner_address[1]
        cluster.kill(port)  # SIGKILL the agent's primary (appendfsync always)
        with pytest.raises(UnavailableError):
            await daily.log("written while the shard is down")
        cluster.restart(port)
        written.append((await daily.log("after the restart, the greenhouse again"))["id"])
        keys = [agent.keys.daily_entry(i) for i in written]
        assert all(doc is not None for doc in await agent.memory.get_docs(keys, ("id",)))
        assert not await agent.search.search("shard down")  # the refused write left nothing
        for _ in range(100):  # the index is rebuilt from the append-only file at load
            hits = await agent.search.search("greenhouse", limit=50)
            if len(hits) == len(written):
                break
            await asyncio.sleep(0.1)
        assert {h.doc["id"] for h in hits} == set(written)
    finally:
        await agent.client.aclose()


async def test_an_erasure_on_a_cluster_shard(cluster: LocalCluster, tmp_path: Path) -> None:
    """Erasure rebuilds the journal and streams in the agent's slot and proves the text gone."""
    settings = _settings(
        cluster, tmp_path, f"{{x{uuid.uuid4().hex[:8]}}}", embedding={"provider": "none"}
    )
    agent = Aether(settings, await connect(settings))
    try:
        await agent.ready()
        daily = DailyLog(agent.memory)
        await daily.log("the build is green")
        cp = await agent.checkpoints.create(label="before")
        await daily.log("the operator's cardiologist is Dr Vantrell")
        await agent.client.xadd(agent.keys.inbox(), {"content": "ask Dr Vantrell"})
        report = await agent.eraser("test").erase("vantrell")
        assert report.counts["state_removed"] == 1 and report.counts["stream_entries"] == 1
        assert await agent.eraser().verify("Vantrell") == []
        await agent.checkpoints.rollback_to(cp.id)
        assert await agent.eraser().verify("Vantrell") == []
        assert [h.doc["content"] for h in await agent.search.search("build green")] == [
            "the build is green"
        ]
    finally:
        await agent.client.aclose()

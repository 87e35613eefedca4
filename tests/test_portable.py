"""The whole memory exported and imported (issue 53): a backup, and a way to move an agent.

An export once carried only daily entries and notes, and refused its own file once one
belief was superseded ("unknown field 'status'"). Now it carries every state key of the
namespace: importing it into an empty namespace restores the memory exactly, into one that
has some of it adds only what is missing, and a bad file changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from redis.asyncio import Redis

from aether.config import Settings
from aether.errors import InvalidOperationError
from aether.keys import Keyspace
from aether.memory.knowledge.graph import EntityIn, RelationIn
from aether.memory.portable import export_memory, import_memory, read_portable
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.longterm import LongTermMemory
from aether.operations import Parts
from aether.store.values import Value, read_values
from aether.testing.image import state_image
from tests.conftest import invoke_cli

IDENTITY = Path(__file__).resolve().parent.parent / "identity"


def _parts(settings: Settings, client: Redis, namespace: str) -> Parts:
    plain = settings.model_copy(
        update={
            "namespace": namespace,
            "embedding": settings.embedding.model_copy(update={"provider": "none"}),
        }
    )
    return Parts(plain, client, actor="test")


async def _ready(parts: Parts) -> Parts:
    await parts.ready()
    return parts


async def _live_agent(parts: Parts) -> None:
    """A little of every kind of memory an agent keeps."""
    await parts.identity.bootstrap(IDENTITY)
    await DailyLog(parts.memory).log("shipped release v3 to production", source="user")
    await LongTermMemory(parts.memory).add("The user prefers short answers")
    beliefs = parts.beliefs()
    await beliefs.remember("I live in Lisbon")
    await beliefs.remember("I live in Porto now")  # supersedes: history and links
    goal = await parts.goals.add("keep the fleet healthy")
    await parts.tasks.add("renew the TLS certificate", goal=goal.id)
    chats = ChatSessions(parts.memory)
    await chats.append("s1", "user", "what is the weather like in Porto?", title="weather")
    await chats.append("s1", "assistant", "mild and sunny")
    bob, carol = EntityIn("person", "Bob Stone"), EntityIn("person", "Carol Stone")
    await parts.graph.record([bob, carol], [RelationIn("sibling_of", bob.id, carol.id)])


async def _contents(client: Redis, keys: Keyspace) -> dict[str, Value]:
    """Every state key's content, the namespace's prefix taken off its name."""
    names = []
    async for raw in client.scan_iter(match=keys.every_key):
        if keys.is_state(raw.decode()):
            names.append(raw.decode())
    names.sort()
    values = await read_values(client, names)
    return {n[len(keys.prefix) :]: v for n, v in zip(names, values, strict=True)}


async def test_export_import_restores_the_whole_memory_exactly(
    settings: Settings, client: Redis, namespace: str, tmp_path: Path
) -> None:
    source = await _ready(_parts(settings, client, namespace))
    await _live_agent(source)
    first = tmp_path / "first.jsonl"
    count = await export_memory(source.memory, first)
    kinds = {json.loads(line)["key"].split(":")[0] for line in first.read_text().splitlines()[1:]}
    every = {"belief", "beliefs", "daily", "longterm", "tasks", "goals", "chat", "identity"}
    assert every | {"entity", "user", "system"} <= kinds, kinds
    target = _parts(settings, client, namespace + "moved")
    report = await import_memory(
        target.memory, target.checkpoints, read_portable(target.memory, first)
    )
    assert (report.read, report.created, report.merged) == (count, count, 0)
    second = tmp_path / "second.jsonl"
    await export_memory(target.memory, second)
    assert first.read_text() == second.read_text()
    assert await _contents(client, target.keys) == await _contents(client, source.keys)
    # the moved agent works: the supersede holds, the task rolls up, search finds the note
    active = [b["content"] for b in await target.beliefs().select("active")]
    assert active == ["I live in Porto now"]
    assert [t.title for t in await target.tasks.list("open")] == ["renew the TLS certificate"]
    again = await import_memory(
        target.memory, target.checkpoints, read_portable(target.memory, first)
    )
    assert (again.created, again.merged, again.checkpoint) == (0, 0, None)
    assert (await target.journal.verify()).ok  # an import is journaled: the chain holds


async def test_importing_into_a_namespace_with_some_of_it_adds_only_what_is_missing(
    settings: Settings, client: Redis, namespace: str, tmp_path: Path
) -> None:
    source = await _ready(_parts(settings, client, namespace))
    await _live_agent(source)
    path = tmp_path / "memory.jsonl"
    await export_memory(source.memory, path)
    target = _parts(settings, client, namespace + "some")
    await DailyLog(target.memory).log("a note only the target has", source="user")
    report = await import_memory(
        target.memory, target.checkpoints, read_portable(target.memory, path)
    )
    assert report.created and report.merged and report.checkpoint
    days = await DailyLog(target.memory).days()
    entries = [e["content"] for d in days for e in await DailyLog(target.memory).list_day(d)]
    assert sorted(entries) == sorted(
        [
            "a note only the target has",
            "shipped release v3 to production",
            "I live in Lisbon",
            "I live in Porto now",
        ]
    )
    counts = await client.zrange(target.keys.memory_counts(), 0, -1, withscores=True)
    # counted again from the documents, not merged (a recount leaves out the superseded one)
    assert dict(counts)[b"daily"] == len(entries) - 1
    # rolled back, the import is gone
    await target.checkpoints.rollback_to(report.checkpoint)
    assert [
        e["content"]
        for d in await DailyLog(target.memory).days()
        for e in await DailyLog(target.memory).list_day(d)
    ] == ["a note only the target has"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], "line 1: not JSON"),
        ([{"format": "aether-memory", "version": 3, "keys": 0}], "line 1: version"),
        (
            [
                {"format": "aether-memory", "version": 2, "keys": 2},
                {"key": "a:b", "type": "string", "value": "x"},
            ],
            "line 2",
        ),
        (
            [
                {"format": "aether-memory", "version": 2, "keys": 1},
                {"key": "lock:writes", "type": "hash", "value": {"kind": "erase"}},
            ],
            "not a key of an agent's memory",
        ),
        (
            [
                {"format": "aether-memory", "version": 2, "keys": 1},
                {"key": "journal", "type": "string", "value": "x"},
            ],
            "not a key of an agent's memory",
        ),
        (
            [
                {"format": "aether-memory", "version": 2, "keys": 1},
                {"key": "belief:x", "type": "zset", "value": [["a", "high"]]},
            ],
            "zset member",
        ),
        (
            [
                {"format": "aether-memory", "version": 2, "keys": 1},
                {"key": "belief:x", "type": "stream", "value": []},
            ],
            "line 2: type",
        ),
        (
            [
                {"format": "aether-memory", "version": 2, "keys": 1},
                {"key": "belief:x", "type": "json", "value": {}, "extra": 1},
            ],
            "line 2: extra",
        ),
        (
            [
                {"format": "aether-memory", "version": 2, "keys": 2},
                {"key": "memory:layout", "type": "string", "value": "1"},
            ],
            "header counts 2 keys",
        ),
        (
            [
                {"format": "aether-memory", "version": 2, "keys": 2},
                {"key": "memory:layout", "type": "string", "value": "1"},
                {"key": "memory:layout", "type": "string", "value": "2"},
            ],
            "also on line 2",
        ),
        (
            [
                {"format": "aether-memory", "version": 2, "keys": 1},
                {"key": "memory:layout", "type": "string", "value": {"base64": "!!"}},
            ],
            "bad base64",
        ),
    ],
)
async def test_a_bad_file_is_refused_whole_and_changes_nothing(
    settings: Settings,
    client: Redis,
    namespace: str,
    tmp_path: Path,
    lines: list[object],
    message: str,
) -> None:
    parts = _parts(settings, client, namespace)
    await DailyLog(parts.memory).log("already here", source="user")
    before = await state_image(client, parts.keys)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    with pytest.raises(InvalidOperationError, match=message):
        await import_memory(parts.memory, parts.checkpoints, read_portable(parts.memory, path))
    assert await state_image(client, parts.keys) == before


async def test_a_key_of_another_type_refuses_the_file(
    settings: Settings, client: Redis, namespace: str, tmp_path: Path
) -> None:
    parts = _parts(settings, client, namespace)
    entry = await DailyLog(parts.memory).log("already here", source="user")
    day = (await DailyLog(parts.memory).days())[0]
    before = await state_image(client, parts.keys)
    path = tmp_path / "clash.jsonl"
    lines = [
        {"format": "aether-memory", "version": 2, "keys": 2},
        {"key": "memory:layout", "type": "string", "value": "fine"},
        {"key": f"daily:{day}", "type": "string", "value": entry["id"]},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with pytest.raises(InvalidOperationError, match="is a list here and a string in the file"):
        await import_memory(parts.memory, parts.checkpoints, read_portable(parts.memory, path))
    assert await state_image(client, parts.keys) == before


def test_the_cli_moves_an_agent_after_a_supersede(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    assert invoke_cli(env, "remember", "I live in Lisbon").returncode == 0
    assert invoke_cli(env, "remember", "I live in Porto now").returncode == 0
    out = tmp_path / "e.jsonl"
    exported = invoke_cli(env, "memory", "export", str(out))
    assert exported.returncode == 0, exported.stderr
    moved = {**env, "AETHER_NAMESPACE": env["AETHER_NAMESPACE"] + "imp"}
    imported = invoke_cli(moved, "memory", "import", str(out), "--json")
    assert imported.returncode == 0, imported.stderr
    assert (
        json.loads(imported.stdout)["created"]
        == json.loads(out.read_text().splitlines()[0])["keys"]
    )
    again = tmp_path / "again.jsonl"
    assert invoke_cli(moved, "memory", "export", str(again)).returncode == 0
    assert again.read_text() == out.read_text()
    beliefs = json.loads(invoke_cli(moved, "belief", "list", "--json").stdout)
    assert [b["content"] for b in beliefs] == ["I live in Porto now"]
    skipped = invoke_cli(moved, "memory", "import", str(out), "--skip-invalid")
    assert skipped.returncode == 1 and "imported whole" in skipped.stderr

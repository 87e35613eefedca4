"""A read never writes: every read-only command and MCP tool leaves the state as it was.

The operator's natural sequence is: roll back, look around, then decide to undo. Each
read-only CLI command (a subprocess, as a person runs it) and each read-only MCP tool
(the official client over stdio) runs between a rollback and its undo; the image of
every journaled key and the journal itself stay byte-identical, and the undo succeeds.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from redis.asyncio import Redis

from aether.keys import Keyspace
from aether.operations import REGISTRY
from tests.conftest import dump_state, invoke_cli, run_cli

READ_ONLY_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("status",),
    ("questions",),
    ("config", "show"),
    ("checkpoint", "list"),
    ("checkpoint", "show", "{cp}"),
    ("checkpoint", "diff", "{cp}"),
    ("identity", "show"),
    ("identity", "prompt"),
    ("memory", "search", "kestrels"),
    ("memory", "search", "pelicans", "--kind", "daily"),
    ("memory", "day"),
    ("memory", "export", "{tmp}/export.jsonl"),
    ("memory", "episodes", "main"),
    ("memory", "longterm", "list"),
    ("memory", "chat", "list"),
    ("belief", "list"),
    ("belief", "stats"),
    ("belief", "reflect"),
    ("context", "preview", "what about the kestrels?"),
    ("graph", "find", "Lisbon"),
    ("graph", "expand", "User"),
    ("task", "list"),
    ("task", "list", "--status", "all"),
    ("task", "suggest"),
    ("goal", "list"),
    ("tools", "list"),
    ("ledger", "list"),
    ("ledger", "totals"),
    ("maintenance", "run", "--dry-run"),
    ("repo", "list"),
    ("memory", "indexes"),
)


READ_ONLY_TOOLS: dict[str, dict[str, object]] = {
    "memory_search": {"query": "kestrels"},
    "scratchpad_get": {"id": "plan"},
    "checkpoint_list": {},
    "identity_get": {},
    "context_assemble": {"query": "what about the kestrels?"},
    "task_list": {"status": "all"},
    "task_suggest": {},
    "goal_list": {},
    "graph_find": {"query": "Lisbon"},
    "graph_expand": {"query": "User"},
    "approvals_list": {"status": "all"},
    "belief_list": {"status": "all"},
    "belief_show": {"id": "01NOSUCHBELIEF"},  # not found: still a read
    "chat_list": {},
    "chat_messages": {"session": "main"},
    "ledger_list": {},
    "ledger_days": {"days": 3},
    "checkpoint_diff": {"id": "{cp}"},
    "checkpoint_rollbacks": {},
    "memory_day": {"day": "2026-01-02"},
    "memory_get": {"id": "01NOSUCHMEMORY"},  # not found: still a read
    "erase_log": {},
    "erase_verify": {"text": "kestrels"},
    "belief_reflect": {},
    "belief_stats": {},
    "checkpoint_show": {"id": "{cp}"},
    "identity_prompt": {},
    "memory_notes": {},
    "memory_episodes": {"session": "main"},
    "ledger_totals": {},
    "tools_list": {},
    "tools_show": {"name": "no_such_tool"},  # not found: still a read
    "journal_verify": {},
    "checkpoint_forks": {},
    "memory_indexes": {},
}
ANSWERS_NOT_FOUND = {"belief_show", "memory_get", "tools_show"}


def _ok(env: dict[str, str], *args: str) -> str:
    done = invoke_cli(env, *args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout.strip()


async def _journal(client: Redis, keys: Keyspace) -> list[object]:
    return list(await client.xrange(keys.journal()))


async def test_reads_between_a_rollback_and_its_undo_change_nothing(
    cli_env: dict[str, str], client: Redis, keys: Keyspace, tmp_path: Path
) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    run = asyncio.to_thread
    await run(_ok, env, "identity", "bootstrap")
    # the first memories arrive in one command, so the checkpoint's state is one that
    # no start-up work has touched yet (what the reads after the rollback find)
    lines = [
        {"kind": "daily", "content": "alpha kestrels nest by the river", "source": "user"},
        {"kind": "daily", "content": "the kestrels left at dawn", "source": "agent"},
        {"kind": "longterm", "content": "kestrels hover before they dive", "source": "agent"},
    ]
    path = tmp_path / "first.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    await run(_ok, env, "memory", "import", str(path))
    goal = await run(_ok, env, "goal", "add", "know the birds")
    await run(_ok, env, "task", "add", "ring the kestrels", "--goal", goal, "--due", "2026-01-02")
    checkpoint = await run(_ok, env, "checkpoint", "create", "--label", "before bravo")
    await run(_ok, env, "remember", "I live in Lisbon.")
    await run(_ok, env, "task", "add", "count the kestrels")
    await run(_ok, env, "memory", "log", "bravo pelicans")
    await run(_ok, env, "checkpoint", "rollback", checkpoint, "--yes")

    image, journal = await dump_state(client, keys), await _journal(client, keys)
    commands = [
        tuple(a.format(cp=checkpoint, tmp=tmp_path) for a in cmd) for cmd in READ_ONLY_COMMANDS
    ]
    # in this process, one after another (each command its own event loop, in a thread)
    results = [await run(invoke_cli, env, *args) for args in commands]
    for args, done in zip(commands, results, strict=True):
        expected = (1,) if args == ("status",) else (0, 2)  # status: 1 = no daemon
        assert done.returncode in expected, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, (args, done.stderr)

    params = StdioServerParameters(command=sys.executable, args=["-m", "aether", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = {t.name: t for t in (await session.list_tools()).tools}
        read_only = {name for name, t in listed.items() if t.annotations.read_only_hint}
        assert read_only == {name for name, op in REGISTRY.items() if op.read_only and op.mcp}
        assert read_only == set(READ_ONLY_TOOLS)  # a new read-only tool is tried here too
        for tool, arguments in READ_ONLY_TOOLS.items():
            given = {
                k: v.format(cp=checkpoint) if isinstance(v, str) else v
                for k, v in arguments.items()
            }
            result = await session.call_tool(tool, given)
            if tool in ANSWERS_NOT_FOUND:
                assert result.is_error and "not_found" in str(result.content), result.content
                continue
            assert not result.is_error, (tool, result.content)

    assert await _journal(client, keys) == journal
    assert await dump_state(client, keys) == image
    undone = await run(run_cli, env, "checkpoint", "undo", "--json")
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)
    found = json.loads(await run(_ok, env, "memory", "search", "pelicans", "--json"))
    assert any("bravo pelicans" in str(hit) for hit in found)


async def test_reads_in_a_fresh_namespace_bootstrap_nothing(
    cli_env: dict[str, str], client: Redis, keys: Keyspace, tmp_path: Path
) -> None:
    """No identity yet: a preview reads the identity folder, and nothing is written."""
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    preview = run_cli(env, "context", "preview", "NAS", "--max-tokens", "800")
    assert preview.returncode == 0, preview.stderr
    assert "== system ==" in preview.stdout
    commands = [c for c in READ_ONLY_COMMANDS if "{cp}" not in c]
    results = [
        await asyncio.to_thread(invoke_cli, env, *(a.format(tmp=tmp_path) for a in args))
        for args in commands
    ]
    for args, done in zip(commands, results, strict=True):
        assert "Traceback" not in done.stderr, (args, done.stderr)
    params = StdioServerParameters(command=sys.executable, args=["-m", "aether", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("context_assemble", {"query": "NAS"})
        assert not result.is_error, result.content
    assert await dump_state(client, keys) == {}
    assert await _journal(client, keys) == []
    # commands that are refused leave nothing either: no key at all, no index
    refused = [
        ("checkpoint", "undo"),
        ("approvals", "approve", "zzzz"),
        ("memory", "replace", "01NOSUCHMEMORY000000000000", "new text", "--yes"),
        ("belief", "show", "01NOSUCH"),
        ("erase", "***", "--yes"),
    ]
    for args in refused:
        done = await asyncio.to_thread(run_cli, env, *args)
        assert done.returncode == 1 and "Traceback" not in done.stderr, (args, done.stderr)
    assert [k async for k in client.scan_iter(match=keys.every_key)] == []
    assert keys.memory_index().encode() not in await client.execute_command("FT._LIST")
    # the first write makes the indexes, and what it wrote is found at once
    assert (await asyncio.to_thread(run_cli, env, "memory", "log", "kestrels nest")).returncode == 0
    assert keys.memory_index().encode() in await client.execute_command("FT._LIST")
    assert await client.exists(keys.memory_index_schema())
    found = await asyncio.to_thread(run_cli, env, "memory", "search", "kestrels", "--json")
    assert "kestrels nest" in found.stdout, found.stderr


def test_a_relative_identity_folder_bootstraps(cli_env: dict[str, str]) -> None:
    """``aether identity bootstrap identity`` from the repository, as the README says."""
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "aether", "identity", "bootstrap", "identity"],
        env=cli_env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "Core_Self.md" in done.stdout or "AETHER" in done.stdout, done.stdout

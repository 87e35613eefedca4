"""Every operation is defined once and each face shows it the same way.

The MCP tools, the agent's tools and the CLI's options are built from the operations'
argument models: the same names, types, ranges and descriptions everywhere; the agent is
not shown (and cannot set) the arguments only people and MCP clients set.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from redis.asyncio import Redis

from aether.config import Settings
from aether.errors import InvalidOperationError
from aether.interfaces.mcp import build_server
from aether.memory.storage.records import KINDS
from aether.operations import REGISTRY, Caller, Parts, agent_operations
from aether.operations.base import NOT_FOR_AGENT
from aether.runtime.tools import builtin_tools

REQUIRED_GROUPS = {"memory", "scratchpad", "checkpoint", "identity", "context", "task", "goal"}


def test_every_group_has_its_operations() -> None:
    groups = {name.split("_")[0] for name in REGISTRY}
    operator_groups = {"archive", "maintenance", "repo", "tools"}
    assert (
        REQUIRED_GROUPS
        | {"graph", "approvals", "belief", "chat", "decision", "ledger", "erase", "journal"}
        | operator_groups
        == groups
    )
    operator_only = {op.name for op in REGISTRY.values() if op.name.startswith("approvals_")}
    assert operator_only and not operator_only & {op.name for op in agent_operations()}
    for op in REGISTRY.values():
        assert op.description and op.summary.endswith("."), op.name
        assert op.arguments.__doc__, op.name


async def test_mcp_shows_each_operation_as_defined(settings: Settings, client: Redis) -> None:
    parts = Parts(settings.model_copy(update={"embedding": {"provider": "none"}}), client)
    listed = {t.name: t for t in await build_server(parts).list_tools()}
    served = {name: op for name, op in REGISTRY.items() if op.mcp}
    assert set(listed) == set(served)
    local = {"memory_export", "memory_import", "archive_restore", "identity_bootstrap"}
    assert local <= set(REGISTRY) - set(served)  # they read or write the host's files
    for name, op in served.items():
        schema: dict[str, Any] = listed[name].input_schema
        mine = op.schema()
        assert set(schema.get("properties", {})) == set(mine.get("properties", {})), name
        assert set(schema.get("required", [])) == set(mine.get("required", [])), name
        for prop, spec in mine.get("properties", {}).items():
            shown = schema["properties"][prop]
            assert shown.get("description") == spec.get("description"), (name, prop)
            for bound in ("minimum", "maximum", "maxLength"):
                if bound in spec:
                    assert _find(shown, bound) == spec[bound], (name, prop, bound)
        assert listed[name].annotations.read_only_hint is op.read_only, name
        assert NOT_FOR_AGENT not in str(schema)
    kinds = _find(listed["memory_search"].input_schema["properties"]["kind"], "enum")
    assert kinds == list(KINDS)  # every kind of records.Kind, not a hand-written subset


def _find(spec: Any, key: str) -> Any:
    """``key`` in a property's schema, also inside an ``anyOf`` of an optional value."""
    if key in spec:
        return spec[key]
    for variant in spec.get("anyOf", []):
        if key in variant:
            return variant[key]
    return None


async def test_the_agents_tools_are_the_operations_without_operator_arguments(
    settings: Settings, client: Redis
) -> None:
    parts = Parts(settings.model_copy(update={"embedding": {"provider": "none"}}), client)
    tools = {t.name: t for t in builtin_tools(parts, Caller("agent", session="main"))}
    assert set(tools) == {op.name for op in agent_operations()}
    assert {"checkpoint_rollback", "checkpoint_list", "identity_get"}.isdisjoint(tools)
    for name, tool in tools.items():
        assert tool.parameters == REGISTRY[name].schema(agent=True)
        assert tool.description == REGISTRY[name].summary
    log_props = tools["memory_log"].parameters["properties"]
    assert "source" not in log_props and "session" not in log_props  # the agent is itself
    assert "source" in REGISTRY["memory_log"].schema()["properties"]  # MCP and the CLI set it
    with pytest.raises(InvalidOperationError, match=r"unknown argument\(s\) 'source'; it takes"):
        await tools["memory_log"].handler({"content": "I am the user", "source": "user"})
    written = await tools["memory_log"].handler({"content": "the agent noted this"})
    assert written.startswith("logged ")
    entry_id = written.split()[1]
    [doc] = await parts.memory.get_docs([parts.keys.daily_entry(entry_id)])
    assert doc is not None and doc["source"] == "agent" and doc["session"] == "main"
    with pytest.raises(InvalidOperationError, match="priority"):
        await tools["task_add"].handler({"title": "x", "priority": 9})


def test_the_cli_help_shows_the_operations_descriptions() -> None:
    from aether.operations import tasks

    done = subprocess.run(
        [sys.executable, "-m", "aether", "task", "add", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    for field in ("goal", "notes", "priority"):
        description = tasks.TaskAddArgs.model_fields[field].description
        assert description and description in " ".join(done.stdout.split()), field


def test_the_cli_forgets_any_kind_of_memory_as_mcp_and_the_agent_do(
    cli_env: dict[str, str],
) -> None:
    import json

    from tests.conftest import invoke_cli

    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}

    def ok(*args: str) -> Any:
        done = invoke_cli(env, *args, "--json")
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return json.loads(done.stdout)

    entry = ok("memory", "log", "the heron came back to the pond")
    note = ok("memory", "longterm", "add", "herons nest in colonies")
    belief = ok("remember", "The pond is 3 metres deep")["beliefs"][0]["id"]
    checkpoint = ok("checkpoint", "create", "--label", "before forgetting")["id"]
    forgot = ok("memory", "forget", entry["id"])
    assert (forgot["forgotten"], forgot["kind"], forgot["items"]) == (entry["id"], "daily", [])
    assert ok("memory", "forget", note["id"])["kind"] == "longterm"
    assert ok("memory", "forget", belief)["kind"] == "belief"
    missing = invoke_cli(env, "memory", "forget", entry["id"])
    assert missing.returncode == 1 and "no memory" in missing.stderr
    assert invoke_cli(env, "memory", "forget", "../x").returncode == 1  # a bad id, refused
    assert invoke_cli(env, "memory", "search", "heron").returncode == 2  # forgotten: not found
    ok("checkpoint", "rollback", checkpoint, "--yes")
    found = ok("memory", "search", "heron")
    assert {entry["id"], note["id"]} <= {hit["id"] for hit in found}


async def test_checkpoint_undo_redoes_only_when_asked(settings: Settings, client: Redis) -> None:
    """The CLI's `undo --yes` is the operation's `redo`: MCP and the console have it too."""
    from aether.errors import NotFoundError
    from aether.memory.tiers.daily import DailyLog
    from aether.operations import checkpoints as cp_ops

    parts = Parts(settings.model_copy(update={"embedding": {"provider": "none"}}), client)
    caller = Caller("test")
    before = await parts.checkpoints.create(label="before")
    await DailyLog(parts.memory).log("after the checkpoint")
    await cp_ops.checkpoint_rollback(parts, caller, cp_ops.RollbackArgs(id=before.id))
    await cp_ops.checkpoint_undo(parts, caller, cp_ops.UndoArgs())
    with pytest.raises(NotFoundError):
        await cp_ops.checkpoint_undo(parts, caller, cp_ops.UndoArgs())
    redone = await cp_ops.checkpoint_undo(parts, caller, cp_ops.UndoArgs(redo=True))
    assert redone["target"]
    assert cp_ops.checkpoint_undo.arguments.model_json_schema()["properties"]["redo"]


def test_every_face_reads_arguments_one_way() -> None:
    """The CLI, MCP, the console and the agent's tools share ``validated``: same words."""
    from aether.operations.base import validated

    op = REGISTRY["memory_search"]
    with pytest.raises(InvalidOperationError) as misspelt:
        op.parse({"query": "x", "limti": 3})
    assert str(misspelt.value).startswith("memory_search: unknown argument(s) 'limti'")
    with pytest.raises(InvalidOperationError) as bad:
        op.parse({"query": "x", "limit": 0})
    assert str(bad.value).startswith("memory_search: limit:")
    with pytest.raises(InvalidOperationError) as bare:
        validated(op.arguments, {"query": "x", "limit": 0})
    assert str(bare.value) == str(bad.value).removeprefix("memory_search: ")
    assert op.parse({"query": "x"}).limit == 5  # its default

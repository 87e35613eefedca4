"""The MCP server through the official ``mcp`` client: stdio, and HTTP behind a token."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
import uvicorn
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from redis.asyncio import Redis

from aether.app import Aether
from aether.config import Settings
from aether.identity.bootstrap import default_identity_dir
from aether.interfaces.mcp import http_app
from aether.memory.storage.layer import MemoryLayer
from tests.conftest import free_port

TOOLS = {
    "belief_list",
    "decision_outcome",
    "decision_record",
    "belief_show",
    "chat_list",
    "chat_messages",
    "ledger_list",
    "ledger_days",
    "checkpoint_diff",
    "checkpoint_rollbacks",
    "checkpoint_undo",
    "memory_day",
    "memory_get",
    "approvals_list",
    "approvals_approve",
    "approvals_deny",
    "erase",
    "erase_log",
    "erase_verify",
    "erase_resume",
    "memory_search",
    "memory_log",
    "memory_remember",
    "memory_note",
    "memory_forget",
    "scratchpad_get",
    "scratchpad_set",
    "checkpoint_create",
    "checkpoint_list",
    "checkpoint_rollback",
    "identity_get",
    "context_assemble",
    "task_add",
    "task_list",
    "task_done",
    "task_edit",
    "task_reopen",
    "task_suggest",
    "goal_add",
    "goal_list",
    "goal_done",
    "graph_find",
    "graph_expand",
    # facts kept, replaced and forgotten as the user means (issue 63)
    "memory_replace",
    "graph_alias",
    # the operator's, added when every CLI command became a face over an operation
    "belief_forget",
    "belief_prune",
    "belief_reflect",
    "belief_stats",
    "chat_delete",
    "checkpoint_show",
    "checkpoint_prune",
    "archive_sync",
    "archive_snapshot",
    "identity_set",
    "identity_prompt",
    "memory_notes",
    "memory_note_delete",
    "memory_notes_flush",
    "memory_episodes",
    "memory_reindex",
    "scratchpad_delete",
    "ledger_totals",
    "tools_list",
    "tools_show",
    "maintenance_run",
    # audit and branch (issue 67)
    "journal_verify",
    "checkpoint_fork",
    "checkpoint_forks",
    # a large tag's own index (issue 65): what the operator sees of the search indexes
    "memory_indexes",
}


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error
    return dict(json.loads(result.content[0].text))


async def test_mcp_over_stdio_with_the_official_client(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "aether", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        _assert_tools_describe_themselves(listed.tools)
        call = session.call_tool
        too_many = _error(await call("memory_search", {"query": "x", "limit": 5000}))
        assert too_many["code"] == "invalid" and "limit" in too_many["message"]
        bad_kind = _error(await call("memory_search", {"query": "x", "kind": "gossip"}))
        assert bad_kind["code"] == "invalid" and "kind" in bad_kind["message"]
        typo = _error(await call("memory_search", {"query": "kestrels", "limt": 1}))
        assert typo["code"] == "invalid" and "'limt'" in typo["message"], typo
        assert "limit" in typo["message"]  # what it does take
        unknown = _error(await call("no_such_tool", {}))  # the contract's object, not text
        assert unknown["code"] == "not_found" and "memory_search" in unknown["message"]
        assert unknown["retryable"] is False
        logged = _data(
            await call(
                "memory_log", {"content": "The router password is in vault", "tags": ["ops"]}
            )
        )
        # one remember: the same fact three times is one belief, reinforced
        fact = {"content": "Operator prefers short answers"}
        learned = [_data(await call("memory_remember", fact))["beliefs"][0] for _ in range(3)]
        assert [b["action"] for b in learned] == ["created", "reinforced", "reinforced"]
        assert len({b["id"] for b in learned}) == 1
        belief = learned[0]["id"]
        kept = _data(await call("memory_note", {"content": "Runbook: restart the NAS via ipmi"}))
        found = _data(await call("memory_search", {"query": "router password", "limit": 3}))
        assert found["results"][0]["id"] == logged["id"]
        cp = _data(await call("checkpoint_create", {"label": "mcp test"}))
        assert _data(await call("checkpoint_list", {}))["checkpoints"][0]["id"] == cp["id"]
        assert _data(await call("memory_forget", {"id": kept["id"]}))["kind"] == "longterm"
        assert _data(await call("memory_forget", {"id": belief}))["kind"] == "belief"
        missing = _error(await call("memory_forget", {"id": kept["id"]}))
        assert missing == {"code": "not_found", "message": missing["message"], "retryable": False}
        found = _data(await call("memory_search", {"query": "short answers", "limit": 3}))
        assert belief not in {r["id"] for r in found["results"]}  # forgotten: never recalled
        rolled = _data(await call("checkpoint_rollback", {"id": cp["id"]}))
        assert rolled["entries_undone"] >= 1 and rolled["target"] == cp["id"]
        found = _data(await call("memory_search", {"query": "restart NAS ipmi", "limit": 3}))
        assert found["results"] and found["results"][0]["id"] == kept["id"]  # restored
        found = _data(await call("memory_search", {"query": "short answers", "limit": 10}))
        assert belief in {r["id"] for r in found["results"]}
        # too short to be an id: the question is malformed (invalid), not unanswered
        assert _error(await call("checkpoint_rollback", {"id": "zz"}))["code"] == "invalid"
        assert _error(await call("checkpoint_rollback", {"id": "ZZZZZZZZ"}))["code"] == "not_found"
        assert (
            _data(await call("scratchpad_set", {"id": "plan", "value": "x", "ttl_s": 60}))["ttl_s"]
            > 0
        )
        assert _data(await call("scratchpad_get", {"id": "plan"}))["value"] == "x"
        bad = _error(await call("scratchpad_set", {"id": "bad id!", "value": "x"}))
        assert bad["code"] == "invalid"
        await call("memory_log", {"content": "bootstrap identity first"})
        ctx = _data(await call("context_assemble", {"query": "router password", "max_tokens": 600}))
        assert ctx["tokens"] <= 600 and "vault" in json.dumps(ctx["messages"])
        identity = _data(await call("identity_get", {}))
        assert identity["agent"]["name"]


def _assert_tools_describe_themselves(tools: list[Any]) -> None:
    """What an LLM client sees: a summary line, a described and bounded schema per tool."""
    for tool in tools:
        summary = tool.description.splitlines()[0]
        assert 20 <= len(summary) <= 100 and summary.endswith("."), (tool.name, summary)
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), (tool.name, name)
    search = next(t for t in tools if t.name == "memory_search").input_schema["properties"]
    assert search["limit"]["minimum"] == 1 and search["limit"]["maximum"] == 1000
    kinds = next(option for option in search["kind"]["anyOf"] if "enum" in option)["enum"]
    assert kinds == ["daily", "longterm", "belief", "event", "decision", "failure"]
    assert "memory_remember" in next(t for t in tools if t.name == "memory_log").description


async def test_mcp_over_http_needs_the_bearer_token(settings: Settings, client: Redis) -> None:
    from mcp.client.streamable_http import streamable_http_client

    wired = Aether(
        settings.model_copy(update={"embedding": {"provider": "none"}}), client, actor="mcp"
    )
    await wired.identity.ensure(default_identity_dir())
    assert isinstance(wired.memory, MemoryLayer)
    port = free_port()
    config = uvicorn.Config(
        http_app(wired, "s3cret"),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient() as http:
            denied = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert denied.status_code == 401 and denied.json()["code"] == "unauthorized"
            assert "bearer token required" in denied.json()["message"]
            wrong = await http.post(url, json={}, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401 and "token is wrong" in wrong.json()["message"]
        import httpx2

        headers = {"Authorization": "Bearer s3cret"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http2,
            streamable_http_client(url, http_client=http2) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("identity_get", {})
            assert _data(result)["agent"]["name"]
    finally:
        server.should_exit = True
        await task


async def test_the_agent_reaches_an_mcp_server_over_streamable_http(
    settings: Settings, client: Redis, tmp_path: Any
) -> None:
    """aether's own HTTP MCP server, used as another agent's MCP server (``url`` +
    ``headers``): the link lists its tools, calls one, and a wrong token never connects."""
    from aether.errors import ToolUnavailableError
    from aether.runtime.tools.mcp_servers import ServerConfig, ServerLink

    wired = Aether(
        settings.model_copy(update={"embedding": {"provider": "none"}}), client, actor="mcp"
    )
    await wired.identity.ensure(default_identity_dir())
    port = free_port()
    config = uvicorn.Config(
        http_app(wired, "s3cret"), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    stop = asyncio.Event()
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        while not server.started:
            await asyncio.sleep(0.05)
        seen: list[str] = []

        async def listed(link: ServerLink) -> None:
            seen.extend(t.name for t in link.tools)

        good = ServerLink(
            "peer",
            ServerConfig(url=url, headers={"Authorization": "Bearer s3cret"}),
            tmp_path,
            listed,
        )
        running = asyncio.create_task(good.run(stop))
        for _ in range(200):
            if good.state == "ready":
                break
            await asyncio.sleep(0.05)
        assert good.state == "ready" and "identity_get" in seen
        answer = json.loads(await good.call("identity_get", {}, timeout_s=10))
        assert answer["agent"]["name"]
        assert good.status()["transport"] == "http"
        bad = ServerLink(
            "wrong", ServerConfig(url=url, headers={"Authorization": "Bearer nope"}), tmp_path
        )
        try:
            await bad.run(stop)
            raise AssertionError("a wrong token connected")
        except ToolUnavailableError:
            pass
        assert bad.state == "unavailable"
        try:
            await bad.call("identity_get", {}, timeout_s=5)
            raise AssertionError("an unavailable server answered")
        except ToolUnavailableError as e:
            assert str(e).startswith("unavailable: MCP server wrong")
        stop.set()
        await asyncio.wait_for(running, 10)
    finally:
        stop.set()
        server.should_exit = True
        await task

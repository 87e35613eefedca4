"""Adversarial MCP over HTTP: the bearer token, oversized bodies, hostile tool arguments."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from aether.app import Aether
from aether.identity.bootstrap import default_identity_dir
from aether.interfaces.mcp import MAX_BODY_BYTES, http_app
from aether.store.client import connect
from tests.adversarial.conftest import Agent, new_agent

TOKEN = "s3cret-token-for-tests"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def mcp_url(redis_home: Path) -> AsyncIterator[tuple[str, Agent]]:
    agent = new_agent(redis_home)
    client = await connect(agent.settings)
    wired = Aether(agent.settings, client, actor="mcp")
    await wired.identity.ensure(default_identity_dir())
    await wired.ready()  # as `aether up` does before serving
    port = _free_port()
    config = uvicorn.Config(
        http_app(wired, TOKEN), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", agent
    finally:
        server.should_exit = True
        await task
        await client.aclose()


BAD_AUTH: list[dict[str, str]] = [
    {},
    {"Authorization": ""},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer nope"},
    {"Authorization": f"Bearer {TOKEN}x"},
    {"Authorization": f"Bearer {TOKEN[:-1]}"},
    {"Authorization": f"bearer {TOKEN}"},
    {"Authorization": f"Bearer {TOKEN.upper()}"},
    {"Authorization": f"Bearer  {TOKEN}"},
    {"Authorization": f"Basic {TOKEN}"},
    {"Authorization": TOKEN},
    {"X-Token": TOKEN},
    {"Authorization": "Bearer " + "A" * 100_000},
]


@pytest.mark.parametrize("headers", BAD_AUTH, ids=lambda h: repr(h)[:40])
async def test_every_request_without_the_exact_token_gets_401(
    mcp_url: tuple[str, Agent], headers: dict[str, str]
) -> None:
    url, agent = mcp_url
    before = agent.image()
    async with httpx.AsyncClient(timeout=30) as http:
        reply = await http.post(url, json=PING, headers=headers, params={"token": TOKEN})
    assert reply.status_code in (401, 431), reply.text
    if reply.status_code == 401:
        refusal = reply.json()
        assert (refusal["code"], refusal["retryable"]) == ("unauthorized", False)
        wrong = (
            headers.get("Authorization", "").startswith("Bearer ")
            and headers["Authorization"][7:].strip()
        )
        said = "the bearer token is wrong" if wrong else "bearer token required"
        assert refusal["message"].startswith(said), refusal  # never what the token should be
    assert agent.image() == before


async def test_an_oversized_body_gets_413(mcp_url: tuple[str, Agent]) -> None:
    url, agent = mcp_url
    before = agent.image()
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * MAX_BODY_BYTES + b'"}'

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 65536):
            yield big[start : start + 65536]

    async with httpx.AsyncClient(timeout=60) as http:
        declared = await http.post(url, content=big, headers=auth)
        chunked = await http.post(url, content=chunks(), headers=auth)
    assert declared.status_code == 413 and declared.json()["code"] == "too_large"
    assert chunked.status_code == 413
    assert agent.image() == before


@pytest.mark.parametrize("length", ["-5", "abc", "99999999999999999999"])
async def test_a_lying_content_length_is_refused(mcp_url: tuple[str, Agent], length: str) -> None:
    url, agent = mcp_url
    before = agent.image()
    port = int(url.split(":")[2].split("/")[0])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n"
        "Connection: close\r\n\r\n{}".encode()
    )
    await writer.drain()
    status = (await asyncio.wait_for(reader.readline(), 10)).decode()
    writer.close()
    assert status.split()[1] in ("400", "413"), status
    assert agent.image() == before


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": 5}',
        b"\xff\xfe",
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "x"}',
    ],
)
async def test_malformed_json_rpc_is_refused_cleanly(
    mcp_url: tuple[str, Agent], body: bytes
) -> None:
    url, agent = mcp_url
    before = agent.image()
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    async with httpx.AsyncClient(timeout=30) as http:
        reply = await http.post(url, content=body, headers=headers)
    assert 400 <= reply.status_code < 500, (reply.status_code, reply.text)
    assert "Traceback" not in reply.text
    assert agent.image() == before


TOOL_CASES: list[tuple[str, dict[str, Any]]] = [
    ("memory_log", {"content": ""}),
    ("memory_log", {"content": "x", "tags": ["bad\ntag"]}),
    ("memory_log", {"content": "x", "session": "../etc"}),
    ("memory_forget", {"id": "../../etc/passwd"}),
    ("memory_forget", {"id": "01ZZZZZZZZZZZZZZZZZZZZZZZZ"}),
    ("scratchpad_set", {"id": "bad id", "value": "v"}),
    ("scratchpad_get", {"id": "x" * 500}),
    ("checkpoint_rollback", {"id": "01ZZZZZZZZ"}),
    ("memory_search", {"query": "*", "limit": -1}),
    ("memory_search", {"query": "x", "kind": "gossip"}),
    ("context_assemble", {"query": "x", "max_tokens": -5}),
    ("memory_search", {"query": 5}),
    ("memory_search", {"query": "x", "limit": "ten"}),
    ("memory_search", {}),
    ("memory_log", {"content": ["a", "b"]}),
    ("scratchpad_set", {"id": "p", "value": "v", "ttl_s": "soon"}),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("memory_search", {"query": 5}, "query"),
        ("memory_search", {}, "query"),
        ("memory_search", {"query": "x", "limit": "ten"}, "limit"),
    ],
)
async def test_argument_errors_follow_the_contract(
    mcp_url: tuple[str, Agent], tool: str, arguments: dict[str, Any], field: str
) -> None:
    url, _ = mcp_url
    result = await _call(url, tool, arguments)
    payload = json.loads(result.content[0].text)
    assert result.is_error and payload["code"] == "invalid" and payload["retryable"] is False
    assert payload["message"].startswith(f"{tool}: {field}:")
    assert "validation error" not in payload["message"]


async def _call(url: str, name: str, arguments: dict[str, Any]) -> Any:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http2,
        streamable_http_client(url, http_client=http2) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool(name, arguments)


@pytest.mark.parametrize(("tool", "arguments"), TOOL_CASES, ids=lambda c: str(c)[:40])
async def test_a_hostile_tool_call_is_an_error_result_and_changes_nothing(
    mcp_url: tuple[str, Agent], tool: str, arguments: dict[str, Any]
) -> None:
    url, agent = mcp_url
    before = agent.image()
    result = await _call(url, tool, arguments)
    assert result.is_error, result
    payload = json.loads(result.content[0].text)
    assert set(payload) == {"code", "message", "retryable"}
    assert "Traceback" not in payload["message"]
    assert agent.image() == before


@pytest.mark.parametrize("query", ["*", "@content:(x)", "'; DROP", "\\", "x" * 20_000])
async def test_search_syntax_through_mcp_is_plain_text(
    mcp_url: tuple[str, Agent], query: str
) -> None:
    url, agent = mcp_url
    before = agent.image()
    result = await _call(url, "memory_search", {"query": query})
    assert not result.is_error, result
    assert agent.image() == before

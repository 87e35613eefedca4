"""OpenTelemetry: memory operations and MCP tool calls as the GenAI conventions name them."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from redis.asyncio import Redis

from aether import telemetry
from aether.config import Settings
from aether.interfaces.mcp import build_server
from aether.operations import REGISTRY, Caller, Parts
from aether.operations import memory as memory_ops  # noqa: F401  (registers the group)
from aether.operations import tasks as task_ops  # noqa: F401
from tests.conftest import run_cli


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_provider(provider)
    yield exporter
    telemetry.use_provider(None)


def _parts(settings: Settings, client: Redis) -> Parts:
    return Parts(settings.model_copy(update={"embedding": {"provider": "none"}}), client)


async def _op(parts: Parts, name: str, **args: Any) -> Any:
    return await REGISTRY[name].invoke(parts, Caller("test"), args)


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_memory_operations_are_spans_named_by_the_conventions(
    settings: Settings, client: Redis, spans: InMemorySpanExporter
) -> None:
    parts = _parts(settings, client)
    await parts.ready()
    logged = await _op(parts, "memory_log", content="the invoice INV-7731 is paid")
    await _op(parts, "memory_log", content="the invoice INV-7732 is open")
    found = await _op(parts, "memory_search", query="invoice", limit=5)
    await _op(parts, "task_add", title="not a memory")  # no span: not a memory operation
    with pytest.raises(Exception, match="nosuch"):
        await _op(parts, "memory_get", id="nosuch")
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == [
        "create_memory",
        "create_memory",
        "search_memory",
        "search_memory",
    ]
    create, _, search, missing = finished
    assert create.kind == SpanKind.INTERNAL
    assert _attrs(create) == {
        "gen_ai.operation.name": "create_memory",
        "gen_ai.memory.store.id": settings.namespace,
        "gen_ai.memory.record.count": 1,
    }
    assert _attrs(search)["gen_ai.memory.record.count"] == len(found.results) == 2
    assert "gen_ai.memory.query.text" not in _attrs(search)  # content is opt-in
    assert "gen_ai.memory.records" not in _attrs(search)
    assert _attrs(missing)["error.type"] == "NotFoundError"
    assert _attrs(missing)["gen_ai.memory.record.id"] == "nosuch"
    assert not missing.status.is_ok
    assert logged["id"]


async def test_content_is_captured_only_when_asked(
    settings: Settings, client: Redis, spans: InMemorySpanExporter
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry.use_provider(provider, capture_content=True)
    parts = _parts(settings, client)
    await parts.ready()
    await _op(parts, "memory_log", content="Olga prefers tea")
    await _op(parts, "memory_search", query="what does Olga drink", limit=3)
    search = spans.get_finished_spans()[-1]
    assert _attrs(search)["gen_ai.memory.query.text"] == "what does Olga drink"
    records = json.loads(_attrs(search)["gen_ai.memory.records"])
    assert [r["content"] for r in records] == ["Olga prefers tea"]


async def test_mcp_tool_calls_are_server_spans_around_their_memory_span(
    settings: Settings, client: Redis, spans: InMemorySpanExporter
) -> None:
    parts = _parts(settings, client)
    await parts.ready()
    server = build_server(parts)
    await server.call_tool("memory_search", {"query": "anything", "limit": 3})
    await server.call_tool("no_such_tool", {})
    await server.call_tool("memory_search", {"query": "x", "limit": 5000})
    finished = spans.get_finished_spans()
    names = [s.name for s in finished]
    assert names == [
        "search_memory",
        "tools/call memory_search",
        "tools/call no_such_tool",
        "tools/call memory_search",
    ]
    inner, call, unknown, invalid = finished
    assert call.kind == SpanKind.SERVER
    assert _attrs(call) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "memory_search",
        "gen_ai.operation.name": "execute_tool",
    }
    assert inner.parent is not None and inner.parent.span_id == call.context.span_id
    assert _attrs(unknown)["error.type"] == "not_found"
    assert _attrs(invalid)["error.type"] == "invalid"


def test_off_by_default_no_tracer_and_no_exporter_is_loaded() -> None:
    """Off, a memory operation costs one flag check (redis-py itself imports the OTel API)."""
    code = (
        "import sys\n"
        "from aether import telemetry\n"
        "from aether.operations import base\n"
        "with telemetry.memory_span('search_memory', 'ns') as s:\n"
        "    s.count = 1\n"
        "assert not telemetry.enabled()\n"
        "loaded = [m for m in sys.modules if m.startswith('opentelemetry.sdk.trace')\n"
        "          or m.startswith('opentelemetry.exporter')]\n"
        "print(sorted(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        _Collector.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_the_cli_exports_over_otlp_when_enabled(cli_env: dict[str, str]) -> None:
    collector = HTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
        env = {**cli_env, "AETHER_OTEL__ENABLED": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        assert run_cli(env, "memory", "log", "exported over OTLP").returncode == 0
        traces = [body for path, body in _Collector.received if path == "/v1/traces"]
        assert traces and b"create_memory" in traces[0] and b"gen_ai.memory.store.id" in traces[0]
        _Collector.received.clear()
        assert run_cli(cli_env, "memory", "log", "not exported").returncode == 0
        assert _Collector.received == []  # off by default
    finally:
        collector.shutdown()

"""OpenTelemetry spans of memory operations, named as the GenAI semantic conventions say.

Off by default, and then free: :func:`memory_span` and :func:`tool_span` return a shared
no-op context and nothing of OpenTelemetry is imported. With the ``aether[otel]`` extra and
``AETHER_OTEL__ENABLED=1``, :func:`enable` installs a tracer provider that exports over
OTLP (the standard ``OTEL_EXPORTER_OTLP_*`` settings say where), and:

- each memory operation is a span named ``{gen_ai.operation.name}`` (``create_memory``,
  ``search_memory``, ``update_memory``, ``upsert_memory``, ``delete_memory``), kind
  ``INTERNAL`` (aether runs in the caller's process or its own daemon), with
  ``gen_ai.memory.store.id`` (the namespace), ``gen_ai.memory.record.id`` when the
  operation names one record, ``gen_ai.memory.record.count`` and, on failure,
  ``error.type``; the query text and the records only with
  ``AETHER_OTEL__CAPTURE_CONTENT=1`` (they may hold personal data);
- each MCP tool call is a ``SERVER`` span ``tools/call {tool}`` with ``mcp.method.name``,
  ``gen_ai.tool.name`` and ``gen_ai.operation.name`` ``execute_tool``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aether.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

    from aether.config import Settings

__all__ = ["SpanRecord", "enable", "enabled", "memory_span", "tool_span", "use_provider"]

SCOPE = "aether"


@dataclass
class _State:
    tracer: Tracer | None = None
    capture_content: bool = False


_STATE = _State()


@dataclass
class SpanRecord:
    """What an operation tells its span once it knows; ignored when tracing is off.

    Attributes:
        count: records returned, or the operation attempted to change.
        records: the records it named (put on the span only with content capture).
        error: an error result's code (an MCP call that answered with an error).
    """

    count: int | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def enabled() -> bool:
    """Whether spans are being recorded."""
    return _STATE.tracer is not None


def enable(settings: Settings) -> None:
    """Record spans as the settings say (``AETHER_OTEL__*``); once per process.

    Raises:
        ConfigError: tracing is asked for but the ``otel`` extra is not installed.
    """
    if not settings.otel.enabled or _STATE.tracer is not None:
        return
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as e:
        raise ConfigError(
            "AETHER_OTEL__ENABLED needs the otel extra: pip install 'aether[otel]'"
        ) from e
    provider = SdkProvider(resource=Resource.create({"service.name": settings.otel.service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    use_provider(provider, capture_content=settings.otel.capture_content)


def use_provider(provider: TracerProvider | None, *, capture_content: bool = False) -> None:
    """Record spans with this provider (``None``: stop recording); tests pass the SDK's."""
    _STATE.tracer = provider.get_tracer(SCOPE) if provider is not None else None
    _STATE.capture_content = capture_content


@contextlib.contextmanager
def memory_span(
    operation: str, store: str, record_id: str | None = None, query: str | None = None
) -> Iterator[SpanRecord]:
    """A span for one memory operation (``create_memory``, ``search_memory``...).

    Args:
        operation: the ``gen_ai.operation.name``.
        store: the namespace (``gen_ai.memory.store.id``).
        record_id: the record the operation names, if one.
        query: a search's text (recorded only when content capture is on).
    """
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.memory.store.id": store,
    }
    if record_id is not None:
        attributes["gen_ai.memory.record.id"] = record_id
    if query is not None and _STATE.capture_content:
        attributes["gen_ai.memory.query.text"] = query
    with _span(operation, "INTERNAL", attributes) as record:
        yield record


@contextlib.contextmanager
def tool_span(tool: str) -> Iterator[SpanRecord]:
    """A span for one MCP tool call, as the MCP server sees it.

    A call that answers with an error result sets the yielded record's ``error``.
    """
    attributes = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": tool,
        "gen_ai.operation.name": "execute_tool",
    }
    with _span(f"tools/call {tool}", "SERVER", attributes) as record:
        yield record


@contextlib.contextmanager
def _span(name: str, kind: str, attributes: dict[str, Any]) -> Iterator[SpanRecord]:
    """A span with these attributes; what the record holds when it ends goes on it too."""
    record = SpanRecord()
    tracer = _STATE.tracer
    if tracer is None:
        yield record
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode

    with tracer.start_as_current_span(
        name,
        kind=SpanKind[kind],
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield record
        except BaseException as e:
            span.set_attribute("error.type", type(e).__name__)
            span.set_status(Status(StatusCode.ERROR, str(e)[:200]))
            raise
        if record.count is not None:
            span.set_attribute("gen_ai.memory.record.count", record.count)
        if record.records and _STATE.capture_content:
            span.set_attribute("gen_ai.memory.records", json.dumps(record.records, default=str))
        if record.error is not None:
            span.set_attribute("error.type", record.error)
            span.set_status(Status(StatusCode.ERROR, record.error))

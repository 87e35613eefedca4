"""The MCP server: aether's memory, checkpoints, identity and context as MCP tools.

``aether mcp`` serves it over stdio; ``aether up`` also serves it over streamable HTTP
when ``AETHER_MCP__PORT`` is set, behind the bearer token ``AETHER_MCP__TOKEN``.

One error contract: a failing tool returns ``isError`` with one JSON object
``{"code", "message", "retryable"}`` as its text; codes: ``invalid``, ``not_found``,
``ambiguous``, ``busy`` (another admin action; retryable), ``checkpoint``, ``identity``, ``llm``,
``unavailable`` (Redis unreachable; retryable), ``error``.
"""

from __future__ import annotations

import functools
import hmac
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import structlog
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError

from aether import telemetry
from aether.app import Aether
from aether.config import Settings
from aether.errors import (
    AetherError,
    InvalidOperationError,
    describe,
    error_code,
)
from aether.interfaces.parameters import parameters
from aether.messages import TextModel
from aether.operations import REGISTRY, Caller, Operation, Parts
from aether.operations.base import problems
from aether.runtime.heap import settle_heap
from aether.runtime.llm import LLMClient

log = structlog.get_logger(__name__)
MAX_BODY_BYTES = 4 * 1024 * 1024


def error_payload(error: Exception) -> dict[str, Any]:
    """The contract's ``{code, message, retryable}`` for an error."""
    code, retryable = error_code(error)
    return {"code": code, "message": str(error), "retryable": retryable}


def _guarded(fn: Callable[..., Awaitable[object]]) -> Callable[..., Awaitable[Any]]:
    """``fn`` with aether's errors turned into the contract's error result.

    The SDK would prefix a raised error's text; an ``isError`` result is passed through
    as it is, so the client reads exactly ``{"code", "message", "retryable"}``.
    """

    @functools.wraps(fn)
    async def guarded(**kwargs: Any) -> Any:
        try:
            return await fn(**kwargs)
        except (AetherError, RedisConnectionError) as e:
            payload = json.dumps(error_payload(e))
        except Exception as e:  # a bug: one contract error for the client, traceback in the log
            log.error("tool failed unexpectedly", tool=fn.__name__, exc_info=True, file_only=True)
            payload = json.dumps({"code": "error", "message": describe(e), "retryable": False})
        return CallToolResult(content=[TextContent(type="text", text=payload)], is_error=True)

    return guarded


class AetherMCPServer(MCPServer[Any]):
    """The SDK's server, with argument errors in the contract's shape too.

    The SDK validates a call's arguments against the tool's schema before aether sees
    them and answers a mismatch with pydantic's text; here it becomes
    ``{"code": "invalid", "message": "limit: must be ...", "retryable": false}``.
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool; unknown tools and invalid arguments are contract errors."""
        with telemetry.tool_span(name) as span:
            result = await self._call_tool(name, arguments, context)
            if isinstance(result, CallToolResult) and result.is_error:
                span.error = _error_code(result)
            return result

    async def _call_tool(
        self, name: str, arguments: dict[str, Any], context: Any
    ) -> CallToolResult | InputRequiredResult:
        if self._tool_manager.get_tool(name) is None:
            known = ", ".join(sorted(t.name for t in self._tool_manager.list_tools()))
            return _contract_error("not_found", f"unknown tool {name[:70]!r}: tools are {known}")
        if name in REGISTRY:  # the one reading of arguments every face shares
            try:
                REGISTRY[name].parse(arguments or {})
            except InvalidOperationError as e:
                return _contract_error("invalid", str(e))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if not isinstance(e.__cause__, ValidationError):
                raise
            return _contract_error("invalid", f"{name}: {problems(e.__cause__)}")


def _error_code(result: CallToolResult) -> str:
    """The contract's ``code`` of an error result (``_OTHER`` when it holds none)."""
    try:
        first = result.content[0]
        code = json.loads(first.text)["code"] if isinstance(first, TextContent) else None
    except (IndexError, ValueError, KeyError, TypeError):
        code = None
    return str(code) if code else "_OTHER"


def _contract_error(code: str, message: str) -> CallToolResult:
    """An ``isError`` result holding the contract's ``{"code", "message", "retryable"}``."""
    payload = {"code": code, "message": message, "retryable": False}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload))], is_error=True
    )


def build_server(parts: Parts, llm: TextModel | None = None) -> MCPServer[Any]:
    """The MCP server: every operation (``aether.operations``) as a tool, over ``parts``.

    ``llm`` (when configured) extracts beliefs for ``memory_remember`` and ranks
    ``task_suggest``; without it the heuristics and rules do.
    """
    server: MCPServer[Any] = AetherMCPServer(
        name="aether",
        instructions="Long-term memory, tasks, checkpoints and identity of an aether agent.",
    )
    caller = Caller("mcp", llm=llm)
    for op in REGISTRY.values():
        if not op.mcp:  # it reads or writes files where the server runs
            continue
        hints = ToolAnnotations(read_only_hint=op.read_only)
        tool = _guarded(_tool_function(op, parts, caller))
        server.add_tool(tool, name=op.name, description=op.description, annotations=hints)
    return server


def _tool_function(
    op: Operation[Any, Any], parts: Parts, caller: Caller
) -> Callable[..., Awaitable[Any]]:
    """``op`` as the SDK reads a tool: keyword arguments, the schema from its signature."""

    async def call(**kwargs: Any) -> dict[str, Any]:
        result: dict[str, Any] = op.dump(await op(parts, caller, op.arguments(**kwargs)))
        return result

    call.__name__ = op.name
    call.__signature__ = _signature(op.arguments)  # type: ignore[attr-defined]
    return call


def _signature(model: type[BaseModel]) -> inspect.Signature:
    """Keyword parameters mirroring ``model``'s fields: types, bounds, defaults, descriptions."""
    return inspect.Signature(
        [
            inspect.Parameter(
                p.name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[p.constrained, Field(description=p.description)],
                default=inspect.Parameter.empty
                if p.required
                else model.model_fields[p.name].default,
            )
            for p in parameters(model)
        ],
        return_annotation=dict[str, Any],
    )


async def serve_stdio(settings: Settings) -> None:
    """Serve MCP on stdin/stdout until the client closes."""
    from aether.store.client import connect

    client = await connect(settings)
    llm = LLMClient.from_settings(settings)
    parts: Aether | None = None
    try:
        parts = Aether(settings, client, actor="mcp", embed_via_daemon=True)
        await parts.ready(migrate=False)  # a client that only reads changes nothing
        server = build_server(parts, llm)
        settle_heap()  # a long-lived server, as the daemon is
        await server.run_stdio_async()
    finally:
        if parts is not None:
            await parts.aclose()
        if llm is not None:
            await llm.aclose()
        await client.aclose()


class BearerAuth:
    """ASGI middleware: the bearer token on every HTTP request, and a bounded body.

    A request without ``Authorization: Bearer <token>`` gets 401; one whose body is over
    :data:`MAX_BODY_BYTES` gets 413 before the MCP app sees any of it.
    """

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Pass authorised, bounded requests on; answer others 401 or 413."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"")
        if not hmac.compare_digest(given, self.expected):
            why = (
                "the bearer token is wrong (AETHER_MCP__TOKEN of the daemon)"
                if given.startswith(b"Bearer ") and given[7:].strip()
                else "bearer token required: send Authorization: Bearer <AETHER_MCP__TOKEN>"
            )
            await _refuse(send, 401, "unauthorized", why)
            return
        declared = headers.get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > MAX_BODY_BYTES:
            await _refuse(send, 413, "too_large", f"request body over {MAX_BODY_BYTES} bytes")
            return
        first, size = [], 0
        while True:  # read the whole (bounded) body first: a chunked one has no length
            message = await receive()
            if message["type"] != "http.request":
                first.append(message)
                break
            size += len(message.get("body", b""))
            if size > MAX_BODY_BYTES:
                await _refuse(send, 413, "too_large", f"request body over {MAX_BODY_BYTES} bytes")
                return
            first.append(message)
            if not message.get("more_body"):
                break

        async def replay() -> Any:
            return first.pop(0) if first else await receive()

        await self.app(scope, replay, send)


async def _refuse(send: Any, status: int, code: str, message: str) -> None:
    body = json.dumps({"code": code, "message": message, "retryable": False}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def http_app(parts: Parts, token: str, llm: LLMClient | None = None) -> Any:
    """The streamable-HTTP ASGI app (at ``/mcp``) behind the bearer token."""
    return BearerAuth(build_server(parts, llm).streamable_http_app(), token)

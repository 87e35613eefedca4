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
from datetime import date
from typing import Annotated, Any

import structlog
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import Field, ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError

from aether.app import Aether
from aether.config import Settings
from aether.errors import (
    AetherError,
    NotFoundError,
    describe,
    error_code,
)
from aether.identity.bootstrap import default_identity_dir
from aether.ids import check_id
from aether.interfaces.ranges import LIMIT, MAX_TOKENS, TTL_S
from aether.memory.beliefs import RememberSummary
from aether.memory.daily import DailyLog
from aether.memory.longterm import LongTermMemory
from aether.memory.records import Kind
from aether.memory.scratchpad import Scratchpads
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
        if self._tool_manager.get_tool(name) is None:
            known = ", ".join(sorted(t.name for t in self._tool_manager.list_tools()))
            return _contract_error("not_found", f"unknown tool {name[:70]!r}: tools are {known}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if not isinstance(e.__cause__, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in e.__cause__.errors()[:5]
            )
            return _contract_error("invalid", f"{name}: {problems}")


def _contract_error(code: str, message: str) -> CallToolResult:
    """An ``isError`` result holding the contract's ``{"code", "message", "retryable"}``."""
    payload = {"code": code, "message": message, "retryable": False}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload))], is_error=True
    )


def build_server(agent: Aether, llm: LLMClient | None = None) -> MCPServer[Any]:
    """The MCP server with every aether tool, over one namespace's ``Aether``.

    ``llm`` (when configured) extracts beliefs and checks contradictions for
    ``memory_remember``; without it the heuristics do.
    """
    server: MCPServer[Any] = AetherMCPServer(
        name="aether",
        instructions="Long-term memory, checkpoints and identity of an aether agent.",
    )
    layer = agent.memory
    search = agent.search

    def tool(fn: Callable[..., Awaitable[object]]) -> None:
        description = inspect.cleandoc(fn.__doc__ or "")
        server.add_tool(_guarded(fn), name=fn.__name__, description=description)

    async def memory_search(
        query: Annotated[str, Field(description="What to look for, in plain words.")],
        limit: Annotated[int, LIMIT.field("How many results, most relevant first.")] = 5,
        kind: Annotated[Kind | None, Field(description="Only this kind of memory.")] = None,
    ) -> dict[str, Any]:
        """Find what the agent remembers about something, most relevant first.

        Searches daily log entries, long-term memories, beliefs, events, decisions and failures
        (full text, vectors and recency). Use it before answering from memory; an empty
        ``results`` means nothing relevant is stored.
        """

        async def work() -> dict[str, Any]:
            hits = await search.search(query, limit=limit, kind=kind)
            return {
                "results": [
                    {
                        "key": h.key,
                        "id": h.doc.get("id"),
                        "kind": h.doc.get("kind"),
                        "content": h.content,
                        "relevance": h.relevance,
                    }
                    for h in hits
                ]
            }

        return await work()

    async def memory_log(
        content: Annotated[str, Field(description="What happened, in a sentence or two.")],
        tags: Annotated[list[str] | None, Field(description="Short labels.")] = None,
        session: Annotated[str | None, Field(description="The conversation it belongs to.")] = None,
    ) -> dict[str, Any]:
        """Record something that happened today in the daily log.

        An event, a result, what the user said. For a lasting fact or preference use
        memory_remember instead; it is not checked against what is already known.
        """
        doc = await DailyLog(layer).log(content, source="agent", tags=tags, session=session)
        return {"id": doc["id"], "day": doc["day"]}

    async def memory_remember(
        content: Annotated[str, Field(description="The fact or preference, self-contained.")],
        tags: Annotated[list[str] | None, Field(description="Short labels.")] = None,
    ) -> RememberSummary:
        """Learn a lasting fact or preference, checked against what is already believed.

        The same fact again reinforces the belief held; a contradicting one ("the NAS has
        16 TB" after "12 TB") supersedes it, so the old value never reaches a context.
        Returns each belief's ``id`` and ``action`` (created, reinforced, superseded).
        """
        report = await agent.beliefs(llm).remember(content, source="agent", tags=tags)
        return report.summary()

    async def memory_note(
        content: Annotated[str, Field(description="The note, self-contained.")],
        tags: Annotated[list[str] | None, Field(description="Short labels.")] = None,
    ) -> dict[str, str]:
        """Keep a plain long-term note as written, with no belief checks.

        For a reference, a procedure or a summary. A fact that can change belongs in
        memory_remember. Returns its ``id``, which memory_forget takes.
        """
        doc = await LongTermMemory(layer).add(content, tags=tags)
        return {"id": doc["id"]}

    async def memory_forget(
        id: Annotated[str, Field(description="The memory's id, as memory_search returns it.")],
    ) -> dict[str, Any]:
        """Forget one belief, long-term note or daily entry that is wrong or unwanted.

        A belief is kept in its history but never recalled again; a note or an entry is
        deleted. Journaled: a checkpoint rollback brings it back.
        """

        async def work() -> dict[str, str]:
            check_id(id, "memory id")
            if await layer.client.exists(layer.keys.belief(id)):
                await agent.beliefs().forget(id)
                return {"forgotten": id, "kind": "belief"}
            if await layer.client.exists(layer.keys.longterm(id)):
                await LongTermMemory(layer).delete(id)
                return {"forgotten": id, "kind": "longterm"}
            doc = (await layer.get_docs([layer.keys.daily_entry(id)]))[0]
            if doc is None:
                raise NotFoundError(f"no memory {id!r}")

            removal = DailyLog(layer).removal(
                date.fromisoformat(doc["day"]), [doc], whole_day=False
            )
            await layer.store.apply(removal, "memory.forget")
            return {"forgotten": id, "kind": "daily"}

        return await work()

    async def scratchpad_get(
        id: Annotated[str, Field(description="The scratchpad's name.")],
    ) -> dict[str, Any]:
        """Read a scratchpad: short-lived working notes for the task at hand.

        ``value`` is null when it was never set or has expired.
        """
        return {"id": id, "value": await Scratchpads(layer).get(id)}

    async def scratchpad_set(
        id: Annotated[str, Field(description="The scratchpad's name.")],
        value: Annotated[str, Field(description="The notes to keep (replaces the old ones).")],
        ttl_s: Annotated[
            int | None, TTL_S.field("Seconds until it expires (default 3600).")
        ] = None,
    ) -> dict[str, Any]:
        """Write working notes that expire (default after one hour).

        Not part of memory: never searched, not rolled back.
        """
        await Scratchpads(layer).set(id, value, ttl_s)
        return {"id": id, "ttl_s": await layer.client.ttl(layer.keys.scratchpad(id))}

    async def checkpoint_create(
        label: Annotated[
            str, Field(max_length=200, description="A name to find it by later.")
        ] = "",
    ) -> dict[str, Any]:
        """Save the agent's whole state now (O(1)), before a risky change.

        checkpoint_rollback returns to it. Returns its ``id``.
        """
        cp = await agent.checkpoints.create(label=label, reason="mcp", actor="mcp")
        return cp.to_dict()

    async def checkpoint_list() -> dict[str, Any]:
        """The kept checkpoints, newest first, with their ids, labels and times."""
        return {"checkpoints": [c.to_dict() for c in await agent.checkpoints.list()]}

    async def checkpoint_rollback(
        id: Annotated[str, Field(description="A checkpoint id or a unique prefix (6+ chars).")],
    ) -> dict[str, Any]:
        """Return the agent's whole state to a checkpoint, atomically.

        Everything after it is undone. A checkpoint of the current state is taken first, so
        it is reversible (``aether checkpoint undo``).
        """
        result = await agent.checkpoints.rollback_to(id, actor="mcp")
        return result.to_dict()

    async def identity_get() -> dict[str, Any]:
        """Who the agent is and who its operator is.

        The agent's name, role and voice; the operator's name, time zone and preferences:
        the profiles the system prompt is built from.
        """
        identity = await agent.identity.load()
        return {"agent": identity.agent, "user": identity.user}

    async def context_assemble(
        query: Annotated[str, Field(description="The message the context is for.")],
        max_tokens: Annotated[int, MAX_TOKENS.field("The token budget of the context.")] = 2000,
        session: Annotated[
            str | None, Field(description="The conversation, for its recent messages.")
        ] = None,
    ) -> dict[str, Any]:
        """Build the messages aether would send a model for ``query``.

        Identity, relevant memories and beliefs, recent conversation, fitted into
        ``max_tokens``.
        """
        assembler = agent.context

        async def work() -> dict[str, Any]:
            return _context(await assembler.assemble(query, max_tokens, session=session))

        return await work()

    for fn in (
        memory_search,
        memory_log,
        memory_remember,
        memory_note,
        memory_forget,
        scratchpad_get,
        scratchpad_set,
        checkpoint_create,
        checkpoint_list,
        checkpoint_rollback,
        identity_get,
        context_assemble,
    ):
        tool(fn)
    return server


def _context(ctx: Any) -> dict[str, Any]:
    sections = [{"name": s.name, "tokens": s.tokens, "budget": s.budget} for s in ctx.sections()]
    return {"tokens": ctx.tokens, "sections": sections, "messages": ctx.messages()}


async def serve_stdio(settings: Settings) -> None:
    """Serve MCP on stdin/stdout until the client closes."""
    from aether.store.client import connect

    client = await connect(settings)
    llm = LLMClient.from_settings(settings)
    try:
        agent = Aether(settings, client, actor="mcp", embed_via_daemon=True)
        await agent.ready(migrate=False)  # a client that only reads changes nothing
        directory = settings.identity_dir or default_identity_dir()
        await agent.identity.ensure(directory, actor="mcp")  # first use: bootstrap
        await build_server(agent, llm).run_stdio_async()
    finally:
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
        if not hmac.compare_digest(headers.get(b"authorization", b""), self.expected):
            await _refuse(send, 401, "unauthorized", "bearer token required")
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


def http_app(agent: Aether, token: str, llm: LLMClient | None = None) -> Any:
    """The streamable-HTTP ASGI app (at ``/mcp``) behind the bearer token."""
    return BearerAuth(build_server(agent, llm).streamable_http_app(), token)

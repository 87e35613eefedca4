"""The overview and the conversation: how the daemon is doing, and talking to it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Route

from aether.interfaces.console.core import BadRequest, Console
from aether.interfaces.console.times import stamp
from aether.operations import approvals, chat, ledger
from aether.runtime.inbox import Inbox
from aether.runtime.status import daemon_status

__all__ = ["MAX_MESSAGE", "ROUTES"]

MAX_MESSAGE = 32_000


async def overview(request: Request) -> Response:
    """The daemon's state, what it runs, and the approvals waiting."""
    console = Console.of(request)
    parts = console.parts
    status = await daemon_status(parts.client, parts.keys, parts.settings)
    pending = await console.run(approvals.approvals_list, status="pending")
    runs = status["running"]
    llm = {
        "model": runs["model"]["name"] if runs["model"] else None,
        "where": runs["model"]["endpoint"] if runs["model"] else "",
        "source": runs["source"],
    }
    live = request.query_params.get("live") and request.headers.get("HX-Request")
    return await console.page(
        request,
        "_overview_live.html" if live else "overview.html",
        status=status,
        pending=pending.approvals,
        llm=llm,
    )


async def conversation(request: Request) -> Response:
    """A chat session's messages, each tool call with its approval."""
    console = Console.of(request)
    parts = console.parts
    sessions = (await console.run(chat.chat_list)).sessions
    session = console.query(request, "session", 128) or parts.settings.daemon.session
    messages = (await console.run(chat.chat_messages, session=session, limit=100)).messages
    last = max((float(m.get("timestamp") or 0) for m in messages), default=0.0)
    calls = []
    if any(m.get("tool_calls") for m in messages):  # only a thread with calls asks
        calls = (await console.run(ledger.ledger_list, kind="tool_call", limit=500)).entries
    details = [e.get("detail") or {} for e in calls]
    approvals_by_call = {  # by aether's own call id (a model's may repeat)
        str(d.get("call") or d["call_id"]): d["approval"]
        for d in details
        if (d.get("call") or d.get("call_id")) and d.get("approval")
    }
    status = await daemon_status(parts.client, parts.keys, parts.settings)
    return await console.page(
        request,
        "conversation.html",
        daemon=status["state"],
        sessions=sessions,
        session=session,
        messages=messages,
        last=last,
        approvals_by_call=approvals_by_call,
    )


async def conversation_stream(request: Request) -> Response:
    """New messages of a session as server-sent events (an hour per connection)."""
    console = Console.of(request)
    session = console.query(request, "session", 128) or console.parts.settings.daemon.session
    try:
        after = float(request.query_params.get("after", "0") or 0)
    except ValueError:
        raise BadRequest("after is epoch seconds") from None
    await console.run(chat.chat_messages, session=session, limit=1)  # a bad session: 400 now
    tz = await console.zone()
    fragment = console.templates.get_template("_message.html")

    async def events() -> AsyncIterator[str]:
        nonlocal after
        yield "retry: 2000\n\n"
        for _ in range(3600):  # an hour per connection; the browser reconnects
            if await request.is_disconnected():
                return
            found = await console.run(chat.chat_messages, session=session, after=after, limit=200)
            for m in found.messages:
                after = max(after, float(m.get("timestamp") or 0))
                html = fragment.render(
                    m=m, when=lambda at: stamp(at, tz, time.time()), approvals_by_call={}
                )
                yield "event: message\ndata: " + html.replace("\n", "\ndata: ") + "\n\n"
            await asyncio.sleep(1.0)

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


async def conversation_send(request: Request) -> Response:
    """A message to the daemon through its inbox, as ``aether send`` sends it."""
    console = Console.of(request)
    parts = console.parts
    data = await console.form(request)
    content = data.get("content", "").strip()
    session = data.get("session", "").strip() or parts.settings.daemon.session
    if not content:
        raise BadRequest("the message is empty")
    if len(content) > MAX_MESSAGE:
        raise BadRequest(f"the message is over {MAX_MESSAGE} characters")
    await console.run(chat.chat_messages, session=session, limit=1)  # validates the session id
    message_id = await Inbox(parts.client, parts.keys).send(content, session, sender="console")
    return HTMLResponse(
        console.templates.get_template("_sent.html").render(message_id=message_id, session=session)
    )


ROUTES = [
    Route("/", overview),
    Route("/conversation", conversation),
    Route("/conversation/stream", conversation_stream),
    Route("/conversation/send", conversation_send, methods=["POST"]),
]

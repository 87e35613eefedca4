"""The console's web app: pages over aether's operations, behind the token.

Why: docs/design.md, "The operator console". Every page reads through the operations
the CLI and MCP use (``aether.operations``), the daemon's status through
``aether.runtime.status`` and messages go through the inbox as ``aether send`` sends
them: the console holds no Redis call of its own. Templates escape every text;
responses carry a strict Content-Security-Policy (scripts and styles only from
``/static``, which the package serves).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import structlog
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from aether.app import Aether
from aether.errors import AetherError, describe, error_code
from aether.identity.prompt import operator_zone
from aether.interfaces.console.auth import COOKIE, Sessions
from aether.interfaces.console.pictures import bars, graph_picture
from aether.memory.storage.status import BELIEF_STATUSES
from aether.operations import (
    Caller,
    Operation,
    approvals,
    beliefs,
    chat,
    checkpoints,
    graph,
    identity,
    ledger,
    memory,
)
from aether.operations.base import problems
from aether.runtime.inbox import Inbox
from aether.runtime.status import daemon_status

__all__ = ["MAX_QUERY", "build_app"]

log = structlog.get_logger(__name__)
HERE = Path(__file__).parent
MAX_QUERY = 2000
MAX_MESSAGE = 32_000
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGES = [
    ("/", "Overview"),
    ("/conversation", "Conversation"),
    ("/memory", "Memory"),
    ("/beliefs", "Beliefs"),
    ("/graph", "Graph"),
    ("/checkpoints", "Checkpoints"),
    ("/ledger", "Ledger"),
    ("/identity", "Identity and context"),
    ("/approvals", "Approvals"),
]
OPEN_PATHS = ("/login", "/static/")


class BadRequest(Exception):
    """A request the console refuses (400) with a message for the page."""


def build_app(agent: Aether, token: str) -> Starlette:
    """The console over one namespace's parts, logged into with ``token``."""
    sessions = Sessions(token)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["pretty"] = to_json
    caller = Caller("console")

    async def zone() -> ZoneInfo:
        if agent.context.identity_dir is not None:  # a fresh namespace: the folder's
            return operator_zone(await agent.identity.current(agent.context.identity_dir))
        return operator_zone(await agent.identity.load())

    def when(at: object, tz: ZoneInfo) -> str:
        if not isinstance(at, int | float) or not at:
            return "-"
        return datetime.fromtimestamp(float(at), tz).strftime("%Y-%m-%d %H:%M:%S")

    async def run(op: Operation[Any, Any], **values: Any) -> Any:
        try:
            args = op.arguments.model_validate(values)
        except ValidationError as e:
            raise BadRequest(problems(e)) from None
        return await op(agent, caller, args)

    async def page(request: Request, name: str, **context: Any) -> Response:
        tz = await zone()
        return templates.TemplateResponse(
            request,
            name,
            {
                "pages": PAGES,
                "path": request.url.path,
                "csrf": request.state.csrf,
                "when": lambda at: when(at, tz),
                "zone": str(tz),
                **context,
            },
        )

    def query(request: Request, name: str, limit: int = MAX_QUERY) -> str:
        value = request.query_params.get(name, "")
        if len(value) > limit:
            raise BadRequest(f"{name} is over {limit} characters")
        return value.strip()

    async def form(request: Request) -> dict[str, str]:
        """The request's form fields (read once: the CSRF check may have read them)."""
        cached = getattr(request.state, "form", None)
        if cached is None:
            cached = {k: str(v) for k, v in (await request.form()).items()}
            request.state.form = cached
        return dict(cached)

    # ------------------------------------------------------------------ pages

    async def overview(request: Request) -> Response:
        status = await daemon_status(agent.client, agent.keys, agent.settings)
        pending = await run(approvals.approvals_list, status="pending")
        return await page(request, "overview.html", status=status, pending=pending.approvals)

    async def conversation(request: Request) -> Response:
        sessions = (await run(chat.chat_list)).sessions
        default = agent.settings.daemon.session
        session = query(request, "session", 128) or default
        messages = (await run(chat.chat_messages, session=session, limit=100)).messages
        last = max((float(m.get("timestamp") or 0) for m in messages), default=0.0)
        status = await daemon_status(agent.client, agent.keys, agent.settings)
        return await page(
            request,
            "conversation.html",
            daemon=status["state"],
            sessions=sessions,
            session=session,
            messages=messages,
            last=last,
        )

    async def conversation_stream(request: Request) -> Response:
        session = query(request, "session", 128) or agent.settings.daemon.session
        try:
            after = float(request.query_params.get("after", "0") or 0)
        except ValueError:
            raise BadRequest("after is epoch seconds") from None
        await run(chat.chat_messages, session=session, limit=1)  # a bad session: 400 now
        tz = await zone()
        fragment = templates.get_template("_message.html")

        async def events() -> AsyncIterator[str]:
            nonlocal after
            yield "retry: 2000\n\n"
            for _ in range(3600):  # an hour per connection; the browser reconnects
                if await request.is_disconnected():
                    return
                found = await run(chat.chat_messages, session=session, after=after, limit=200)
                for m in found.messages:
                    after = max(after, float(m.get("timestamp") or 0))
                    html = fragment.render(m=m, when=lambda at: when(at, tz))
                    yield "event: message\ndata: " + html.replace("\n", "\ndata: ") + "\n\n"
                await asyncio.sleep(1.0)

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    async def conversation_send(request: Request) -> Response:
        data = await form(request)
        content = data.get("content", "").strip()
        session = data.get("session", "").strip() or agent.settings.daemon.session
        if not content:
            raise BadRequest("the message is empty")
        if len(content) > MAX_MESSAGE:
            raise BadRequest(f"the message is over {MAX_MESSAGE} characters")
        await run(chat.chat_messages, session=session, limit=1)  # validates the session id
        message_id = await Inbox(agent.client, agent.keys).send(content, session)
        return HTMLResponse(
            templates.get_template("_sent.html").render(message_id=message_id, session=session)
        )

    async def memory_page(request: Request) -> Response:
        q = query(request, "q")
        kind = query(request, "kind", 32) or None
        source = query(request, "source", 32) or None
        tag = query(request, "tag", 64)
        since_day = query(request, "since", 10)
        day = query(request, "day", 10)
        found = None
        try:
            since = (
                datetime.combine(date.fromisoformat(since_day), datetime.min.time(), UTC)
                if since_day
                else None
            )
        except ValueError:
            raise BadRequest("since is YYYY-MM-DD") from None
        if q:
            found = await run(
                memory.memory_search,
                query=q,
                limit=20,
                kind=kind,
                source=source,
                tags=[tag] if tag else None,
                since=since.timestamp() if since else None,
                explain=True,
            )
        the_day = day or datetime.now(await zone()).date().isoformat()
        try:
            timeline = await run(memory.memory_day, day=date.fromisoformat(the_day))
        except ValueError:
            raise BadRequest("day is YYYY-MM-DD") from None
        cfg = agent.settings.memory
        template = "_results.html" if request.headers.get("HX-Request") else "memory.html"
        return await page(
            request,
            template,
            q=q,
            kind=kind or "",
            source=source or "",
            tag=tag,
            since=since_day,
            found=found.results if found is not None else None,
            day=the_day,
            timeline=timeline.entries,
            floor={"min_similarity": cfg.min_similarity, "min_coverage": cfg.min_coverage},
        )

    async def beliefs_page(request: Request) -> Response:
        status = query(request, "status", 16) or "active"
        listed = await run(beliefs.belief_list, status=status)
        return await page(
            request,
            "beliefs.html",
            status=status,
            statuses=[*BELIEF_STATUSES, "all"],
            beliefs=listed.beliefs,
            questions=listed.questions,
            half_life=agent.settings.beliefs.half_life_days,
        )

    async def belief_page(request: Request) -> Response:
        detail = await run(beliefs.belief_show, id=request.path_params["belief_id"])
        return await page(request, "belief.html", detail=detail)

    async def graph_page(request: Request) -> Response:
        q = query(request, "q", 200)
        related = None
        picture = None
        if q:
            related = await run(graph.graph_expand, query=q, depth=2, include_retired=True)
            found = await run(graph.graph_find, query=q)
            centre = [str(e["name"]) for e in found.entities]
            picture = graph_picture([dict(r) for r in related.relations], centre)
        return await page(
            request,
            "graph.html",
            q=q,
            relations=related.relations if related else None,
            picture=picture,
        )

    async def checkpoints_page(request: Request) -> Response:
        listed = await run(checkpoints.checkpoint_list)
        done = await run(checkpoints.checkpoint_rollbacks)
        return await page(
            request, "checkpoints.html", checkpoints=listed.checkpoints, rollbacks=done.rollbacks
        )

    async def checkpoint_diff(request: Request) -> Response:
        diff = await run(checkpoints.checkpoint_diff, id=request.path_params["checkpoint_id"])
        return await page(request, "diff.html", diff=diff)

    async def checkpoint_rollback(request: Request) -> Response:
        result = await run(checkpoints.checkpoint_rollback, id=request.path_params["checkpoint_id"])
        return await page(request, "done.html", title="Rolled back", result=result)

    async def undo_confirmation(request: Request) -> Response:
        done = (await run(checkpoints.checkpoint_rollbacks)).rollbacks
        if not done:
            raise BadRequest("nothing to undo: no rollback has been made")
        diff = await run(checkpoints.checkpoint_diff, id=done[0]["pre_checkpoint"])
        return await page(request, "diff.html", diff=diff, undo=done[0])

    async def checkpoint_undo(request: Request) -> Response:
        result = await run(checkpoints.checkpoint_undo)
        return await page(request, "done.html", title="Undone", result=result)

    async def ledger_page(request: Request) -> Response:
        days = (await run(ledger.ledger_days, days=14)).days
        entries = (await run(ledger.ledger_list, limit=100)).entries
        charts = {
            "tokens": bars([(d.day[5:], d.prompt_tokens + d.completion_tokens) for d in days]),
            "cost (USD)": bars([(d.day[5:], d.cost_usd) for d in days]),
            "tool calls": bars([(d.day[5:], d.tool_calls) for d in days]),
        }
        return await page(request, "ledger.html", days=days, charts=charts, entries=entries)

    async def identity_page(request: Request) -> Response:
        q = query(request, "q")
        bootstrapped = await agent.identity.is_bootstrapped()
        who = await run(identity.identity_get) if bootstrapped else None
        preview = await run(
            identity.context_assemble, query=q or "what matters now?", max_tokens=4000
        )
        return await page(
            request,
            "identity.html",
            who=who,
            q=q,
            preview=preview,
            folder=agent.context.identity_dir,
        )

    async def approvals_page(request: Request) -> Response:
        listed = await run(approvals.approvals_list, status="all", limit=100)
        return await page(request, "approvals.html", approvals=listed.approvals, now=time.time())

    async def approval_decide(request: Request) -> Response:
        data = await form(request)
        approval_id = request.path_params["approval_id"]
        if request.path_params["decision"] not in ("approve", "deny"):
            raise BadRequest("a decision is approve or deny")
        if request.path_params["decision"] == "approve":
            await run(approvals.approvals_approve, id=approval_id)
        else:
            await run(approvals.approvals_deny, id=approval_id, reason=data.get("reason", ""))
        return RedirectResponse("/approvals", status_code=303)

    # ------------------------------------------------------------------ login

    async def login_form(request: Request) -> Response:
        return templates.TemplateResponse(request, "login.html", {"error": None})

    async def login(request: Request) -> Response:
        data = await form(request)
        if not sessions.token_matches(data.get("token", "")):
            return templates.TemplateResponse(
                request, "login.html", {"error": "wrong token"}, status_code=401
            )
        sid, _ = sessions.open()
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, sid, httponly=True, samesite="strict", path="/")
        return response

    async def logout(request: Request) -> Response:
        sessions.close(request.cookies.get(COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # ------------------------------------------------------------------ guards

    class Guard(BaseHTTPMiddleware):
        """Auth, CSRF, security headers, and errors as pages."""

        async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
            response = await self._checked(request, call_next)
            response.headers["Content-Security-Policy"] = CSP
            response.headers["X-Content-Type-Options"] = "nosniff"
            response.headers["X-Frame-Options"] = "DENY"
            response.headers["Referrer-Policy"] = "no-referrer"
            response.headers.setdefault("Cache-Control", "no-store")
            return response

        async def _checked(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
            request.state.csrf = ""
            if not request.url.path.startswith(OPEN_PATHS):
                bearer = request.headers.get("Authorization", "")
                sid = request.cookies.get(COOKIE)
                csrf = sessions.csrf(sid)
                if bearer.startswith("Bearer ") and sessions.token_matches(bearer[7:]):
                    pass  # a script: no cookie, so no cross-site request can ride on it
                elif csrf is not None:
                    request.state.csrf = csrf
                    if request.method not in ("GET", "HEAD") and not Sessions.csrf_matches(
                        csrf, await _csrf_of(request)
                    ):
                        return _plain(403, "forbidden: the page's CSRF token is missing or wrong")
                else:
                    if request.method in ("GET", "HEAD") and "text/html" in request.headers.get(
                        "accept", ""
                    ):
                        return templates.TemplateResponse(
                            request, "login.html", {"error": None}, status_code=401
                        )
                    return _plain(401, "unauthorized: log in, or send Authorization: Bearer TOKEN")
            try:
                return await call_next(request)
            except BadRequest as e:
                return _plain(400, f"bad request: {e}")
            except AetherError as e:
                code, _ = error_code(e)
                status = {"not_found": 404, "invalid": 400, "busy": 409}.get(code, 500)
                return _plain(status, f"{code}: {e}")
            except Exception as e:
                log.error("console page failed", path=request.url.path, exc_info=True)
                return _plain(500, describe(e))

    async def _csrf_of(request: Request) -> str | None:
        header = request.headers.get("X-CSRF-Token")
        if header:
            return header
        if request.headers.get("content-type", "").startswith(
            ("application/x-www-form-urlencoded", "multipart/form-data")
        ):
            return (await form(request)).get("csrf") or None
        return None

    routes = [
        Route("/", overview),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/conversation", conversation),
        Route("/conversation/stream", conversation_stream),
        Route("/conversation/send", conversation_send, methods=["POST"]),
        Route("/memory", memory_page),
        Route("/beliefs", beliefs_page),
        Route("/beliefs/{belief_id}", belief_page),
        Route("/graph", graph_page),
        Route("/checkpoints", checkpoints_page),
        Route("/checkpoints/undo", undo_confirmation, methods=["GET"]),
        Route("/checkpoints/undo", checkpoint_undo, methods=["POST"]),
        Route("/checkpoints/{checkpoint_id}/diff", checkpoint_diff),
        Route("/checkpoints/{checkpoint_id}/rollback", checkpoint_rollback, methods=["POST"]),
        Route("/ledger", ledger_page),
        Route("/identity", identity_page),
        Route("/approvals", approvals_page),
        Route("/approvals/{approval_id}/{decision:str}", approval_decide, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(Guard)])


def _plain(status: int, message: str) -> Response:
    return Response(message + "\n", status_code=status, media_type="text/plain; charset=utf-8")


def to_json(value: BaseModel | dict[str, Any]) -> str:
    """Pretty JSON for a page's details block."""
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)

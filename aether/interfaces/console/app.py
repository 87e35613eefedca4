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
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import structlog
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from aether.app import Aether
from aether.errors import (
    AetherError,
    InvalidOperationError,
    NotFoundError,
    describe,
    error_code,
)
from aether.identity.prompt import operator_zone
from aether.interfaces.console.auth import COOKIE, Sessions
from aether.interfaces.console.changes import PAGE_SIZE, items_of, summary_of
from aether.interfaces.console.pictures import chart, graph_picture
from aether.interfaces.console.times import ago, stamp
from aether.memory.storage.status import BELIEF_STATUSES, Status
from aether.operations import (
    Caller,
    Operation,
    approvals,
    beliefs,
    chat,
    checkpoints,
    erasure,
    graph,
    identity,
    ledger,
    memory,
)
from aether.operations.base import validated
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
    ("/erasures", "Erasures"),
]
OPEN_PATHS = ("/login", "/static/")
HINTS = {
    "not_found": "It may have been deleted, rolled back, erased or pruned.",
    "invalid": "The address or a field of the form is malformed.",
    "ambiguous": "Give more characters of the id.",
    "busy": "Another rollback, undo or erasure is running; try again in a moment.",
    "nothing_to_do": "Nothing changed. The checkpoints page lists what can be rolled back.",
    "unavailable": "Redis cannot be reached: is the embedded server up (aether redis status)?",
    "error": "Unexpected: the console's log has the details.",
}


class BadRequest(Exception):
    """A request the console refuses (400) with a message for the page."""


class NothingToDo(Exception):
    """A well-formed request there is nothing for (409): e.g. an undo without a rollback."""


def build_app(agent: Aether, token: str) -> Starlette:
    """The console over one namespace's parts, logged into with ``token``."""
    sessions = Sessions(token)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["pretty"] = to_json
    templates.env.filters["erased"] = erasure.describe_counts  # as the CLI says it
    caller = Caller("console")

    async def zone() -> ZoneInfo:
        if agent.context.identity_dir is not None:  # a fresh namespace: the folder's
            return operator_zone(await agent.identity.current(agent.context.identity_dir))
        return operator_zone(await agent.identity.load())

    def when(at: object, tz: ZoneInfo) -> str:
        return stamp(at, tz, time.time())

    def relative(at: object) -> str:
        if isinstance(at, bool) or not isinstance(at, int | float) or not at:
            return "-"
        return ago(float(at), time.time())

    async def run(op: Operation[Any, Any], **values: Any) -> Any:
        try:
            args = validated(op.arguments, values)  # every face's reading of arguments
        except InvalidOperationError as e:
            raise BadRequest(str(e)) from None
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
                "ago": relative,
                "zone": str(tz),
                "namespace": agent.settings.namespace,
                "page_link": lambda number: _with_page(request, number),
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
        runs = status["running"]
        llm = {
            "model": runs["model"]["name"] if runs["model"] else None,
            "where": runs["model"]["endpoint"] if runs["model"] else "",
            "source": runs["source"],
        }
        live = request.query_params.get("live") and request.headers.get("HX-Request")
        return await page(
            request,
            "_overview_live.html" if live else "overview.html",
            status=status,
            pending=pending.approvals,
            llm=llm,
        )

    async def conversation(request: Request) -> Response:
        sessions = (await run(chat.chat_list)).sessions
        default = agent.settings.daemon.session
        session = query(request, "session", 128) or default
        messages = (await run(chat.chat_messages, session=session, limit=100)).messages
        last = max((float(m.get("timestamp") or 0) for m in messages), default=0.0)
        calls = []
        if any(m.get("tool_calls") for m in messages):  # only a thread with calls asks
            calls = (await run(ledger.ledger_list, kind="tool_call", limit=500)).entries
        details = [e.get("detail") or {} for e in calls]
        approvals_by_call = {  # by aether's own call id (a model's may repeat)
            str(d.get("call") or d["call_id"]): d["approval"]
            for d in details
            if (d.get("call") or d.get("call_id")) and d.get("approval")
        }
        status = await daemon_status(agent.client, agent.keys, agent.settings)
        return await page(
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
                    html = fragment.render(m=m, when=lambda at: when(at, tz), approvals_by_call={})
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
        message_id = await Inbox(agent.client, agent.keys).send(content, session, sender="console")
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
        number = page_number(request)
        try:
            timeline = await run(
                memory.memory_day,
                day=date.fromisoformat(the_day),
                offset=(number - 1) * TIMELINE_PAGE,
                limit=TIMELINE_PAGE,
            )
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
            pager=Pager(number, TIMELINE_PAGE, timeline.total),
            floor={"min_similarity": cfg.min_similarity, "min_coverage": cfg.min_coverage},
        )

    async def memory_item(request: Request) -> Response:
        found = await run(memory.memory_get, id=request.path_params["memory_id"])
        if found.kind == "belief":
            return RedirectResponse(f"/beliefs/{found.id}", status_code=303)
        return await page(request, "memory_item.html", item=found)

    async def beliefs_page(request: Request) -> Response:
        status = query(request, "status", 16) or Status.ACTIVE.value
        number = page_number(request)
        listed = await run(
            beliefs.belief_list,
            status=status,
            offset=(number - 1) * BELIEFS_PAGE,
            limit=BELIEFS_PAGE,
        )
        return await page(
            request,
            "beliefs.html",
            status=status,
            statuses=[*BELIEF_STATUSES, "all"],
            beliefs=listed.beliefs,
            pager=Pager(number, BELIEFS_PAGE, listed.total),
            questions=listed.questions[:QUESTIONS_SHOWN],
            more_questions=max(0, len(listed.questions) - QUESTIONS_SHOWN),
            half_life=agent.settings.beliefs.half_life_days,
        )

    async def belief_page(request: Request) -> Response:
        detail = await run(beliefs.belief_show, id=request.path_params["belief_id"])
        return await page(request, "belief.html", detail=detail)

    async def belief_replace(request: Request) -> Response:
        """Replace what a belief states with a new fact (``memory_replace`` by its id)."""
        belief_id = request.path_params["belief_id"]
        content = (await form(request)).get("content", "").strip()
        done = await run(memory.memory_replace, target=belief_id, content=content, source="user")
        return RedirectResponse(f"/beliefs/{done.belief}", status_code=303)

    async def graph_page(request: Request) -> Response:
        q = query(request, "q", 200)
        relations = None
        picture = None
        centre: list[str] = []
        if q:
            related = await run(graph.graph_expand, query=q, depth=2, include_retired=True)
            found = await run(graph.graph_find, query=q)
            centre = [str(e["name"]) for e in found.entities]
            if related.relations:  # nothing to draw: a hint, not an empty canvas
                relations = related.relations
                picture = graph_picture([dict(r) for r in relations], centre)
        return await page(
            request, "graph.html", q=q, relations=relations, picture=picture, found=centre
        )

    async def checkpoints_page(request: Request) -> Response:
        listed = await run(checkpoints.checkpoint_list)
        done = await run(checkpoints.checkpoint_rollbacks)
        return await page(
            request, "checkpoints.html", checkpoints=listed.checkpoints, rollbacks=done.rollbacks
        )

    def changes_view(diff: dict[str, Any], request: Request) -> dict[str, Any]:
        """The diff as items: a summary, one page of items, the pager."""
        items = items_of(diff["changes"], agent.keys)
        try:
            page_no = max(1, int(request.query_params.get("page", "1") or 1))
        except ValueError:
            raise BadRequest("page is a number") from None
        pages = max(1, -(-len(items) // PAGE_SIZE))
        page_no = min(page_no, pages)
        first = (page_no - 1) * PAGE_SIZE
        return {
            "summary": summary_of(items),
            "shown": items[first : first + PAGE_SIZE],
            "items_total": len(items),
            "first": first,
            "page_count": pages,
            "page_no": page_no,
        }

    confirm_view = {
        "verbs": {"created": "goes", "modified": "changes back", "deleted": "comes back"},
        "heads": ("now", "after"),
        "now_first": True,
    }
    done_view = {
        "verbs": {"created": "came back", "modified": "changed back", "deleted": "went"},
        "heads": ("before", "now"),
        "now_first": False,
    }

    async def checkpoint_diff(request: Request) -> Response:
        diff = await run(checkpoints.checkpoint_diff, id=request.path_params["checkpoint_id"])
        return await page(
            request, "diff.html", diff=diff, view=confirm_view, **changes_view(diff, request)
        )

    async def done_page(request: Request, title: str, result: dict[str, Any]) -> Response:
        """What a rollback or undo did: the changes since the checkpoint taken before it."""
        done = await run(checkpoints.checkpoint_diff, id=result["pre_checkpoint"])
        rollbacks = (await run(checkpoints.checkpoint_rollbacks)).rollbacks
        undoable = bool(rollbacks) and rollbacks[0].get("reason") != "undo"
        return await page(
            request,
            "done.html",
            title=title,
            result=result,
            undoable=undoable,
            view=done_view,
            **changes_view(done, request),
        )

    async def checkpoint_rollback(request: Request) -> Response:
        result = await run(checkpoints.checkpoint_rollback, id=request.path_params["checkpoint_id"])
        return await done_page(request, "Rolled back", result)

    async def undo_confirmation(request: Request) -> Response:
        done = (await run(checkpoints.checkpoint_rollbacks)).rollbacks
        if not done:
            raise NothingToDo("nothing to undo: no rollback has been made")
        diff = await run(checkpoints.checkpoint_diff, id=done[0]["pre_checkpoint"])
        return await page(
            request,
            "diff.html",
            diff=diff,
            undo=done[0],
            view=confirm_view,
            **changes_view(diff, request),
        )

    async def checkpoint_undo(request: Request) -> Response:
        try:
            result = await run(checkpoints.checkpoint_undo)
        except NotFoundError as e:  # no rollback, or it was undone already
            raise NothingToDo(str(e)) from e
        return await done_page(request, "Undone", result)

    async def ledger_page(request: Request) -> Response:
        call = query(request, "call", 128)
        try:
            before = float(query(request, "before", 32) or 0) or None
        except ValueError:
            raise BadRequest("before is epoch seconds") from None
        days = (await run(ledger.ledger_days, days=14)).days
        if call:
            entries = (await run(ledger.ledger_list, limit=1000)).entries
            entries = [e for e in entries if _call_of(e.get("detail") or {}) == call]
            older = None
        else:
            entries = (await run(ledger.ledger_list, limit=LEDGER_PAGE + 1, before=before)).entries
            older = entries[LEDGER_PAGE - 1]["at"] if len(entries) > LEDGER_PAGE else None
            entries = entries[:LEDGER_PAGE]
        priced = any(d.cost_usd for d in days)
        charts = {
            "tokens per day": chart(
                [(d.day[5:], d.prompt_tokens + d.completion_tokens) for d in days], "tokens"
            ),
            "tool calls per day": chart([(d.day[5:], d.tool_calls) for d in days], "calls"),
        }
        if priced:
            charts["cost per day"] = chart([(d.day[5:], d.cost_usd) for d in days], "USD")
        return await page(
            request,
            "ledger.html",
            days=days,
            charts=charts,
            entries=entries,
            priced=priced,
            call=call,
            older=older,
            newest=before is None,
            model=agent.settings.llm.model,
        )

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

    async def erasures_page(request: Request, verified: Any = None, text: str = "") -> Response:
        listed = await run(erasure.erase_log, limit=100)
        return await page(
            request,
            "erasures.html",
            erasures=listed.erasures,
            pending=listed.pending,
            verified=verified,
            text=text,
        )

    async def erasures_verify(request: Request) -> Response:
        """Look for a text everywhere (a POST: the text never lands in a URL or a log)."""
        text = (await form(request)).get("text", "").strip()
        if not text:
            raise BadRequest("give the text to look for")
        verified = await run(erasure.erase_verify, text=text)
        return await erasures_page(request, verified=verified, text=text)

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
                return failed(request, 400, "invalid", str(e))
            except NothingToDo as e:
                return failed(request, 409, "nothing_to_do", str(e))
            except AetherError as e:
                code, _ = error_code(e)
                status = {"not_found": 404, "invalid": 400, "ambiguous": 400, "busy": 409}.get(
                    code, 500
                )
                return failed(request, status, code, str(e))
            except Exception as e:
                log.error("console page failed", path=request.url.path, exc_info=True)
                return failed(request, 500, "error", describe(e))

    def failed(request: Request, status: int, code: str, message: str) -> Response:
        """An error: a page in the layout for a browser, one plain line for a script.

        The page needs nothing that may have failed (no Redis read): the zone is left out.
        """
        wants_page = request.method in ("GET", "HEAD") and "text/html" in request.headers.get(
            "accept", ""
        )
        if not wants_page or request.headers.get("HX-Request"):
            return _plain(status, f"{code}: {message}")
        return templates.TemplateResponse(
            request,
            "error.html",
            {
                "pages": PAGES,
                "path": request.url.path,
                "csrf": getattr(request.state, "csrf", ""),
                "zone": "",
                "namespace": agent.settings.namespace,
                "status": status,
                "code": code,
                "message": message,
                "hint": HINTS.get(code, ""),
                "back": "/" + request.url.path.strip("/").split("/", 1)[0],
            },
            status_code=status,
        )

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
        Route("/memory/{memory_id}", memory_item),
        Route("/beliefs", beliefs_page),
        Route("/beliefs/{belief_id}", belief_page),
        Route("/beliefs/{belief_id}/replace", belief_replace, methods=["POST"]),
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
        Route("/erasures", erasures_page, methods=["GET"]),
        Route("/erasures/verify", erasures_verify, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(Guard)])


TIMELINE_PAGE = 30
"""Entries per page of the memory timeline (a page stays within three screens)."""
BELIEFS_PAGE = 40
"""Beliefs per page."""
LEDGER_PAGE = 40
"""Ledger entries per page."""
QUESTIONS_SHOWN = 20
"""Open questions listed under the beliefs (the rest counted)."""


@dataclass(frozen=True)
class Pager:
    """Where a page is in a list: its number (from 1), its size, the list's length."""

    number: int
    size: int
    total: int

    @property
    def pages(self) -> int:
        """How many pages the list has (at least one)."""
        return max(1, -(-self.total // self.size))

    @property
    def first(self) -> int:
        """The position (from 1) of the page's first item."""
        return min(self.total, (self.number - 1) * self.size + 1)

    @property
    def last(self) -> int:
        """The position of the page's last item."""
        return min(self.total, self.number * self.size)


def page_number(request: Request) -> int:
    """The ``page`` query parameter (1 when absent).

    Raises:
        BadRequest: not a whole number from 1 to 1,000,000.
    """
    raw = request.query_params.get("page", "1").strip() or "1"
    if not raw.isdigit() or not 1 <= int(raw) <= 1_000_000:
        raise BadRequest("page is a whole number from 1")
    return int(raw)


def _with_page(request: Request, number: int) -> str:
    """This page's address with ``page`` set to ``number`` (its other parameters kept)."""
    from urllib.parse import urlencode

    params = {k: v for k, v in request.query_params.items() if k != "page"}
    return f"{request.url.path}?{urlencode({**params, 'page': number})}"


def _call_of(detail: dict[str, Any]) -> str | None:
    """The id a ledger entry's tool call is known by: aether's, or the model's in older ones."""
    found = detail.get("call") or detail.get("call_id")
    return str(found) if found else None


def _plain(status: int, message: str) -> Response:
    return Response(message + "\n", status_code=status, media_type="text/plain; charset=utf-8")


def to_json(value: BaseModel | dict[str, Any]) -> str:
    """Pretty JSON for a page's details block."""
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)

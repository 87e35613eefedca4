"""The operator's pages: the ledger, identity and context, approvals, erasures."""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from aether.interfaces.console.core import BadRequest, Console
from aether.interfaces.console.pictures import chart
from aether.operations import approvals, erasure, identity, ledger

__all__ = ["LEDGER_PAGE", "ROUTES"]

LEDGER_PAGE = 40
"""Ledger entries per page."""


def _call_of(detail: dict[str, Any]) -> str | None:
    """The id a ledger entry's tool call is known by: aether's, or the model's in older ones."""
    found = detail.get("call") or detail.get("call_id")
    return str(found) if found else None


async def ledger_page(request: Request) -> Response:
    """Two weeks of tokens, calls and cost drawn; the entries, paged (or one call's)."""
    console = Console.of(request)
    call = console.query(request, "call", 128)
    try:
        before = float(console.query(request, "before", 32) or 0) or None
    except ValueError:
        raise BadRequest("before is epoch seconds") from None
    days = (await console.run(ledger.ledger_days, days=14)).days
    if call:
        entries = (await console.run(ledger.ledger_list, limit=1000)).entries
        entries = [e for e in entries if _call_of(e.get("detail") or {}) == call]
        older = None
    else:
        listed = await console.run(ledger.ledger_list, limit=LEDGER_PAGE + 1, before=before)
        entries = listed.entries
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
    return await console.page(
        request,
        "ledger.html",
        days=days,
        charts=charts,
        entries=entries,
        priced=priced,
        call=call,
        older=older,
        newest=before is None,
        model=console.parts.settings.llm.model,
    )


async def identity_page(request: Request) -> Response:
    """Who the agent is, and the context it would be sent for a query."""
    console = Console.of(request)
    parts = console.parts
    q = console.query(request, "q")
    bootstrapped = await parts.identity.is_bootstrapped()
    who = await console.run(identity.identity_get) if bootstrapped else None
    preview = await console.run(
        identity.context_assemble, query=q or "what matters now?", max_tokens=4000
    )
    return await console.page(
        request,
        "identity.html",
        who=who,
        q=q,
        preview=preview,
        folder=parts.assembler.identity_dir,
    )


async def approvals_page(request: Request) -> Response:
    """Every approval request, newest first."""
    console = Console.of(request)
    listed = await console.run(approvals.approvals_list, status="all", limit=100)
    return await console.page(
        request, "approvals.html", approvals=listed.approvals, now=time.time()
    )


async def approval_decide(request: Request) -> Response:
    """Approve or deny a pending tool call."""
    console = Console.of(request)
    data = await console.form(request)
    approval_id = request.path_params["approval_id"]
    if request.path_params["decision"] not in ("approve", "deny"):
        raise BadRequest("a decision is approve or deny")
    if request.path_params["decision"] == "approve":
        await console.run(approvals.approvals_approve, id=approval_id)
    else:
        reason = data.get("reason", "")
        await console.run(approvals.approvals_deny, id=approval_id, reason=reason)
    return RedirectResponse("/approvals", status_code=303)


async def erasures_page(request: Request, verified: Any = None, text: str = "") -> Response:
    """The erasures made and pending, and a search for a text everywhere."""
    console = Console.of(request)
    listed = await console.run(erasure.erase_log, limit=100)
    return await console.page(
        request,
        "erasures.html",
        erasures=listed.erasures,
        pending=listed.pending,
        verified=verified,
        text=text,
    )


async def erasures_verify(request: Request) -> Response:
    """Look for a text everywhere (a POST: the text never lands in a URL or a log)."""
    console = Console.of(request)
    text = (await console.form(request)).get("text", "").strip()
    if not text:
        raise BadRequest("give the text to look for")
    verified = await console.run(erasure.erase_verify, text=text)
    return await erasures_page(request, verified=verified, text=text)


ROUTES = [
    Route("/ledger", ledger_page),
    Route("/identity", identity_page),
    Route("/approvals", approvals_page),
    Route("/approvals/{approval_id}/{decision:str}", approval_decide, methods=["POST"]),
    Route("/erasures", erasures_page, methods=["GET"]),
    Route("/erasures/verify", erasures_verify, methods=["POST"]),
]

"""The memory pages: search and the day's timeline, one memory, beliefs, the graph."""

from __future__ import annotations

from datetime import UTC, date, datetime

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from aether.interfaces.console.core import BadRequest, Console, Pager, page_number
from aether.interfaces.console.pictures import graph_picture
from aether.memory.storage.status import BELIEF_STATUSES, Status
from aether.operations import beliefs, graph, memory

__all__ = ["BELIEFS_PAGE", "QUESTIONS_SHOWN", "ROUTES", "TIMELINE_PAGE"]

TIMELINE_PAGE = 30
"""Entries per page of the memory timeline (a page stays within three screens)."""
BELIEFS_PAGE = 40
"""Beliefs per page."""
QUESTIONS_SHOWN = 20
"""Open questions listed under the beliefs (the rest counted)."""


def _day(text: str, name: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"{name} is YYYY-MM-DD") from None


async def memory_page(request: Request) -> Response:
    """A search with its filters and signals, and a day's timeline, paged."""
    console = Console.of(request)
    q = console.query(request, "q")
    kind = console.query(request, "kind", 32) or None
    source = console.query(request, "source", 32) or None
    tag = console.query(request, "tag", 64)
    since_day = console.query(request, "since", 10)
    since = (
        datetime.combine(_day(since_day, "since"), datetime.min.time(), UTC) if since_day else None
    )
    found = None
    if q:
        found = await console.run(
            memory.memory_search,
            query=q,
            limit=20,
            kind=kind,
            source=source,
            tags=[tag] if tag else None,
            since=since.timestamp() if since else None,
            explain=True,
        )
    the_day = (
        console.query(request, "day", 10) or datetime.now(await console.zone()).date().isoformat()
    )
    number = page_number(request)
    timeline = await console.run(
        memory.memory_day,
        day=_day(the_day, "day"),
        offset=(number - 1) * TIMELINE_PAGE,
        limit=TIMELINE_PAGE,
    )
    cfg = console.parts.settings.memory
    template = "_results.html" if request.headers.get("HX-Request") else "memory.html"
    return await console.page(
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
    """One memory (a belief has its own page)."""
    console = Console.of(request)
    found = await console.run(memory.memory_get, id=request.path_params["memory_id"])
    if found.kind == "belief":
        return RedirectResponse(f"/beliefs/{found.id}", status_code=303)
    return await console.page(request, "memory_item.html", item=found)


async def beliefs_page(request: Request) -> Response:
    """Beliefs of a status, paged, and the open questions."""
    console = Console.of(request)
    status = console.query(request, "status", 16) or Status.ACTIVE.value
    number = page_number(request)
    listed = await console.run(
        beliefs.belief_list,
        status=status,
        offset=(number - 1) * BELIEFS_PAGE,
        limit=BELIEFS_PAGE,
    )
    return await console.page(
        request,
        "beliefs.html",
        status=status,
        statuses=[*BELIEF_STATUSES, "all"],
        beliefs=listed.beliefs,
        pager=Pager(number, BELIEFS_PAGE, listed.total),
        questions=listed.questions[:QUESTIONS_SHOWN],
        more_questions=max(0, len(listed.questions) - QUESTIONS_SHOWN),
        half_life=console.parts.settings.beliefs.half_life_days,
    )


async def belief_page(request: Request) -> Response:
    """One belief, its history and its chain."""
    console = Console.of(request)
    detail = await console.run(beliefs.belief_show, id=request.path_params["belief_id"])
    return await console.page(request, "belief.html", detail=detail)


async def belief_replace(request: Request) -> Response:
    """Replace what a belief states with a new fact (``memory_replace`` by its id)."""
    console = Console.of(request)
    belief_id = request.path_params["belief_id"]
    content = (await console.form(request)).get("content", "").strip()
    done = await console.run(
        memory.memory_replace, target=belief_id, content=content, source="user"
    )
    return RedirectResponse(f"/beliefs/{done.belief}", status_code=303)


async def graph_page(request: Request) -> Response:
    """The relations around the entities a query finds, drawn."""
    console = Console.of(request)
    q = console.query(request, "q", 200)
    relations = None
    picture = None
    centre: list[str] = []
    if q:
        related = await console.run(graph.graph_expand, query=q, depth=2, include_retired=True)
        found = await console.run(graph.graph_find, query=q)
        centre = [str(e["name"]) for e in found.entities]
        if related.relations:  # nothing to draw: a hint, not an empty canvas
            relations = related.relations
            picture = graph_picture([dict(r) for r in relations], centre)
    return await console.page(
        request, "graph.html", q=q, relations=relations, picture=picture, found=centre
    )


ROUTES = [
    Route("/memory", memory_page),
    Route("/memory/{memory_id}", memory_item),
    Route("/beliefs", beliefs_page),
    Route("/beliefs/{belief_id}", belief_page),
    Route("/beliefs/{belief_id}/replace", belief_replace, methods=["POST"]),
    Route("/graph", graph_page),
]

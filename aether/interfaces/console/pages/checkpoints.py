"""The checkpoint pages: the list, a diff, a rollback and its undo, each change shown."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from aether.errors import NotFoundError
from aether.interfaces.console.changes import PAGE_SIZE, items_of, summary_of
from aether.interfaces.console.core import BadRequest, Console, NothingToDo
from aether.keys import Keyspace
from aether.operations import checkpoints

__all__ = ["ROUTES"]

CONFIRM_VIEW = {
    "verbs": {"created": "goes", "modified": "changes back", "deleted": "comes back"},
    "heads": ("now", "after"),
    "now_first": True,
}
"""How a diff reads before a rollback: what it would do."""
DONE_VIEW = {
    "verbs": {"created": "came back", "modified": "changed back", "deleted": "went"},
    "heads": ("before", "now"),
    "now_first": False,
}
"""How a diff reads after a rollback or undo: what it did."""


def changes_view(diff: dict[str, Any], request: Request, keys: Keyspace) -> dict[str, Any]:
    """The diff as items: a summary, one page of items, the pager."""
    items = items_of(diff["changes"], keys)
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


async def checkpoints_page(request: Request) -> Response:
    """The kept checkpoints and the rollbacks made."""
    console = Console.of(request)
    listed = await console.run(checkpoints.checkpoint_list)
    done = await console.run(checkpoints.checkpoint_rollbacks)
    forks = await console.run(checkpoints.checkpoint_forks)
    return await console.page(
        request,
        "checkpoints.html",
        checkpoints=listed.checkpoints,
        rollbacks=done.rollbacks,
        forks=forks["forks"],
        source=forks["source"],
    )


async def checkpoint_diff(request: Request) -> Response:
    """What a rollback to a checkpoint would change: the confirmation."""
    console = Console.of(request)
    diff = await console.run(checkpoints.checkpoint_diff, id=request.path_params["checkpoint_id"])
    view = changes_view(diff, request, console.parts.keys)
    return await console.page(request, "diff.html", diff=diff, view=CONFIRM_VIEW, **view)


async def _done_page(request: Request, title: str, result: dict[str, Any]) -> Response:
    """What a rollback or undo did: the changes since the checkpoint taken before it."""
    console = Console.of(request)
    done = await console.run(checkpoints.checkpoint_diff, id=result["pre_checkpoint"])
    rollbacks = (await console.run(checkpoints.checkpoint_rollbacks)).rollbacks
    undoable = bool(rollbacks) and rollbacks[0].get("reason") != "undo"
    return await console.page(
        request,
        "done.html",
        title=title,
        result=result,
        undoable=undoable,
        view=DONE_VIEW,
        **changes_view(done, request, console.parts.keys),
    )


async def checkpoint_rollback(request: Request) -> Response:
    """Roll back to a checkpoint, then show what changed."""
    console = Console.of(request)
    checkpoint_id = request.path_params["checkpoint_id"]
    result = await console.run(checkpoints.checkpoint_rollback, id=checkpoint_id)
    return await _done_page(request, "Rolled back", result)


async def undo_confirmation(request: Request) -> Response:
    """What undoing the last rollback would change (409 when there is none)."""
    console = Console.of(request)
    done = (await console.run(checkpoints.checkpoint_rollbacks)).rollbacks
    if not done:
        raise NothingToDo("nothing to undo: no rollback has been made")
    diff = await console.run(checkpoints.checkpoint_diff, id=done[0]["pre_checkpoint"])
    return await console.page(
        request,
        "diff.html",
        diff=diff,
        undo=done[0],
        view=CONFIRM_VIEW,
        **changes_view(diff, request, console.parts.keys),
    )


async def checkpoint_undo(request: Request) -> Response:
    """Undo the last rollback, then show what changed."""
    console = Console.of(request)
    try:
        result = await console.run(checkpoints.checkpoint_undo)
    except NotFoundError as e:  # no rollback, or it was undone already
        raise NothingToDo(str(e)) from e
    return await _done_page(request, "Undone", result)


ROUTES = [
    Route("/checkpoints", checkpoints_page),
    Route("/checkpoints/undo", undo_confirmation, methods=["GET"]),
    Route("/checkpoints/undo", checkpoint_undo, methods=["POST"]),
    Route("/checkpoints/{checkpoint_id}/diff", checkpoint_diff),
    Route("/checkpoints/{checkpoint_id}/rollback", checkpoint_rollback, methods=["POST"]),
]

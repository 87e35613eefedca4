"""The console object every page reads through: the namespace's parts, templates, helpers.

One :class:`Console` is made per app and kept on it (``app.state.console``); a page's
handler finds it with :meth:`Console.of`. Every page reads through the operations the
CLI and MCP use (:meth:`Console.run`): the console holds no Redis call of its own.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from aether.app import Aether
from aether.errors import InvalidOperationError
from aether.identity.prompt import operator_zone
from aether.interfaces.console.auth import Sessions
from aether.interfaces.console.times import ago, stamp
from aether.memory.knowledge.valid_time import window_text
from aether.operations import Caller, Operation, erasure
from aether.operations.base import validated

__all__ = [
    "HERE",
    "MAX_QUERY",
    "PAGES",
    "BadRequest",
    "Console",
    "NothingToDo",
    "Pager",
    "page_number",
    "to_json",
]

HERE = Path(__file__).parent
MAX_QUERY = 2000
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


class BadRequest(Exception):
    """A request the console refuses (400) with a message for the page."""


class NothingToDo(Exception):
    """A well-formed request there is nothing for (409): e.g. an undo without a rollback."""


class Console:
    """One namespace's console: its parts, its login sessions and its templates.

    Args:
        parts: the namespace's parts.
        token: the token the console is logged into with.
    """

    def __init__(self, parts: Aether, token: str) -> None:
        self.parts = parts
        self.sessions = Sessions(token)
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.filters["pretty"] = to_json
        self.templates.env.filters["erased"] = erasure.describe_counts  # as the CLI says it
        self.templates.env.filters["valid_window"] = window_text  # as the CLI shows it
        self.caller = Caller("console")

    @staticmethod
    def of(request: Request) -> Console:
        """The console a request reached."""
        found = request.app.state.console
        if not isinstance(found, Console):
            raise RuntimeError("the console app was built without its Console")
        return found

    async def zone(self) -> ZoneInfo:
        """The operator's time zone (times on every page)."""
        parts = self.parts
        if parts.assembler.identity_dir is not None:  # a fresh namespace: the folder's
            return operator_zone(await parts.identity.current(parts.assembler.identity_dir))
        return operator_zone(await parts.identity.load())

    async def run(self, op: Operation[Any, Any], **values: Any) -> Any:
        """Run one operation as the console; a bad argument is a 400."""
        try:
            args = validated(op.arguments, values)  # every face's reading of arguments
        except InvalidOperationError as e:
            raise BadRequest(str(e)) from None
        return await op(self.parts, self.caller, args)

    async def page(self, request: Request, name: str, **context: Any) -> Response:
        """The template ``name`` in the layout, with what every page shows."""
        tz = await self.zone()
        return self.templates.TemplateResponse(
            request,
            name,
            {
                "pages": PAGES,
                "path": request.url.path,
                "csrf": request.state.csrf,
                "when": lambda at: stamp(at, tz, time.time()),
                "ago": _relative,
                "zone": str(tz),
                "namespace": self.parts.settings.namespace,
                "page_link": lambda number: _with_page(request, number),
                **context,
            },
        )

    @staticmethod
    def query(request: Request, name: str, limit: int = MAX_QUERY) -> str:
        """A query parameter, stripped; refused (400) past ``limit`` characters."""
        value = request.query_params.get(name, "")
        if len(value) > limit:
            raise BadRequest(f"{name} is over {limit} characters")
        return value.strip()

    @staticmethod
    async def form(request: Request) -> dict[str, str]:
        """The request's form fields (read once: the CSRF check may have read them)."""
        cached = getattr(request.state, "form", None)
        if cached is None:
            cached = {k: str(v) for k, v in (await request.form()).items()}
            request.state.form = cached
        return dict(cached)


def _relative(at: object) -> str:
    if isinstance(at, bool) or not isinstance(at, int | float) or not at:
        return "-"
    return ago(float(at), time.time())


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


def to_json(value: BaseModel | dict[str, Any]) -> str:
    """Pretty JSON for a page's details block."""
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)

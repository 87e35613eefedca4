"""The console's web app: pages over aether's operations, behind the token.

Why: docs/design.md, "The operator console". The app holds one
:class:`~aether.interfaces.console.core.Console` (``app.state.console``); each page group
is a module of :mod:`aether.interfaces.console.pages` with its routes, and
:mod:`aether.interfaces.console.guard` is the door every request passes. Every page
reads through the operations the CLI and MCP use, the daemon's status through
``aether.runtime.status``, and messages go through the inbox as ``aether send`` sends
them: the console holds no Redis call of its own. Templates escape every text.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from aether.app import Aether
from aether.interfaces.console import guard
from aether.interfaces.console.core import HERE, MAX_QUERY, Console
from aether.interfaces.console.pages import checkpoints, memory, operator, talk

__all__ = ["MAX_QUERY", "build_app"]


def build_app(parts: Aether, token: str) -> Starlette:
    """The console over one namespace's parts, logged into with ``token``."""
    routes = [
        *guard.ROUTES,
        *talk.ROUTES,
        *memory.ROUTES,
        *checkpoints.ROUTES,
        *operator.ROUTES,
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(guard.Guard)])
    app.state.console = Console(parts, token)
    return app

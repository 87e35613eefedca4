"""The console's door: login and logout, and the middleware every request passes.

The middleware checks the session cookie or the bearer token, the CSRF token of every
change, sets the security headers (a strict Content-Security-Policy: scripts and styles
only from ``/static``), and turns every error into a page for a browser or one plain
line for a script.
"""

from __future__ import annotations

import structlog
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from aether.errors import AetherError, describe, error_code
from aether.interfaces.console.auth import COOKIE, Sessions
from aether.interfaces.console.core import PAGES, BadRequest, Console, NothingToDo

__all__ = ["CSP", "ROUTES", "Guard"]

log = structlog.get_logger(__name__)
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
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
STATUS_OF = {"not_found": 404, "invalid": 400, "ambiguous": 400, "busy": 409}


async def login_form(request: Request) -> Response:
    """The login page."""
    return Console.of(request).templates.TemplateResponse(request, "login.html", {"error": None})


async def login(request: Request) -> Response:
    """Open a session for the right token (401 for a wrong one)."""
    console = Console.of(request)
    data = await console.form(request)
    if not console.sessions.token_matches(data.get("token", "")):
        return console.templates.TemplateResponse(
            request, "login.html", {"error": "wrong token"}, status_code=401
        )
    sid, _ = console.sessions.open()
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, sid, httponly=True, samesite="strict", path="/")
    return response


async def logout(request: Request) -> Response:
    """Close the session."""
    Console.of(request).sessions.close(request.cookies.get(COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


class Guard(BaseHTTPMiddleware):
    """Auth, CSRF, security headers, and errors as pages."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        """Every request: checked, answered, its headers set."""
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
            refused = await _refused(request)
            if refused is not None:
                return refused
        try:
            return await call_next(request)
        except BadRequest as e:
            return failed(request, 400, "invalid", str(e))
        except NothingToDo as e:
            return failed(request, 409, "nothing_to_do", str(e))
        except AetherError as e:
            code, _ = error_code(e)
            return failed(request, STATUS_OF.get(code, 500), code, str(e))
        except Exception as e:
            log.error("console page failed", path=request.url.path, exc_info=True)
            return failed(request, 500, "error", describe(e))


async def _refused(request: Request) -> Response | None:
    """Why a request may not pass (no session or token, a wrong CSRF token), or None."""
    console = Console.of(request)
    sessions = console.sessions
    bearer = request.headers.get("Authorization", "")
    csrf = sessions.csrf(request.cookies.get(COOKIE))
    if bearer.startswith("Bearer ") and sessions.token_matches(bearer[7:]):
        return None  # a script: no cookie, so no cross-site request can ride on it
    if csrf is not None:
        request.state.csrf = csrf
        changes = request.method not in ("GET", "HEAD")
        if changes and not Sessions.csrf_matches(csrf, await _csrf_of(request)):
            return _plain(403, "forbidden: the page's CSRF token is missing or wrong")
        return None
    if request.method in ("GET", "HEAD") and "text/html" in request.headers.get("accept", ""):
        return console.templates.TemplateResponse(
            request, "login.html", {"error": None}, status_code=401
        )
    return _plain(401, "unauthorized: log in, or send Authorization: Bearer TOKEN")


def failed(request: Request, status: int, code: str, message: str) -> Response:
    """An error: a page in the layout for a browser, one plain line for a script.

    The page needs nothing that may have failed (no Redis read): the zone is left out.
    """
    wants_page = request.method in ("GET", "HEAD") and "text/html" in request.headers.get(
        "accept", ""
    )
    if not wants_page or request.headers.get("HX-Request"):
        return _plain(status, f"{code}: {message}")
    console = Console.of(request)
    return console.templates.TemplateResponse(
        request,
        "error.html",
        {
            "pages": PAGES,
            "path": request.url.path,
            "csrf": getattr(request.state, "csrf", ""),
            "zone": "",
            "namespace": console.parts.settings.namespace,
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
        return (await Console.form(request)).get("csrf") or None
    return None


def _plain(status: int, message: str) -> Response:
    return Response(message + "\n", status_code=status, media_type="text/plain; charset=utf-8")


ROUTES = [
    Route("/login", login_form, methods=["GET"]),
    Route("/login", login, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
]

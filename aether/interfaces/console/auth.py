"""Who may use the console: a token, a session cookie, CSRF on every change.

Why: docs/security.md, "The operator console". The token is ``AETHER_CONSOLE__TOKEN`` or
one generated on first start, kept 0600 in ``$AETHER_HOME/console.token`` and printed
once. ``POST /login`` with it sets an HttpOnly, SameSite=Strict session cookie; a script
may send ``Authorization: Bearer TOKEN`` instead. A cookie session's state-changing
requests carry the page's CSRF token (form field ``csrf`` or header ``X-CSRF-Token``).
On a host other than loopback the console refuses to start without an explicit token.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
from pathlib import Path

from aether.config import Settings
from aether.errors import ConfigError

__all__ = ["COOKIE", "Sessions", "console_token", "is_loopback"]

COOKIE = "aether_console"
TOKEN_FILE = "console.token"
MAX_SESSIONS = 1000


def is_loopback(host: str) -> bool:
    """Whether ``host`` is only reachable from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def console_token(settings: Settings) -> tuple[str, bool]:
    """The login token, and whether it was generated just now (to print it once).

    Raises:
        ConfigError: a non-loopback host without ``AETHER_CONSOLE__TOKEN``.
    """
    cfg = settings.console
    if cfg.token is not None and cfg.token.get_secret_value():
        return cfg.token.get_secret_value(), False
    if not is_loopback(cfg.host):
        raise ConfigError(
            f"the console would listen on {cfg.host}, beyond this machine: set "
            "AETHER_CONSOLE__TOKEN (a long random secret) to do that"
        )
    path: Path = settings.home / TOKEN_FILE
    if path.is_file():
        token = path.read_text().strip()
        if token:
            return token, False
    settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    return token, True


class Sessions:
    """Cookie sessions of one console process: session id -> its CSRF token."""

    def __init__(self, token: str) -> None:
        self._token = token
        self._csrf: dict[str, str] = {}

    def token_matches(self, offered: str) -> bool:
        """Whether ``offered`` is the login token (in constant time)."""
        return hmac.compare_digest(offered.encode(), self._token.encode())

    def open(self) -> tuple[str, str]:
        """A new session: (its id for the cookie, its CSRF token)."""
        if len(self._csrf) >= MAX_SESSIONS:
            self._csrf.pop(next(iter(self._csrf)))
        sid, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self._csrf[sid] = csrf
        return sid, csrf

    def csrf(self, sid: str | None) -> str | None:
        """The CSRF token of a session (``None``: no such session)."""
        return self._csrf.get(sid) if sid else None

    def close(self, sid: str | None) -> None:
        """End a session."""
        if sid:
            self._csrf.pop(sid, None)

    @staticmethod
    def csrf_matches(expected: str, offered: str | None) -> bool:
        """Whether a request's CSRF token is its session's."""
        return offered is not None and hmac.compare_digest(expected.encode(), offered.encode())

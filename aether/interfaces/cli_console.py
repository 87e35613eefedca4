"""``aether console``: the operator console in a browser (``aether.interfaces.console``)."""

from __future__ import annotations

import errno
import socket
import sys
from typing import Annotated

import typer

from aether.errors import ConfigError
from aether.interfaces.common import fail, run, state


def console(
    ctx: typer.Context,
    port: Annotated[
        int | None, typer.Option("--port", min=1, max=65535, help="TCP port (default 8765).")
    ] = None,
    host: Annotated[
        str | None,
        typer.Option("--host", help="Bind address (default 127.0.0.1; others need a token)."),
    ] = None,
) -> None:
    """Serve the operator console on http://127.0.0.1:8765/ (with or without the daemon).

    Log in with the token: AETHER_CONSOLE__TOKEN, or one generated on first start, kept
    0600 in $AETHER_HOME/console.token and printed once.
    """
    st = state(ctx)
    cfg = st.settings.console.model_copy(
        update={k: v for k, v in (("port", port), ("host", host)) if v is not None}
    )
    settings = st.settings.model_copy(update={"console": cfg})
    from aether.interfaces.console import build_app, console_token

    try:
        token, generated = console_token(settings)
    except ConfigError as e:
        fail(str(e), False, kind="config")
    listener = _bind(cfg.host, cfg.port)
    if generated:
        print(
            f"console token (shown once; kept in {settings.home / 'console.token'}): {token}",
            file=sys.stderr,
        )
    print(f"aether console at http://{cfg.host}:{cfg.port}/", file=sys.stderr, flush=True)

    async def body() -> None:
        import uvicorn

        from aether.app import Aether
        from aether.runtime.heap import settle_heap

        async with Aether.open(
            settings, actor="console", embed_via_daemon=True, migrate=False
        ) as parts:
            config = uvicorn.Config(
                build_app(parts, token), host=cfg.host, port=cfg.port, log_level="warning"
            )
            settle_heap()  # a long-lived server, as the daemon is
            await uvicorn.Server(config).serve(sockets=[listener])

    try:
        run(ctx, body)
    finally:
        listener.close()


def _bind(host: str, port: int) -> socket.socket:
    """The console's listening socket, bound before anything is printed.

    A port in use is one ``error:`` line and exit 1, not an address followed by the
    server's own error.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as e:
        listener.close()
        reason = "is in use" if e.errno == errno.EADDRINUSE else f"cannot be bound ({e.strerror})"
        fail(
            f"port {port} on {host} {reason}: another console or program listens there; "
            "choose another with --port (or AETHER_CONSOLE__PORT)",
            False,
            kind="config",
        )
    listener.listen(128)
    listener.set_inheritable(True)
    return listener

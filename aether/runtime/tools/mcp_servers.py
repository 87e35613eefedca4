"""Other MCP servers' tools, offered to the agent as ``NAME__TOOL``.

Why: docs/design.md, "Tools". ``AETHER_MCP_SERVERS`` names a JSON file in the shape MCP
hosts use (Claude Desktop, Cursor)::

    {"mcpServers": {
        "files": {"command": "uvx", "args": ["mcp-server-fs"], "env": {"ROOT": "/srv"}},
        "search": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "..."}}
    }}

One :class:`ServerLink` per server holds its connection (the official SDK's client:
stdio for ``command``, streamable HTTP for ``url``) inside one task, which the daemon's
supervisor keeps alive: a server that crashes or stops answering its ping fails the
task, which is restarted with back-off. Meanwhile the server's tools stay offered (as
last listed) and answer ``unavailable``. A stdio server gets the SDK's safe default
environment plus its own ``env``, never aether's secrets; its stderr goes to
``$AETHER_HOME/logs/mcp-NAME.log``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Literal

import structlog
from pydantic import BaseModel, Field, ValidationError, model_validator

from aether.errors import ConfigError, InvalidOperationError, ToolUnavailableError
from aether.runtime.tools.policy import MCP_SEPARATOR

__all__ = [
    "SEPARATOR",
    "ServerConfig",
    "ServerLink",
    "load_servers",
]

log = structlog.get_logger(__name__)

SEPARATOR = MCP_SEPARATOR
PING_EVERY_S = 2.0
CONNECT_TIMEOUT_S = 30.0
LinkState = Literal["connecting", "ready", "unavailable"]
_NAME = r"^[A-Za-z0-9_-]{1,32}$"


class ServerConfig(BaseModel):
    """One server of the file: a command to launch (stdio) or a URL (streamable HTTP)."""

    model_config = {"extra": "ignore"}

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("give either 'command' (stdio) or 'url' (streamable HTTP)")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("'url' must be http:// or https://")
        return self


class _ServersFile(BaseModel):
    mcpServers: dict[str, ServerConfig]


def load_servers(path: Path) -> dict[str, ServerConfig]:
    """The servers of an ``mcpServers`` file.

    Raises:
        ConfigError: a missing or malformed file, naming it and what is wrong.
    """
    import re

    try:
        raw = json.loads(path.read_text())
        servers = _ServersFile.model_validate(raw).mcpServers
    except OSError as e:
        raise ConfigError(f"AETHER_MCP_SERVERS: cannot read {path}: {e.strerror}") from None
    except ValueError as e:  # JSON or validation
        detail = e.errors()[0] if isinstance(e, ValidationError) else None
        where = ".".join(str(p) for p in detail["loc"]) if detail else ""
        message = detail["msg"] if detail else str(e)
        raise ConfigError(
            f"AETHER_MCP_SERVERS: {path} is not an mcpServers file"
            + (f" ({where}: {message})" if detail else f" ({message})")
        ) from None
    for name in servers:
        if not re.match(_NAME, name) or SEPARATOR in name:
            raise ConfigError(
                f"AETHER_MCP_SERVERS: server name {name[:40]!r}: 1-32 of A-Z a-z 0-9 _ - "
                f"without '{SEPARATOR}'"
            )
    return servers


class ServerLink:
    """The connection to one MCP server and the tools it listed.

    Args:
        name: its name in the file (the prefix of its tools).
        config: how to reach it.
        log_dir: where a stdio server's stderr goes.
        on_tools: called with the link when its tool list is (re)read.
    """

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        log_dir: Path,
        on_tools: Callable[[ServerLink], Awaitable[None]] | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.log_dir = log_dir
        self.on_tools = on_tools
        self.state: LinkState = "connecting"
        self.error = ""
        self.since = time.time()
        self.starts = 0
        self.tools: list[Any] = []  # mcp.types.Tool, as last listed
        self._session: Any = None

    def status(self) -> dict[str, Any]:
        """Plain data for ``aether status``."""
        return {
            "name": self.name,
            "transport": "stdio" if self.config.command else "http",
            "state": self.state,
            "since": self.since,
            "tools": len(self.tools),
            "restarts": max(0, self.starts - 1),
            "error": self.error,
        }

    def _set(self, state: LinkState, error: str = "") -> None:
        if state != self.state:
            self.since = time.time()
        self.state, self.error = state, error

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, list the tools, then ping until ``stop``.

        Raises:
            ToolUnavailableError: the server failed (the supervisor restarts this).
        """
        from mcp import ClientSession

        self.starts += 1
        self._set("connecting", self.error)
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(stack))
                session = await stack.enter_async_context(ClientSession(read, write))
                await asyncio.wait_for(session.initialize(), CONNECT_TIMEOUT_S)
                self.tools = await self._list(session)
                self._session = session
                self._set("ready")
                log.info("mcp server ready", server=self.name, tools=len(self.tools))
                if self.on_tools is not None:
                    await self.on_tools(self)
                while not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), PING_EVERY_S)
                    if not stop.is_set():
                        await asyncio.wait_for(session.send_ping(), PING_EVERY_S * 5)
        except Exception as e:  # noqa: BLE001 - whatever the server did, it is unavailable
            self._session = None
            self._set("unavailable", f"{type(e).__name__}: {e}"[:300] or type(e).__name__)
            log.warning("mcp server unavailable", server=self.name, error=self.error)
            raise ToolUnavailableError(f"mcp server {self.name}: {self.error}") from None
        finally:
            self._session = None

    def _transport(self, stack: AsyncExitStack) -> Any:
        if self.config.command:
            from mcp import StdioServerParameters
            from mcp.client.stdio import get_default_environment, stdio_client

            self.log_dir.mkdir(parents=True, exist_ok=True)
            errlog = stack.enter_context((self.log_dir / f"mcp-{self.name}.log").open("a"))
            params = StdioServerParameters(
                command=self.config.command,
                args=self.config.args,
                env={**get_default_environment(), **self.config.env},
                cwd=self.config.cwd,
            )
            return stdio_client(params, errlog=errlog)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers=self.config.headers, timeout=CONNECT_TIMEOUT_S)
        stack.push_async_callback(http.aclose)
        assert self.config.url is not None
        return streamable_http_client(self.config.url, http_client=http)

    @staticmethod
    async def _list(session: Any) -> list[Any]:
        from mcp.types import PaginatedRequestParams

        tools: list[Any] = []
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await asyncio.wait_for(session.list_tools(params=params), CONNECT_TIMEOUT_S)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> str:
        """Call one of the server's tools; its text content.

        Raises:
            ToolUnavailableError: the server is not connected (it is being restarted).
            InvalidOperationError: the tool answered with an error.
        """
        session = self._session
        if session is None or self.state != "ready":
            raise ToolUnavailableError(
                f"unavailable: MCP server {self.name} is {self.state}"
                + (f" ({self.error})" if self.error else "")
                + "; try again later"
            )
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
        except Exception as e:  # noqa: BLE001 - a broken connection, as the SDK raises it
            raise ToolUnavailableError(f"unavailable: MCP server {self.name}: {e}"[:500]) from None
        parts = [
            getattr(c, "text", None) or f"[{getattr(c, 'type', 'content')}]" for c in result.content
        ]
        if not parts and getattr(result, "structured_content", None) is not None:
            parts = [json.dumps(result.structured_content, ensure_ascii=False)]
        output = "\n".join(parts)
        if getattr(result, "is_error", False):
            raise InvalidOperationError(f"{self.name}{SEPARATOR}{tool}: {output}"[:4000])
        return output

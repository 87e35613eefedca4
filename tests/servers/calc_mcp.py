"""A small MCP server written with the official SDK, for the agent's MCP tools tests.

Run as ``python tests/servers/calc_mcp.py``. It writes its pid to ``$CALC_PID_FILE``; while
``$CALC_DOWN_FILE`` exists it exits at once (a server that cannot start).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

if os.environ.get("CALC_DOWN_FILE") and Path(os.environ["CALC_DOWN_FILE"]).exists():
    sys.exit(1)
if os.environ.get("CALC_PID_FILE"):
    Path(os.environ["CALC_PID_FILE"]).write_text(str(os.getpid()))

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def secret_env() -> str:
    """Whether the server sees aether's secrets in its environment."""
    leaked = sorted(k for k in os.environ if k.startswith("AETHER_"))
    return "leaked: " + ",".join(leaked) if leaked else "clean"


if __name__ == "__main__":
    server.run("stdio")

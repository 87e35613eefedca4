"""Interfaces: the typer CLI (and, later, the MCP server)."""

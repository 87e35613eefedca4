"""Repository intelligence, for operators: index a repository, and ask what relates.

A repository is read from, and its files are named by, paths on the machine the command
runs on (relative ones from its working directory), so these are not MCP tools.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from aether.operations.base import Caller, NoArgs, operation
from aether.operations.parts import Parts

__all__ = ["FileArgs", "IndexArgs", "repo_index", "repo_list", "repo_query"]


class IndexArgs(BaseModel):
    """Arguments of ``repo_index``."""

    path: Path = Field(default=Path("."), description="The repository's root.")


class Indexed(BaseModel):
    """What an index run did."""

    repo: str
    root: str
    files: int
    changed: list[str]
    unchanged: int
    removed: list[str]
    languages: dict[str, int]
    skipped: dict[str, int]
    skipped_paths: list[str]
    seconds: float


@operation(read_only=False, agent=False, mcp=False)
async def repo_index(parts: Parts, caller: Caller, args: IndexArgs) -> Indexed:
    """Map a repository's source files; a re-index touches only the files that changed."""
    from aether.memory.code.repository import Repositories

    report = await Repositories(parts.memory).index(args.path, caller.counter())
    return Indexed(**report.__dict__)


class Repos(BaseModel):
    """Indexed repositories, most recently indexed first."""

    repos: list[dict[str, str]]


@operation(read_only=True, agent=False, mcp=False)
async def repo_list(parts: Parts, caller: Caller, args: NoArgs) -> Repos:
    """The indexed repositories, most recently indexed first."""
    from aether.memory.code.repository import Repositories

    return Repos(repos=await Repositories(parts.memory).repos())


class FileArgs(BaseModel):
    """Arguments of ``repo_query``."""

    file: Path = Field(description="A file of an indexed repository.")
    what: Literal["related", "deps", "affected"] = Field(
        description="related: files most related to it; deps: what it depends on, "
        "transitively; affected: what a change to it can affect (tests marked)."
    )


class FileRows(BaseModel):
    """The files found, best or nearest first."""

    rows: list[dict[str, Any]]


@operation(read_only=True, agent=False, mcp=False)
async def repo_query(parts: Parts, caller: Caller, args: FileArgs) -> FileRows:
    """Files related to a file, what it depends on, or what a change to it can affect."""
    from aether.memory.code.repository import Repositories

    repos = Repositories(parts.memory)
    found = await getattr(repos, args.what)(args.file)
    return FileRows(rows=[dict(row) for row in found])

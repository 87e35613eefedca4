"""The PostgreSQL archive, for operators: sync, snapshot, and point-in-time restore.

Each needs ``AETHER_POSTGRES_DSN``. A restore rebuilds the namespace into a Redis that
holds none of it; it is the operator's, never the agent's nor a remote MCP client's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from aether.errors import ConfigError
from aether.operations.base import Caller, NoArgs, operation
from aether.operations.parts import Parts

if TYPE_CHECKING:
    from aether.checkpoints.archive import Archive

__all__ = ["RestoreArgs", "archive_restore", "archive_snapshot", "archive_sync"]


@asynccontextmanager
async def _archive(parts: Parts) -> AsyncIterator[Archive]:
    """The namespace's archive, connected (migrations applied) for one operation.

    Raises:
        ConfigError: no archive is configured.
        ArchiveError: PostgreSQL cannot be reached.
    """
    from aether.checkpoints.archive import Archive, open_archive

    if parts.settings.postgres_dsn is None:
        raise ConfigError("no archive configured: set AETHER_POSTGRES_DSN")
    async with open_archive(parts.settings.postgres_dsn.get_secret_value()) as conn:
        yield Archive.from_settings(conn, parts.client, parts.keys, parts.settings)


class Synced(BaseModel):
    """What one sync copied."""

    entries: int
    checkpoints: int
    snapshot: str | None
    cursor: str | None


@operation(read_only=False, agent=False)
async def archive_sync(parts: Parts, caller: Caller, args: NoArgs) -> Synced:
    """Copy new journal entries and checkpoints to PostgreSQL (a snapshot when one is due)."""
    async with _archive(parts) as archive:
        return Synced(**(await archive.sync(caller.counter())).__dict__)


class Snapshot(BaseModel):
    """The base snapshot taken."""

    snapshot: str


@operation(read_only=False, agent=False)
async def archive_snapshot(parts: Parts, caller: Caller, args: NoArgs) -> Snapshot:
    """Take a base snapshot of the namespace's state in PostgreSQL now."""
    async with _archive(parts) as archive:
        return Snapshot(snapshot=await archive.snapshot())


class RestoreArgs(BaseModel):
    """Arguments of ``archive_restore``."""

    to: str = Field(min_length=1, description="A checkpoint id or prefix, or an ISO-8601 time.")


class Restored(BaseModel):
    """What one restore rebuilt."""

    snapshot: str
    keys_restored: int
    entries_replayed: int
    checkpoints: int
    position: str


@operation(read_only=False, agent=False, mcp=False)
async def archive_restore(parts: Parts, caller: Caller, args: RestoreArgs) -> Restored:
    """Rebuild the namespace from PostgreSQL alone, into a Redis that holds none of it."""
    async with _archive(parts) as archive:
        report = await archive.restore(args.to, caller.report)
        return Restored(**report.__dict__)

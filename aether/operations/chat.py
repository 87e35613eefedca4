"""Conversation operations for people: the chat sessions and their messages.

Sending a message to the running agent goes through its inbox (``aether send``, the
console), which is the daemon's, not an operation on memory.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from aether.errors import NotFoundError
from aether.memory.tiers.chat import ChatSessions
from aether.operations.base import Caller, NoArgs, for_the_cli, operation
from aether.operations.parts import Parts

__all__ = ["chat_delete", "chat_list", "chat_messages"]


class Sessions(BaseModel):
    """Chat sessions, most recent first (``id``, ``messages``, ``last_message_at``...)."""

    sessions: list[dict[str, Any]]


@operation(read_only=True, agent=False)
async def chat_list(parts: Parts, caller: Caller, args: NoArgs) -> Sessions:
    """The chat sessions, most recent first, with how many messages each holds."""
    return Sessions(sessions=await ChatSessions(parts.memory).list())


class MessagesArgs(BaseModel):
    """Arguments of ``chat_messages``."""

    session: str = Field(min_length=1, max_length=128, description="The chat session.")
    after: float | None = Field(
        default=None, ge=0, description="Only messages stamped after this (epoch seconds)."
    )
    limit: int = Field(
        default=200,
        ge=1,
        le=2000,
        description="The last this many.",
        json_schema_extra=for_the_cli(default=2000),
    )


class Messages(BaseModel):
    """A session's messages in order (``role``, ``content``, ``timestamp``...)."""

    session: str
    messages: list[dict[str, Any]]
    exists: bool = Field(description="the session exists (a new one has no messages yet)")


@operation(read_only=True, agent=False)
async def chat_messages(parts: Parts, caller: Caller, args: MessagesArgs) -> Messages:
    """A chat session's messages in order, the last ``limit`` (after a time, if given)."""
    chats = ChatSessions(parts.memory)
    found = await chats.messages(args.session, limit=args.limit)
    if args.after is not None:
        found = [m for m in found if float(m.get("timestamp") or 0) > args.after]
    exists = True
    if not found:
        try:
            await chats.get(args.session)
        except NotFoundError:
            exists = False
    return Messages(session=args.session, messages=[dict(m) for m in found], exists=exists)


class SessionArgs(BaseModel):
    """Arguments of ``chat_delete``."""

    session: str = Field(min_length=1, max_length=128, description="The chat session.")


class SessionDeleted(BaseModel):
    """The session deleted."""

    deleted: str


@operation(read_only=False, agent=False)
async def chat_delete(parts: Parts, caller: Caller, args: SessionArgs) -> SessionDeleted:
    """Delete a chat session and its messages (journaled: a rollback restores them).

    Raises:
        NotFoundError: no such session.
    """
    await ChatSessions(parts.memory).delete(args.session)
    return SessionDeleted(deleted=args.session)

"""Tier 7, chat sessions: a hash per session, messages in a ZSET by time, an index of sessions.

A message is a ZSET member (JSON starting with its ULID, so ties in time keep their
order); an assistant message that calls tools is stored in the same change as the
tools' results, so a call and its result are never apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any, Literal

from aether.codec import byte_map, text, texts
from aether.errors import InvalidOperationError, NotFoundError
from aether.ids import check_id, new_id
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import check_timestamp
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.messages import ChatMessage, ToolCallPart
from aether.store.state import Mutation

Role = Literal["system", "user", "assistant", "tool"]
# The in-flight context window of a session, kept in its hash so that it survives
# restarts and rolls back with the conversation: the position of the window's first
# message, the summary of what compression evicted, the thresholds already fired, and
# the per-message clip a hard compression set.
WINDOW_FIELDS = ("context_start", "context_summary", "context_flags", "context_clip")
ROLES = ("system", "user", "assistant", "tool")


def _message(role: str, content: str, ts: float, **extra: Any) -> ChatMessage:
    if role not in ROLES:
        raise InvalidOperationError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
    if not isinstance(content, str):
        raise InvalidOperationError("message content must be text")
    message = ChatMessage(id=new_id(), role=role, content=content, timestamp=ts)
    message.update({k: v for k, v in extra.items() if v is not None})  # type: ignore[typeddict-item]
    return message


def _in_order(messages: list[ChatMessage]) -> None:
    """Give messages of one time ids in their list order (members of one time sort by id)."""
    for message, ordered in zip(messages, sorted(m["id"] for m in messages), strict=True):
        message["id"] = ordered


def _epoch(value: str) -> float:
    """A stored time (epoch seconds as text, or ISO-8601) as epoch seconds."""
    try:
        return float(value)
    except ValueError:
        return datetime.fromisoformat(value).timestamp()


class ChatSessions:
    """Conversations, most recently active first."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys

    async def _meta_ops(self, m: Mutation, session: str, ts: float, title: str | None) -> None:
        exists = await self.memory.client.exists(self.keys.chat_session(session))
        stamp = datetime.fromtimestamp(ts, tz=UTC).isoformat()
        fields: dict[str, str | float] = {"updated_at": stamp, "last_message_at": ts}
        if not exists:
            fields.update({"id": session, "created_at": stamp, "title": title or session})
        elif title:
            fields["title"] = title
        m.hset(self.keys.chat_session(session), fields)
        m.zadd(self.keys.chat_session_index(), {session: ts})

    async def append(
        self,
        session: str,
        role: str,
        content: str,
        *,
        name: str | None = None,
        timestamp: datetime | float | None = None,
        title: str | None = None,
        ref: str | None = None,
    ) -> ChatMessage:
        """Append one message (creating the session on first use).

        ``ref`` ties the message to where it came from (an inbox message id), so that a
        redelivered message is not stored twice (see :meth:`find_ref`).
        """
        check_id(session, "session id")
        ts = check_timestamp(timestamp)
        message = _message(role, content, ts, name=name, ref=ref)
        m = Mutation()
        m.zadd(self.keys.chat_messages(session), {json.dumps(message, ensure_ascii=False): ts})
        await self._meta_ops(m, session, ts, title)
        await self.memory.store.apply(m, "chat.append")
        return message

    async def append_tool_exchange(
        self,
        session: str,
        content: str,
        tool_calls: list[ToolCallPart],
        results: list[ChatMessage],
        timestamp: datetime | float | None = None,
    ) -> list[ChatMessage]:
        """Store an assistant message with tool calls and every result, in one change.

        Raises:
            InvalidOperationError: a call without a result, or a result without a call.
        """
        check_id(session, "session id")
        call_ids = [c.get("id") for c in tool_calls]
        result_ids = [r.get("tool_call_id") for r in results]
        if not tool_calls or sorted(map(str, call_ids)) != sorted(map(str, result_ids)):
            raise InvalidOperationError("every tool call needs exactly one result, and vice versa")
        ts = check_timestamp(timestamp)
        messages = [_message("assistant", content, ts, tool_calls=tool_calls)]
        messages += [
            _message(
                "tool",
                str(r.get("content", "")),
                ts,
                tool_call_id=r["tool_call_id"],
                name=r.get("name"),
                call=r.get("call"),
            )
            for r in results
        ]
        _in_order(messages)  # the call before its results
        await self._store(Mutation(), session, messages, ts, "chat.tool_exchange")
        return messages

    async def _store(
        self, m: Mutation, session: str, messages: list[ChatMessage], ts: float, reason: str
    ) -> None:
        """Add messages of one time (and the session's metadata) to ``m``, and apply it."""
        m.zadd(
            self.keys.chat_messages(session),
            {json.dumps(msg, ensure_ascii=False): ts for msg in messages},
        )
        await self._meta_ops(m, session, ts, None)
        await self.memory.store.apply(m, reason)

    async def append_messages(
        self,
        session: str,
        drafts: Sequence[ChatMessage],
        *,
        remember: bool = True,
        timestamp: datetime | float | None = None,
    ) -> list[ChatMessage]:
        """Append messages in order, in one change (the session is made on first use).

        With ``remember``, the text of each user and assistant message is also logged to
        the daily log, tagged with the session, in the same change: search finds it, and
        the message names its entry (``memory``). A draft's extra fields (``tool_calls``,
        ``tool_call_id``, ``name``, ``item``) are kept.

        Raises:
            InvalidOperationError: an unknown role, content that is not text or too large,
                a bad session id; nothing is written.
        """
        check_id(session, "session id")
        if not drafts:
            return []
        ts = check_timestamp(timestamp)
        messages: list[ChatMessage] = []
        for draft in drafts:
            extra = {k: v for k, v in draft.items() if k not in ("role", "content", "id")}
            extra.pop("timestamp", None)
            messages.append(_message(draft["role"], draft.get("content") or "", ts, **extra))
        _in_order(messages)  # the drafts' order
        docs = []
        if remember:
            for message in messages:
                content = message.get("content") or ""
                if message["role"] in ("user", "assistant") and content.strip():
                    source = "user" if message["role"] == "user" else "agent"
                    doc = build_entry(
                        self.memory, content, source=source, session=session, timestamp=ts
                    )
                    message["memory"] = doc["id"]
                    docs.append(doc)
            await self.memory.attach_embeddings(docs)
        m = DailyLog(self.memory).mutation(docs) if docs else Mutation()
        await self._store(m, session, messages, ts, "chat.append")
        return messages

    async def pop_last(self, session: str) -> ChatMessage | None:
        """Remove the session's last message (and the daily entry logged from it).

        Returns the message, or ``None`` when the session is empty.
        """
        key = self.keys.chat_messages(check_id(session, "session id"))
        raw = await self.memory.client.zrange(key, -1, -1)
        if not raw:
            return None
        member = text(raw[0])
        message: ChatMessage = json.loads(member)
        m = Mutation()
        memory = message.get("memory")
        if memory:
            entry_key = self.keys.daily_entry(memory)
            (doc,) = await self.memory.get_docs([entry_key])
            if doc is not None:
                day = date.fromisoformat(str(doc.get("day")))
                m = DailyLog(self.memory).removal(day, [doc], whole_day=False)
        m.zrem(key, member)
        await self.memory.store.apply(m, "chat.pop")
        return message

    async def clear(self, session: str) -> int:
        """Remove every message of a session, keeping the session (journaled).

        The daily entries logged from them stay: they are what happened (``aether erase``
        removes a text everywhere). Returns how many messages were removed.
        """
        key = self.keys.chat_messages(check_id(session, "session id"))
        count = int(await self.memory.client.zcard(key))
        if count:
            await self.memory.store.apply(Mutation().delete(key), "chat.clear")
        return count

    async def find_ref(self, session: str, ref: str, recent: int = 100) -> ChatMessage | None:
        """The message stored with ``ref`` among the last ``recent`` ones, if any."""
        found = [m for m in await self.messages(session, limit=recent) if m.get("ref") == ref]
        return found[-1] if found else None

    async def messages_from(self, session: str, start: int) -> list[ChatMessage]:
        """Messages from position ``start`` (0 = the first) to the last."""
        raw = await self.memory.client.zrange(self.keys.chat_messages(check_id(session)), start, -1)
        return [json.loads(member) for member in texts(raw)]

    async def window_state(self, session: str) -> dict[str, str]:
        """The context window's fields of the session hash (``context_*``), as stored."""
        key = self.keys.chat_session(check_id(session))
        values = await self.memory.client.hmget(key, list(WINDOW_FIELDS))
        return {f: text(v) for f, v in zip(WINDOW_FIELDS, values, strict=True) if v is not None}

    def window_state_ops(self, m: Mutation, session: str, fields: dict[str, str]) -> Mutation:
        """Add to ``m`` the write of the window's fields (journaled with the change)."""
        unknown = set(fields) - set(WINDOW_FIELDS)
        if unknown:
            raise InvalidOperationError(f"not window fields: {sorted(unknown)}")
        return m.hset(self.keys.chat_session(check_id(session)), fields)

    async def messages(self, session: str, limit: int | None = None) -> list[ChatMessage]:
        """Messages in order (the last ``limit`` when given)."""
        start = 0 if limit is None else -limit
        raw = await self.memory.client.zrange(self.keys.chat_messages(check_id(session)), start, -1)
        return [json.loads(member) for member in texts(raw)]

    async def get(self, session: str) -> dict[str, str | int | float]:
        """Session metadata and message count.

        Raises:
            NotFoundError: no such session.
        """
        meta = byte_map(await self.memory.client.hgetall(self.keys.chat_session(check_id(session))))
        if not meta:
            raise NotFoundError(f"no chat session {session!r}")
        count = await self.memory.client.zcard(self.keys.chat_messages(session))
        fields: dict[str, str | int | float] = {k.decode(): v.decode() for k, v in meta.items()}
        for name in ("created_at", "updated_at", "last_message_at"):  # epoch seconds, as
            value = fields.get(name)  # every --json time (stored as ISO or as a number)
            if isinstance(value, str) and value:
                fields[name] = _epoch(value)
        return {**fields, "messages": count}

    async def list(self, limit: int = 50) -> list[dict[str, str | int | float]]:
        """Sessions, most recently active first."""
        ids = await self.memory.client.zrevrange(self.keys.chat_session_index(), 0, limit - 1)
        return [await self.get(session) for session in texts(ids)]

    async def delete(self, session: str) -> None:
        """Delete a session and its messages (journaled: a rollback restores them)."""
        await self.get(session)
        m = Mutation()
        m.delete(self.keys.chat_session(session))
        m.delete(self.keys.chat_messages(session))
        m.zrem(self.keys.chat_session_index(), session)
        await self.memory.store.apply(m, "chat.delete")

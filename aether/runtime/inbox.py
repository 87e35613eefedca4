"""The agent's mailboxes: ``ns:inbox`` read through a consumer group, ``ns:outbox``.

A message is acknowledged only in the same atomic step that puts its reply on the
outbox (the ``aether_reply`` Redis Function): a message pending when the daemon dies is
delivered again at restart, and since the acknowledgement and the reply happen together
it is answered exactly once, even when two consumers end up holding it.

Anyone can write to the inbox, e.g. ``redis-cli XADD aether:inbox '*' role user content
"hello"`` (optional fields: ``session``; ``sender``). Replies carry ``in_reply_to``, the
inbox entry id.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from aether.codec import byte_map, text
from aether.errors import InvalidOperationError
from aether.keys import Keyspace
from aether.store.functions import Functions

GROUP = "agent"
MAX_MESSAGE_BYTES = 1024 * 1024
"""The largest message the inbox takes (UTF-8 bytes)."""


@dataclass(frozen=True)
class InboxMessage:
    """One message to the agent."""

    id: str
    fields: dict[str, str]
    deliveries: int = 1

    @property
    def content(self) -> str:
        """The message text."""
        return self.fields.get("content", "")

    @property
    def role(self) -> str:
        """Who speaks (``user`` unless given)."""
        return self.fields.get("role", "user")

    @property
    def session(self) -> str | None:
        """The chat session it belongs to, when it names one."""
        return self.fields.get("session") or None


def _decode(entries: Any) -> list[tuple[str, dict[str, str]]]:
    out = []
    for entry_id, fields in entries or []:
        if fields is None:  # deleted from the stream while pending
            continue
        out.append((text(entry_id), {text(k): text(v) for k, v in byte_map(fields).items()}))
    return out


class Inbox:
    """One consumer of the inbox group.

    Args:
        client: a verified client (the Functions library loaded).
        keys: the namespace's keyspace.
        consumer: this consumer's name in the group.
        outbox_maxlen: the outbox is trimmed to about this many replies.
    """

    def __init__(
        self, client: Redis, keys: Keyspace, consumer: str = "main", outbox_maxlen: int = 10_000
    ) -> None:
        self.client = client
        self.keys = keys
        self.consumer = consumer
        self.outbox_maxlen = outbox_maxlen

    async def ensure_group(self) -> None:
        """Create the consumer group (from the stream's start, so nothing sent earlier is lost)."""
        try:
            await self.client.xgroup_create(self.keys.inbox(), GROUP, id="0", mkstream=True)
        except ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise

    async def send(self, content: str, session: str | None = None, sender: str = "cli") -> str:
        """Put a message in the inbox; returns its id.

        Raises:
            InvalidOperationError: the message is larger than :data:`MAX_MESSAGE_BYTES`.
        """
        size = len(content.encode())
        if size > MAX_MESSAGE_BYTES:
            raise InvalidOperationError(
                f"the message is {size} bytes: the inbox takes at most {MAX_MESSAGE_BYTES}"
            )
        fields = {"role": "user", "content": content, "sender": sender}
        if session:
            fields["session"] = session
        return text(await self.client.xadd(self.keys.inbox(), fields))  # type: ignore[arg-type]

    async def pending(self) -> list[InboxMessage]:
        """Messages delivered to this consumer and not yet answered (after a restart)."""
        reply: Any = await self.client.xreadgroup(
            GROUP, self.consumer, {self.keys.inbox(): "0"}, count=100
        )
        found = [m for _, entries in reply or [] for m in _decode(entries)]
        return await self._with_deliveries(found)

    async def claim_stale(self, min_idle_ms: int) -> list[InboxMessage]:
        """Take over messages another consumer has held for ``min_idle_ms`` (it died)."""
        reply: Any = await self.client.xautoclaim(
            self.keys.inbox(), GROUP, self.consumer, min_idle_time=min_idle_ms, count=100
        )
        return await self._with_deliveries(_decode(reply[1]))

    async def read(self, block_ms: int, count: int = 1) -> list[InboxMessage]:
        """New messages, waiting up to ``block_ms``."""
        reply: Any = await self.client.xreadgroup(
            GROUP, self.consumer, {self.keys.inbox(): ">"}, count=count, block=block_ms
        )
        return [InboxMessage(i, f) for _, entries in reply or [] for i, f in _decode(entries)]

    async def _with_deliveries(self, found: list[tuple[str, dict[str, str]]]) -> list[InboxMessage]:
        out = []
        for entry_id, fields in found:
            info: Any = await self.client.xpending_range(
                self.keys.inbox(), GROUP, min=entry_id, max=entry_id, count=1
            )
            deliveries = int(info[0]["times_delivered"]) if info else 1
            out.append(InboxMessage(entry_id, fields, deliveries))
        return out

    async def reply(self, message: InboxMessage, content: str, **extra: str) -> str | None:
        """Answer ``message``: outbox entry + acknowledgement, atomically.

        Returns the outbox id, or ``None`` when the message was already answered.
        """
        fields = {"in_reply_to": message.id, "role": "assistant", "content": content, **extra}
        flat = [v for pair in fields.items() for v in pair]
        outbox_id = await Functions(self.client, self.keys).reply(
            GROUP, message.id, self.outbox_maxlen, flat
        )
        return None if outbox_id is None else text(outbox_id)

    async def consumers(self) -> dict[str, int]:
        """The group's consumers and how many messages each holds unanswered.

        A daemon leaves the group when it stops cleanly, so a consumer here is a daemon
        that runs, is reconnecting, or died.
        """
        try:
            found: Any = await self.client.xinfo_consumers(self.keys.inbox(), GROUP)
        except ResponseError:  # no inbox or no group yet
            return {}
        return {text(c["name"]): int(c["pending"]) for c in found}

    async def leave(self) -> None:
        """Leave the group when this consumer holds nothing (a clean stop)."""
        if (await self.consumers()).get(self.consumer) == 0:
            await self.client.xgroup_delconsumer(self.keys.inbox(), GROUP, self.consumer)

    async def forget_dead(self) -> None:
        """Drop the other consumers that hold nothing (left by daemons that died).

        Only the lease holder calls it: every other consumer is then a dead daemon's.
        """
        for name, pending in (await self.consumers()).items():
            if name != self.consumer and pending == 0:
                await self.client.xgroup_delconsumer(self.keys.inbox(), GROUP, name)

    async def depth(self) -> dict[str, int]:
        """Messages waiting: not yet delivered (``lag``) and delivered but unanswered."""
        try:
            groups: Any = await self.client.xinfo_groups(self.keys.inbox())
        except ResponseError:
            return {"waiting": 0, "pending": 0}
        group = next((g for g in groups if text(g["name"]) == GROUP), None)
        if group is None:
            return {"waiting": int(await self.client.xlen(self.keys.inbox())), "pending": 0}
        lag = group.get("lag")
        return {"waiting": int(lag or 0), "pending": int(group.get("pending", 0))}


async def wait_for_reply(
    client: Redis,
    keys: Keyspace,
    message_id: str,
    timeout_s: float,
    tick: Callable[[], Awaitable[object]] | None = None,
) -> dict[str, str] | None:
    """The outbox entry answering ``message_id``, waiting up to ``timeout_s`` (else None).

    ``tick`` is called about once a second while it waits (``aether send`` tells the
    operator about an approval the turn waits on); the timeout is the caller's, always.
    """
    import time

    deadline = time.monotonic() + timeout_s
    last = "0-0"
    while True:
        if tick is not None:
            await tick()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        reply: Any = await client.xread(
            {keys.outbox(): last}, count=100, block=max(1, int(min(remaining, 1.0) * 1000))
        )
        for _, entries in reply or []:
            for entry_id, fields in _decode(entries):
                last = entry_id
                if fields.get("in_reply_to") == message_id:
                    return fields


def as_json(fields: dict[str, str]) -> str:
    """An outbox entry as one JSON line."""
    return json.dumps(fields, ensure_ascii=False)

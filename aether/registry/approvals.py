"""Approval requests: a tool call the operator's policy says to ``ask`` about.

Why: docs/design.md, "Tools". A request is ``ns:approval:<id>`` (a HASH, kept 30 days)
indexed by ``ns:approvals`` (a ZSET by the time it was asked). The agent's turn waits on
it; an operator answers through ``aether approvals approve|deny`` (or MCP); unanswered
past its deadline it is denied by ``timeout``. The first decision wins: two operators
answering at once, or an operator and the deadline, never both land (a WATCH'ed
transaction on the one key). Approvals are outside the rolled-back state: a rollback
of memory does not un-ask a question about the world.

A turn asks once: a request names the turn and call that asked (a digest of the session,
the inbox message, the call's place among the turn's same calls, the tool and its
arguments), and a turn run again after the daemon crashed gets the request it asked
before, pending or decided, instead of a second one the operator would have to tell
apart from an orphan. An approval lets its call start once (:meth:`Approvals.use`): a
call that had started before the crash is not run again unasked.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field
from redis.asyncio import Redis
from redis.exceptions import WatchError

from aether.codec import byte_map, text, texts
from aether.errors import ConflictError, NotFoundError
from aether.ids import check_id, new_id, resolve_prefix, shortest_prefixes
from aether.keys import Keyspace

__all__ = ["KEEP_S", "ApprovalRequest", "ApprovalStatus", "Approvals"]

KEEP_S = 30 * 86_400
PAGE = 200
RECENT = 1000
"""How many of the newest requests a turn run again looks through for its own."""
ApprovalStatus = Literal["pending", "approved", "denied"]


class ApprovalRequest(BaseModel):
    """One tool call waiting for, or given, the operator's decision."""

    id: str
    tool: str = Field(description="the tool the agent wants to call")
    arguments: dict[str, Any] = Field(default_factory=dict, description="its arguments")
    session: str = Field(default="", description="the chat session of the call")
    reason: str = Field(default="", description="why it asks: the policy rule that matched")
    requested_at: float
    expires_at: float = Field(description="unanswered by then, it is denied")
    status: ApprovalStatus = "pending"
    decided_by: str = Field(default="", description="who decided (an operator, or timeout)")
    decided_at: float | None = None
    note: str = Field(default="", description="the operator's reason for a denial")
    turn: str = Field(default="", description="a digest of the turn and call that asked")
    used_at: float | None = Field(
        default=None, description="when the approved call was started (once, at most)"
    )

    def expired(self, now: float) -> bool:
        """Pending and past its deadline (its waiter is gone or about to deny it)."""
        return self.status == "pending" and now >= self.expires_at


class Approvals:
    """The approval requests of one namespace.

    Args:
        client: the namespace's client.
        keys: its keyspace.
        clock: the time it is (a simulation injects its own).
    """

    def __init__(
        self, client: Redis, keys: Keyspace, clock: Callable[[], float] = time.time
    ) -> None:
        self.client = client
        self.keys = keys
        self.clock = clock

    async def request(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        session: str,
        reason: str,
        timeout_s: float,
        turn: str | None = None,
    ) -> ApprovalRequest:
        """Ask: a new pending request, answerable until ``timeout_s`` from now.

        Args:
            tool: the tool the agent wants to call.
            arguments: its arguments.
            session: the chat session of the call.
            reason: the policy rule that matched.
            timeout_s: how long the operator has to answer.
            turn: the turn and call asking (the inbox message's id and the call's place
                among the turn's same calls), when the turn can run again: a request it
                asked before for the same tool and arguments is returned as it stands
                (pending, approved or denied) instead of asking again.
        """
        digest = "" if turn is None else _turn_digest(session, turn, tool, arguments)
        if digest:
            earlier = await self._asked(digest)
            if earlier is not None:
                return earlier
        now = self.clock()
        request = ApprovalRequest(
            id=new_id(),
            tool=tool,
            arguments=arguments,
            session=session,
            reason=reason,
            requested_at=now,
            expires_at=now + timeout_s,
            turn=digest,
        )
        key = self.keys.approval(request.id)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping=_fields(request))  # type: ignore[arg-type]
            pipe.expire(key, KEEP_S)
            pipe.zadd(self.keys.approvals(), {request.id: now})
            pipe.zremrangebyscore(self.keys.approvals(), "-inf", now - KEEP_S)
            await pipe.execute()
        return request

    async def _asked(self, digest: str) -> ApprovalRequest | None:
        """The newest request of the turn and call ``digest`` names, if one is recent."""
        ids = texts(await self.client.zrevrange(self.keys.approvals(), 0, RECENT - 1))
        async with self.client.pipeline(transaction=False) as pipe:
            for approval_id in ids:
                pipe.hget(self.keys.approval(approval_id), "turn")
            turns = await pipe.execute()
        for approval_id, asked in zip(ids, turns, strict=True):
            if asked is not None and text(asked) == digest:
                with contextlib.suppress(NotFoundError):  # expired meanwhile: ask anew
                    return await self.get(approval_id)
        return None

    async def resolve(self, given: str) -> str:
        """The full id of the request ``given`` names (its id, or a prefix of 4+ characters).

        A prefix is matched among the pending requests first (what an operator answers),
        then among every request: a ULID's first characters are its date, shared by the
        requests of the same days.

        Raises:
            NotFoundError: no such request; AmbiguousIdError: the prefix names several.
            InvalidOperationError: a malformed id.
        """
        check_id(given, "id")
        if await self.client.exists(self.keys.approval(given)):
            return given
        pending = [r.id for r in await self.pending()]
        if any(i.startswith(given) for i in pending):
            return resolve_prefix(pending, given, "pending approval request")
        ids = texts(await self.client.zrange(self.keys.approvals(), 0, -1))
        try:
            return resolve_prefix(ids, given, "approval request")
        except NotFoundError as e:
            raise NotFoundError(f"no approval request {given!r}") from e

    async def prefixes(
        self,
        requests: builtins.list[ApprovalRequest],
        pending: builtins.list[str] | None = None,
    ) -> dict[str, str]:
        """The shortest prefix :meth:`resolve` takes for each request, by id.

        A pending request's is told apart from the other pending ones (matched first);
        a decided one's from every request.

        Args:
            requests: the requests to name.
            pending: the ids of every pending request, when the caller has read them.
        """
        if pending is None:
            pending = [r.id for r in await self.pending()]
        short = shortest_prefixes([r.id for r in requests if r.id in pending], pending)
        decided = [r.id for r in requests if r.id not in short]
        if not decided:
            return short
        everything = texts(await self.client.zrange(self.keys.approvals(), 0, -1))
        return short | shortest_prefixes(decided, everything)

    async def get(self, approval_id: str) -> ApprovalRequest:
        """One request (by id or unique prefix).

        Raises:
            NotFoundError: no such request (or it is older than 30 days).
            AmbiguousIdError: the prefix names several.
            InvalidOperationError: a malformed id.
        """
        approval_id = await self.resolve(approval_id)
        raw = byte_map(await self.client.hgetall(self.keys.approval(check_id(approval_id, "id"))))
        if not raw:
            raise NotFoundError(f"no approval request {approval_id!r}")
        return _parse(raw)

    async def list(
        self, status: ApprovalStatus | None = None, limit: int = 100
    ) -> builtins.list[ApprovalRequest]:
        """Requests, newest first (``status`` filters).

        Pending ones past their deadline are listed as pending: their waiter denies them.
        """
        ids = texts(await self.client.zrevrange(self.keys.approvals(), 0, -1))
        out: builtins.list[ApprovalRequest] = []
        for start in range(0, len(ids), PAGE):  # a page of requests per round trip
            async with self.client.pipeline(transaction=False) as pipe:
                for approval_id in ids[start : start + PAGE]:
                    pipe.hgetall(self.keys.approval(approval_id))
                found = await pipe.execute()
            for raw in map(byte_map, found):
                if not raw:
                    continue
                request = _parse(raw)
                if status is None or request.status == status:
                    out.append(request)
                    if len(out) >= limit:
                        return out
        return out

    async def pending(self, session: str | None = None) -> builtins.list[ApprovalRequest]:
        """Requests still waiting for a decision (of one session, if given)."""
        now = self.clock()
        return [
            r
            for r in await self.list("pending", limit=1000)
            if not r.expired(now) and (session is None or r.session == session)
        ]

    async def decide(
        self, approval_id: str, *, approve: bool, by: str, note: str = ""
    ) -> ApprovalRequest:
        """Approve or deny a pending request (by id or unique prefix); the first decision wins.

        Raises:
            NotFoundError: no such request.
            AmbiguousIdError: the prefix names several.
            ConflictError: it was decided already, or its deadline passed (it is then
                denied by ``timeout``, which is returned by the waiter).
        """
        approval_id = await self.resolve(approval_id)
        key = self.keys.approval(approval_id)
        async with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    raw = byte_map(await pipe.hgetall(key))
                    if not raw:
                        raise NotFoundError(f"no approval request {approval_id!r}")
                    request = _parse(raw)
                    now = self.clock()
                    if request.status != "pending":
                        raise ConflictError(
                            f"approval {approval_id} was {request.status} already "
                            f"(by {request.decided_by})"
                        )
                    if request.expired(now) and by != "timeout":
                        raise ConflictError(
                            f"approval {approval_id} expired: it is denied by timeout"
                        )
                    decided = request.model_copy(
                        update={
                            "status": "approved" if approve else "denied",
                            "decided_by": by,
                            "decided_at": now,
                            "note": note,
                        }
                    )
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.hset(key, mapping=_fields(decided))  # type: ignore[arg-type]
                    await pipe.execute()
                    return decided
                except WatchError:
                    continue

    async def use(self, approval_id: str) -> bool:
        """Record that an approved call starts; ``False`` when it was started before.

        An approval lets its call run once: a turn run again after a crash finds the
        request it asked before (:meth:`request`) and, if the call had started then,
        must not run it a second time unasked.
        """
        key = self.keys.approval(approval_id)
        async with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    if await pipe.hget(key, "used_at") or not await pipe.exists(key):
                        return False  # started before, or the request is gone (erased)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.hset(key, "used_at", str(self.clock()))
                    await pipe.execute()
                    return True
                except WatchError:
                    continue

    async def wait(self, approval_id: str, poll_s: float = 0.2) -> ApprovalRequest:
        """The decision on a request, waiting for it until its deadline.

        At the deadline it is denied by ``timeout``, unless an operator's decision lands
        first.
        """
        while True:
            request = await self.get(approval_id)
            if request.status != "pending":
                return request
            if request.expired(self.clock()):
                try:
                    return await self.decide(
                        approval_id, approve=False, by="timeout", note="no answer in time"
                    )
                except ConflictError:
                    continue  # an operator answered first: read their decision
            await asyncio.sleep(min(poll_s, max(0.01, request.expires_at - self.clock())))


def _turn_digest(session: str, turn: str, tool: str, arguments: dict[str, Any]) -> str:
    """What names one call of one turn (:meth:`Approvals.request`); no text of it."""
    call = json.dumps(arguments, sort_keys=True, default=str)
    return hashlib.sha256("\x00".join((session, turn, tool, call)).encode()).hexdigest()[:32]


def _fields(request: ApprovalRequest) -> dict[str, str]:
    data = request.model_dump(mode="json")
    return {
        k: json.dumps(v) if isinstance(v, dict) else "" if v is None else str(v)
        for k, v in data.items()
    }


def _parse(raw: dict[bytes, bytes]) -> ApprovalRequest:
    data: dict[str, Any] = {text(k): text(v) for k, v in raw.items()}
    data["arguments"] = json.loads(data.get("arguments") or "{}")
    data["decided_at"] = data.get("decided_at") or None
    data["used_at"] = data.get("used_at") or None
    return ApprovalRequest.model_validate(data)

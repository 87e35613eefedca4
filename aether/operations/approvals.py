"""Approval operations: the operator answers the agent's ``ask`` tool calls.

Never offered to the agent (it would approve itself). The CLI (``aether approvals``) and
MCP clients are the faces; the agent's turn waiting on a request sees the decision.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from aether.operations.base import Caller, operation
from aether.operations.parts import Parts
from aether.registry.approvals import ApprovalRequest

__all__ = ["approvals_approve", "approvals_deny", "approvals_list"]


class ListArgs(BaseModel):
    """Arguments of ``approvals_list``."""

    status: Literal["pending", "approved", "denied", "all"] = Field(
        default="pending", description="Which requests."
    )
    limit: int = Field(default=50, ge=1, le=1000, description="At most this many, newest first.")


class ApprovalList(BaseModel):
    """Approval requests, newest first."""

    approvals: list[ApprovalRequest]
    prefixes: dict[str, str] = Field(
        default_factory=dict,
        description="each request's shortest id prefix that approve and deny take",
    )


@operation(read_only=True, agent=False)
async def approvals_list(parts: Parts, caller: Caller, args: ListArgs) -> ApprovalList:
    """Tool calls the agent asked the operator about (pending ones by default)."""
    pending = None
    if args.status == "pending":
        every = await parts.approvals.pending()
        found, pending = every[: args.limit], [r.id for r in every]
    else:
        status = None if args.status == "all" else args.status
        found = await parts.approvals.list(status, limit=args.limit)
    prefixes = await parts.approvals.prefixes(found, pending=pending)
    return ApprovalList(approvals=found, prefixes=prefixes)


class ApproveArgs(BaseModel):
    """Arguments of ``approvals_approve``."""

    id: str = Field(description="The approval request's id (or a unique prefix of 4+ characters).")


@operation(read_only=False, agent=False)
async def approvals_approve(parts: Parts, caller: Caller, args: ApproveArgs) -> ApprovalRequest:
    """Let a pending tool call run; the agent's turn goes on with its result."""
    return await parts.approvals.decide(args.id, approve=True, by=caller.actor)


class DenyArgs(BaseModel):
    """Arguments of ``approvals_deny``."""

    id: str = Field(description="The approval request's id (or a unique prefix of 4+ characters).")
    reason: str = Field(
        default="", max_length=500, description="Why: the agent is told as the call's result."
    )


@operation(read_only=False, agent=False)
async def approvals_deny(parts: Parts, caller: Caller, args: DenyArgs) -> ApprovalRequest:
    """Refuse a pending tool call; the agent is told it was denied (and why)."""
    return await parts.approvals.decide(args.id, approve=False, by=caller.actor, note=args.reason)

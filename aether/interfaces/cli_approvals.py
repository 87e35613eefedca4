"""``aether approvals ...``: the operator answers the agent's ``ask`` tool calls.

Faces over ``aether.operations.approvals``.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

import typer

from aether.interfaces.common import (
    JsonOpt,
    about,
    arguments,
    call,
    call_in_zone,
    emit,
    group,
    local_time,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.operations import approvals as ops
from aether.registry.approvals import ApprovalRequest

approvals_app = group("Tool calls waiting for the operator: list, approve, deny.")


def _arguments(request: ApprovalRequest) -> str:
    shown = json.dumps(request.arguments, ensure_ascii=False)
    return shown if len(shown) <= 120 else shown[:117] + "..."


@approvals_app.command("list")
def approvals_list(
    ctx: typer.Context,
    status: Annotated[
        Literal["pending", "approved", "denied", "all"],
        typer.Option("--status", help=about(ops.ListArgs, "status")),
    ] = "pending",
    json_: JsonOpt = False,
) -> None:
    """Approval requests: pending ones by default, newest first.

    The id column shows each request's shortest prefix that approve and deny take.
    """
    found, zone = call_in_zone(ctx, ops.approvals_list, arguments(ctx, ops.ListArgs, status=status))
    columns: list[Column[ApprovalRequest]] = [
        Column("id", lambda r: found.prefixes.get(r.id, r.id), whole=True),
        Column("asked", lambda r: local_time(r.requested_at, zone)),
        Column("status", lambda r: r.status + (f" by {r.decided_by}" if r.decided_by else "")),
        Column("session", lambda r: r.session, whole=True),
        Column("tool", lambda r: r.tool, whole=True),
        Column("arguments", _arguments),
    ]
    data = [
        {**r.model_dump(mode="json"), "prefix": found.prefixes.get(r.id, r.id)}
        for r in found.approvals
    ]
    empty = "no pending approvals" if status == "pending" else "no approvals"
    emit_table(found.approvals, wants_json(ctx, json_), columns, data=data, empty=empty)


@approvals_app.command("approve")
def approvals_approve(ctx: typer.Context, approval_id: str, json_: JsonOpt = False) -> None:
    """Let a pending tool call run."""
    request = call(ctx, ops.approvals_approve, arguments(ctx, ops.ApproveArgs, id=approval_id))
    emit(
        request.model_dump(mode="json"),
        wants_json(ctx, json_),
        lambda: print(f"approved {request.id}: {request.tool}"),
    )


@approvals_app.command("deny")
def approvals_deny(
    ctx: typer.Context,
    approval_id: str,
    reason: Annotated[str, typer.Option("--reason", help=about(ops.DenyArgs, "reason"))] = "",
    json_: JsonOpt = False,
) -> None:
    """Refuse a pending tool call; the agent is told (with the reason)."""
    request = call(
        ctx, ops.approvals_deny, arguments(ctx, ops.DenyArgs, id=approval_id, reason=reason)
    )
    emit(
        request.model_dump(mode="json"),
        wants_json(ctx, json_),
        lambda: print(f"denied {request.id}: {request.tool}"),
    )

"""``aether approvals ...``: the operator answers the agent's ``ask`` tool calls.

Faces over ``aether.operations.approvals``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from aether.interfaces.commands import Out, command
from aether.interfaces.common import (
    group,
    local_time,
)
from aether.interfaces.tables import Column
from aether.operations import approvals as ops
from aether.registry.approvals import ApprovalRequest

approvals_app = group("Tool calls waiting for the operator: list, approve, deny.")


def _arguments(request: ApprovalRequest) -> str:
    shown = json.dumps(request.arguments, ensure_ascii=False)
    return shown if len(shown) <= 120 else shown[:117] + "..."


@command(approvals_app, "list", ops.approvals_list, zone=True)
def _requests(found: ops.ApprovalList, out: Out[ops.ApprovalList]) -> None:
    """Approval requests: pending ones by default, newest first.

    The id column shows each request's shortest prefix that approve and deny take.
    """
    columns: list[Column[ApprovalRequest]] = [
        Column("id", lambda r: found.prefixes.get(r.id, r.id), whole=True),
        Column("asked", lambda r: local_time(r.requested_at, out.zone)),
        Column("status", lambda r: r.status + (f" by {r.decided_by}" if r.decided_by else "")),
        Column("session", lambda r: r.session, whole=True),
        Column("tool", lambda r: r.tool, whole=True),
        Column("arguments", _arguments),
    ]
    data = [
        {**r.model_dump(mode="json"), "prefix": found.prefixes.get(r.id, r.id)}
        for r in found.approvals
    ]
    empty = "no pending approvals" if out.args.status == "pending" else "no approvals"
    out.table(found.approvals, columns, data=data, empty=empty)


def _decided(what: str) -> Callable[[ApprovalRequest, Out[ApprovalRequest]], None]:
    return lambda request, out: out.emit(request, f"{what} {request.id}: {request.tool}")


ID = {"id": "approval_id"}
command(
    approvals_app,
    "approve",
    ops.approvals_approve,
    positional=ID,
    help="Let a pending tool call run.",
)(_decided("approved"))
command(
    approvals_app,
    "deny",
    ops.approvals_deny,
    positional=ID,
    help="Refuse a pending tool call; the agent is told (with the reason).",
)(_decided("denied"))

"""Running the model's tool calls under the operator's policy and the turn's budgets.

Why: docs/design.md, "Tools". Per call, in order: the turn's guard (its budget of calls,
the same call repeated, failures in a row) may stop it; the policy allows, denies or
asks; an ``ask`` becomes an approval request the turn waits on (until the operator
answers or its deadline denies it); then the tool runs. Whatever happens is the call's
result for the model: a denied or stopped call is told why, so it can change course.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from aether.config import ToolSettings
from aether.registry.approvals import Approvals
from aether.runtime.llm import ToolCall, parse_arguments
from aether.runtime.tools.box import Toolbox, ToolRun
from aether.runtime.tools.policy import Policy

__all__ = ["ToolCaller", "TurnGuard"]

log = structlog.get_logger(__name__)


@dataclass
class TurnGuard:
    """The budgets of one turn (a message or a heartbeat).

    Attributes:
        max_calls: tool calls the turn may run.
        repeat_limit: the same call with the same arguments this often is refused.
        max_failures: failed calls in a row that end the turn.
        stop: why the turn must end now (the model then answers without tools).
    """

    max_calls: int
    repeat_limit: int
    max_failures: int
    calls: int = 0
    failures_in_row: int = 0
    stop: str | None = None
    seen: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(cls, settings: ToolSettings) -> TurnGuard:
        """A fresh guard with the configured budgets."""
        return cls(settings.max_calls, settings.repeat_limit, settings.max_failures)

    def refuse(self, call: ToolCall) -> str | None:
        """Why ``call`` may not run (``None``: it may)."""
        if self.stop is not None:
            return f"stopped: {self.stop}; answer with what you have"
        if self.calls >= self.max_calls:
            self.stop = f"this turn's budget of {self.max_calls} tool calls is spent"
            return f"stopped: {self.stop}; answer with what you have"
        key = self.key(call)
        self.seen[key] += 1
        if self.seen[key] >= self.repeat_limit:
            return (
                f"stopped: {call.name} was called {self.seen[key]} times with the same "
                "arguments; it is not run again: use the result you have or change the arguments"
            )
        return None

    @staticmethod
    def key(call: ToolCall) -> str:
        """What makes two calls the same call: the tool and its arguments, canonical."""
        return f"{call.name}\x00{_canonical(call.arguments)}"

    def record(self, run: ToolRun) -> None:
        """Count a call that ran (or was denied)."""
        self.calls += 1
        self.failures_in_row = 0 if run.success else self.failures_in_row + 1
        if self.failures_in_row >= self.max_failures and self.stop is None:
            self.stop = f"{self.failures_in_row} tool calls failed in a row"


class ToolCaller:
    """Executes the model's calls for one session.

    Args:
        toolbox: the tools.
        approvals: where ``ask`` requests go.
        settings: the approval timeout.
        session: the session the calls belong to.
        on_request: told (request id, tool) when a call waits for the operator.
    """

    def __init__(
        self,
        toolbox: Toolbox,
        approvals: Approvals,
        settings: ToolSettings,
        session: str,
        on_request: Callable[[str, str], None] | None = None,
    ) -> None:
        self.toolbox = toolbox
        self.approvals = approvals
        self.settings = settings
        self.session = session
        self.on_request = on_request

    async def run(
        self, call: ToolCall, policy: Policy, guard: TurnGuard, turn: str | None = None
    ) -> ToolRun:
        """One call, through the guard, the policy and (if asked) the operator.

        Args:
            call: the model's call.
            policy: the operator's policy.
            guard: the turn's budgets.
            turn: what the turn answers (an inbox message's id), when it can be run again:
                a turn run again after a crash then waits on the request it asked before
                (or acts on the decision given meanwhile) instead of asking anew.
        """
        run = await self._run(call, policy, guard, turn)
        run.call = call.call
        return run

    async def _run(
        self, call: ToolCall, policy: Policy, guard: TurnGuard, turn: str | None
    ) -> ToolRun:
        refused = guard.refuse(call)
        if refused is not None:
            return _not_run(call, refused, "stopped", None)
        tool = self.toolbox.get(call.name)
        if tool is None:  # unknown: the toolbox says so, nobody is asked
            run = await self.toolbox.run(call)
            guard.record(run)
            return run
        verdict = policy.decide(call.name)
        approval: dict[str, object] | None = None
        if verdict.decision == "deny":
            approval = {"decision": "denied", "by": "policy", "rule": verdict.rule}
            run = _not_run(
                call,
                f"denied: the operator's policy does not allow {call.name} ({verdict.rule})",
                "denied",
                approval,
                tool.server,
            )
            guard.record(run)
            return run
        if verdict.decision == "ask":
            try:
                arguments = parse_arguments(call.arguments)
            except Exception:  # noqa: BLE001 - malformed: the toolbox reports it, unasked
                arguments = None
            if arguments is not None:
                request = await self.approvals.request(
                    call.name,
                    arguments,
                    session=self.session,
                    reason=verdict.rule,
                    timeout_s=self.settings.approval_timeout_s,
                    turn=None if turn is None else f"{turn}\x00{guard.seen[guard.key(call)]}",
                )
                log.warning(
                    "a tool call waits for the operator's approval",
                    approval=request.id,
                    tool=call.name,
                    approve=f"aether approvals approve {request.id}",
                )
                if self.on_request is not None:
                    self.on_request(request.id, call.name)
                decided = await self.approvals.wait(request.id)
                approval = {"id": request.id, "decision": decided.status, "by": decided.decided_by}
                if decided.status != "approved":
                    why = f": {decided.note}" if decided.note else ""
                    run = _not_run(
                        call,
                        f"denied by {decided.decided_by}{why}",
                        "denied",
                        approval,
                        tool.server,
                    )
                    guard.record(run)
                    return run
                if not await self.approvals.use(request.id):  # it started before a crash
                    run = _not_run(
                        call,
                        f"not run again: approval {request.id} let this call start once, and"
                        " it started before the agent restarted (or the request is gone);"
                        " check what it did, and call it again if it must run once more",
                        "stopped",
                        approval,
                        tool.server,
                    )
                    guard.record(run)
                    return run
        run = await self.toolbox.run(call)
        if approval is None:
            approval = {"decision": "allowed", "by": "policy", "rule": verdict.rule}
        run.approval = approval
        guard.record(run)
        return run


def _not_run(
    call: ToolCall,
    output: str,
    outcome: str,
    approval: dict[str, object] | None,
    server: str = "?",
) -> ToolRun:
    try:
        arguments = parse_arguments(call.arguments)
    except Exception:  # noqa: BLE001 - shown as sent
        arguments = {}
    return ToolRun(
        call.id,
        call.name,
        arguments,
        output,
        False,
        0.0,
        outcome=outcome,
        approval=approval,
        server=server,
    )


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except ValueError:
        return arguments

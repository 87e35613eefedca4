"""The agent runtime: one conversational step at a time.

Why: docs/design.md, "Agent runtime, registry and ledger".

``step(message)``: the user's message goes to the chat session; the context is
assembled (identity, memory index, relevant memories, the session window); the
thresholds are applied; the LLM is called with the tools; each tool call is executed,
recorded as an episode and stored with its result; the final reply goes to the chat
session, and the thresholds are applied again. ``observe`` records a message without
calling the model (a conversation held elsewhere, a replay).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from aether.config import ModelWindow
from aether.context.assembly import AssembledContext, Budgets, Section
from aether.context.compression import ExtractiveSummarizer, LLMSummarizer, Summarizer
from aether.context.session import EnforceReport, SessionWindow
from aether.errors import AetherError, InvalidOperationError
from aether.identity.profile import Identity
from aether.identity.prompt import operator_zone
from aether.ids import check_id
from aether.memory.knowledge.archetypes import archetype
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.decisions import FailureMemory
from aether.memory.tiers.episodes import Episodes
from aether.memory.tiers.toolcache import ToolSchemaCache
from aether.messages import ChatMessage, ToolSchema
from aether.operations import Caller, Parts
from aether.registry.model import AgentLedger, new_entry
from aether.runtime.llm import Completion, LLMClient, ToolCall
from aether.runtime.on_parts import OnParts
from aether.runtime.tool_events import record_tool_events
from aether.runtime.tools import Tool, Toolbox, ToolRun, Workspace, builtin_tools
from aether.runtime.tools.calls import ToolCaller, TurnGuard
from aether.runtime.tools.policy import Policy, autonomy_mode
from aether.runtime.tools.selection import ToolRanker
from aether.runtime.tools.workspace import workspace_tools
from aether.tokens import count_message, count_tool_schemas

log = structlog.get_logger(__name__)

FAILED_OUTCOMES = frozenset({"error", "unavailable"})
"""How a tool call ends when it failed (a denial or a stop is a decision, not a failure)."""


@dataclass
class StepResult:
    """What one step did."""

    reply: str
    session: str
    tool_runs: list[ToolRun] = field(default_factory=list)
    llm_calls: int = 0
    actions: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    usage: float = 0.0
    context_tokens: int = 0
    memories: int = 0
    reports: list[EnforceReport] = field(default_factory=list)


class AgentRuntime(OnParts):
    """An agent: identity, memory, the context window of one session, an LLM and tools.

    Args:
        parts: the namespace's wired parts (``aether.app.Aether`` is one).
        session: the chat session this runtime talks in.
        llm: the model (``None``: ``step`` raises; everything else works).
        actor: who the journal says made the changes.
        ledger: where each model call (tokens, cost) and tool call is recorded, if anywhere.
        clock: the time messages are stamped with (default: the wall clock; a simulation
            injects its own).
        on_approval: told (request id, tool) when a call waits for the operator.
    """

    def __init__(
        self,
        parts: Parts,
        *,
        session: str = "main",
        llm: LLMClient | None = None,
        actor: str = "agent",
        ledger: AgentLedger | None = None,
        clock: Callable[[], float] = time.time,
        on_approval: Callable[[str, str], None] | None = None,
    ) -> None:
        self.parts = parts
        self.ledger = ledger
        self.clock = clock
        settings = parts.settings
        self.session = check_id(session, "session id")
        self.llm = llm
        self.actor = actor
        self.chats = ChatSessions(self.memory)
        self.episodes = Episodes(self.memory)
        self.window: ModelWindow = settings.context.window(llm.model if llm else settings.llm.model)
        summarizer: Summarizer = LLMSummarizer(llm) if llm else ExtractiveSummarizer()
        self._summarizer = summarizer
        self.toolbox = Toolbox()
        self.beliefs = parts.beliefs(llm)
        caller = Caller("agent", session=self.session, llm=llm, clock=clock)
        for tool in builtin_tools(parts, caller):
            self.toolbox.register(tool)
        self.memory_tools = frozenset(self.toolbox.names())
        self.workspace = Workspace(settings.workspace_dir, settings.tools)
        for name, description, parameters, handler in workspace_tools(
            self.workspace, archetype(settings.archetype).tools
        ):
            tool = Tool(name, description, parameters, handler, optional=True, server="workspace")
            self.toolbox.register(tool)
        self.tool_caller = ToolCaller(
            self.toolbox, parts.approvals, settings.tools, self.session, on_approval
        )
        self._ranker = ToolRanker(parts.memory.embedder)
        self._offered: list[ToolSchema] | None = None
        self._cached_schemas: list[ToolSchema] | None = None

    def register_tool(self, tool: Tool) -> None:
        """Add a tool the model may call.

        Raises:
            InvalidOperationError: a bad or taken name, or the tool schemas would exceed
                their share of the window.
        """
        budget = self.tools_budget
        cost = count_tool_schemas([*self.toolbox.required_schemas(), tool.schema()])
        if cost > budget:
            raise InvalidOperationError(
                f"tool schemas would take {cost} tokens, over their budget of {budget}"
            )
        self.toolbox.register(tool)

    @property
    def tools_budget(self) -> int:
        """The tokens the tool schemas of a request may take (their share of the window)."""
        return int(self.window.window_tokens * self.window.tools_share)

    def tool_schemas(self) -> list[ToolSchema]:
        """The tools a request declares: within :attr:`tools_budget`.

        The last turn's choice (:meth:`choose_tools`) once there is one.
        """
        if self._offered is not None:
            return self._offered
        return self.toolbox.offered(self.tools_budget)

    async def choose_tools(self, message: str) -> list[ToolSchema]:
        """The tools a turn about ``message`` is offered.

        All when they fit in their share, else the memory tools and the optional ones most
        relevant to it (``aether.runtime.tools.selection``).
        """
        budget = self.tools_budget
        if self.toolbox.fits(budget):
            self._offered = self.toolbox.schemas()
        else:
            ranking = await self._ranker.rank(self.toolbox.optional(), message)
            self._offered = self.toolbox.offered(budget, ranking)
        return self._offered

    async def policy(self, identity: Identity | None = None) -> Policy:
        """The operator's tool policy with the agent profile's autonomy mode.

        Args:
            identity: the identity as this step read it (default: read now).
        """
        identity = identity or await self.identity.load()
        try:
            mode = autonomy_mode(identity.agent.get("autonomy_mode"))
        except InvalidOperationError as e:
            log.warning("unknown autonomy mode; acting as supervised", error=str(e))
            mode = "supervised"
        return Policy(self.settings.tools, mode, self.memory_tools)

    async def session_window(self, identity: Identity | None = None) -> SessionWindow:
        """The session's window (the operator's time zone read from the identity).

        Args:
            identity: the identity as this step read it (default: read now).
        """
        identity = identity or await self.identity.load()
        return SessionWindow(
            self.memory,
            self.checkpoints,
            self.settings.context,
            self.window,
            self.session,
            self._summarizer,
            operator_zone(identity),
            self.actor,
        )

    async def observe(
        self,
        role: str,
        content: str,
        *,
        name: str | None = None,
        timestamp: datetime | float | None = None,
    ) -> EnforceReport:
        """Record a message without calling the model, then apply the thresholds."""
        await self.chats.append(self.session, role, content, name=name, timestamp=timestamp)
        window = await self.session_window()
        view = await window.view()
        budgets = Budgets.for_window(self.settings.context, self.window)
        ctx = await self.assembler.assemble("", budgets=budgets, view=view)
        # the system prompt, memory index and tools (no query: no memories)
        fixed = ctx.fixed_tokens + count_tool_schemas(self.tool_schemas())
        _, report = await window.enforce(fixed, view)
        return report

    async def context(self, query: str) -> tuple[AssembledContext, EnforceReport]:
        """The request for ``query`` with the thresholds applied to the session window."""
        identity = await self.identity.load()
        return await self._request(query, await self.session_window(identity), identity)

    async def _request(
        self,
        query: str,
        window: SessionWindow,
        identity: Identity,
        assembled: AssembledContext | None = None,
    ) -> tuple[AssembledContext, EnforceReport]:
        """The request for ``query``: the memory part assembled once, the history read now.

        Args:
            query: the user's message.
            window: the session's window.
            identity: the identity as this step read it.
            assembled: the context of an earlier tool round of the same message: its
                system prompt, index and memories are reused, only the history grows.
        """
        budgets = Budgets.for_window(self.settings.context, self.window)
        view = await window.view()
        stale = assembled is not None  # an earlier round's: its history is behind the window
        if assembled is None:
            when = datetime.fromtimestamp(self.clock(), UTC)
            assembled = await self.assembler.assemble(
                query, budgets=budgets, view=view, now=when, identity=identity
            )
        tools = count_tool_schemas(self.tool_schemas())
        sent, report = await window.enforce(assembled.fixed_tokens + tools, view)
        if not stale and sent is view:  # the history the assembler rendered is the one sent
            return assembled, report
        assembled.history_messages = sent.messages(window.zone)
        tokens = sum(count_message(m) for m in assembled.history_messages)
        assembled.history = Section("history", "", tokens, tokens, len(assembled.history_messages))
        return assembled, report

    async def step(self, message: str, *, ref: str | None = None) -> StepResult:
        """Answer one user message (see the module docs).

        ``ref`` names where the message came from (an inbox id): a message delivered
        again after a crash is then stored once, and answered from where it stood.

        Raises:
            LLMNotConfiguredError: no LLM is configured (nothing is written).
            LLMError: the model failed after its retries (the user's message is kept).
            InvalidOperationError: an empty or oversized message (nothing is written).
        """
        llm = LLMClient.require(self.llm)
        if not message.strip():
            raise InvalidOperationError("the message is empty")
        if len(message.encode()) > self.memory.settings.max_content_bytes:
            raise InvalidOperationError("the message is over the size limit")
        if ref is None or await self.chats.find_ref(self.session, ref) is None:
            await self.chats.append(self.session, "user", message, ref=ref, timestamp=self.clock())
        result = StepResult(reply="", session=self.session)
        schemas = await self.choose_tools(message)
        identity = await self.identity.load()  # once per step: every round reads this one
        policy = await self.policy(identity)
        window = await self.session_window(identity)
        guard = TurnGuard.of(self.settings.tools)
        if schemas != self._cached_schemas:
            await ToolSchemaCache(self.memory).set(self.session, schemas)
            self._cached_schemas = schemas
        reserve = int(self.window.window_tokens * self.window.reserve_share)
        fixed = 0
        rounds = self.settings.context.max_tool_rounds
        ctx: AssembledContext | None = None
        for round_ in range(rounds):
            ctx, report = await self._request(message, window, identity, ctx)
            self._collect(result, report)
            fixed = ctx.fixed_tokens + count_tool_schemas(schemas)
            result.context_tokens = ctx.tokens + count_tool_schemas(schemas)
            result.memories = len(ctx.chosen)
            last = round_ == rounds - 1 or guard.stop is not None
            started = time.perf_counter()
            completion = await llm.chat(
                ctx.messages(), tools=None if last else schemas or None, max_tokens=reserve
            )
            result.llm_calls += 1
            await self._ledger_llm(llm.model, completion, (time.perf_counter() - started) * 1000)
            if completion.tool_calls and not last:
                runs = [
                    await self.tool_caller.run(call, policy, guard, turn=ref)
                    for call in completion.tool_calls
                ]
                await self._record_tools(completion.content, completion.tool_calls, runs)
                for run in runs:
                    await self._ledger_tool(run)
                result.tool_runs += runs
                if guard.stop is not None:
                    log.warning(
                        "the turn's tools are stopped", session=self.session, why=guard.stop
                    )
                continue
            result.reply = completion.content
            break
        await self.chats.append(
            self.session,
            "assistant",
            result.reply,
            ref=f"reply:{ref}" if ref else None,
            timestamp=self.clock(),
        )
        # measured as the next request will be: the same system, memories and tools
        _, report = await window.enforce(fixed)
        self._collect(result, report)
        result.usage = report.usage_after
        log.info(
            "step",
            session=self.session,
            llm_calls=result.llm_calls,
            tools=len(result.tool_runs),
            usage=round(result.usage, 3),
            actions=result.actions,
        )
        return result

    async def _record_tools(self, content: str, calls: list[ToolCall], runs: list[ToolRun]) -> None:
        """Episodes for each run, then the calls and their results in one chat change."""
        for run in runs:
            await self.episodes.record(
                self.session,
                run.name,
                run.arguments,
                run.output,
                run.success,
                run.duration_ms,
                timestamp=self.clock(),
            )
        await record_tool_events(
            self.memory, archetype(self.parts.settings.archetype), self.session, runs, self.clock()
        )
        parts = [call.as_message_part() for call in calls]
        results = [
            ChatMessage(
                role="tool", tool_call_id=r.call_id, call=r.call, content=r.output, name=r.name
            )
            for r in runs
        ]
        await self.chats.append_tool_exchange(
            self.session, content, parts, results, timestamp=self.clock()
        )
        await self._record_failures(runs)

    async def _record_failures(self, runs: list[ToolRun]) -> None:
        """A tool call that failed is a failure of memory: repeated, it becomes a pattern.

        A pattern seen three times reaches every later context ("Known failure patterns"),
        so the agent learns which calls keep failing. Denials and stops are the operator's
        or the turn's decisions, not failures.
        """
        failures = FailureMemory(self.memory)
        for run in runs:
            if run.outcome not in FAILED_OUTCOMES:
                continue
            try:
                await failures.record(
                    f"{run.name}: {run.output}",
                    context=json.dumps(_clipped(run.arguments), default=str)[:1000],
                    now=self.clock(),
                )
            except AetherError as e:  # the turn goes on; the ledger has the call
                log.warning("a tool failure was not recorded", tool=run.name, error=str(e))

    async def _ledger_tool(self, run: ToolRun) -> None:
        """A ``tool_call`` entry: what ran where, how it ended, who allowed it, what changed."""
        changed = ", ".join(f"{c['action']} {c['path']}" for c in run.changes[:3])
        more = f" (+{len(run.changes) - 3} more)" if len(run.changes) > 3 else ""
        await self._ledger_append(
            "tool_call",
            summary=f"{run.name}: {run.outcome}" + (f"; {changed}{more}" if changed else ""),
            duration_ms=run.duration_ms,
            detail={
                "tool": run.name,
                "call": run.call,
                "call_id": run.call_id,
                "server": run.server,
                "arguments": _clipped(run.arguments),
                "outcome": run.outcome,
                "success": run.success,
                "approval": run.approval,
                "changes": run.changes[:100],
                "output": run.output[:500],
            },
        )

    async def _ledger_llm(self, model: str, completion: Completion, duration_ms: float) -> None:
        prices = self.settings
        cost = (
            completion.prompt_tokens * prices.llm.price_in_per_mtok
            + completion.completion_tokens * prices.llm.price_out_per_mtok
        ) / 1e6
        await self._ledger_append(
            "llm_call",
            model=model,
            duration_ms=duration_ms,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            cost_usd=round(cost, 8),
            summary=_llm_summary(model, completion),
        )

    async def _ledger_append(self, kind: str, **fields: Any) -> None:
        if self.ledger is not None:
            await self.ledger.append(
                new_entry(kind, actor=self.actor, session=self.session, **fields)
            )

    @staticmethod
    def _collect(result: StepResult, report: EnforceReport) -> None:
        result.actions += report.actions
        result.checkpoints += report.checkpoints
        result.reports.append(report)


def _llm_summary(model: str, completion: Completion) -> str:
    """What a model call was, in a line: the tools it asked for, or that it replied."""
    if completion.tool_calls:
        names = ", ".join(call.name for call in completion.tool_calls[:4])
        more = f" (+{len(completion.tool_calls) - 4})" if len(completion.tool_calls) > 4 else ""
        return f"{model} asked for {names}{more}"
    ended = "" if completion.finish_reason in ("", "stop") else f" ({completion.finish_reason})"
    return f"{model} replied{ended}"


def _clipped(arguments: dict[str, object], limit: int = 2000) -> dict[str, object]:
    """Arguments for the ledger: long values (a file's whole content) cut to ``limit``."""
    return {
        k: v[:limit] + f"[+{len(v) - limit} chars]" if isinstance(v, str) and len(v) > limit else v
        for k, v in arguments.items()
    }

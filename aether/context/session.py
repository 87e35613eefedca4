"""A session's in-flight context window: sliding limit, thresholds, compression, eviction.

The conversation itself is the chat session (every message is appended there as it
happens, and stays). The window is a view of its tail: the position of its first message,
the summary of what compression evicted, the thresholds already fired and an optional
per-message clip, all kept in the session hash (``context_*`` fields), so the window
survives restarts and a rollback restores it with the conversation.

Whatever leaves the window (the sliding limit or compression) is written to the daily
log in the same journaled change that moves the window, so it stays searchable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

import structlog

from aether.config import ContextSettings, ModelWindow
from aether.context.compression import Summarizer, message_text, speaker
from aether.context.thresholds import CRITICAL, PROACTIVE, WARNING, WARNING_TEXT, Thresholds
from aether.context.window import Unit, limit, render_units, unit_tokens, units
from aether.errors import AetherError
from aether.logging import log_once
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import DailyEntry
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.messages import ChatMessage
from aether.store.checkpointer import Checkpointer
from aether.store.state import Mutation
from aether.tokens import count_messages, truncate_to_tokens

log = structlog.get_logger(__name__)

EVICTED_TAG = "conversation"
TOOL_RESULT_CHARS = 500
MIN_CLIP_TOKENS = 32


@dataclass
class WindowView:
    """The window as it stands.

    Attributes:
        start: position in the chat session of the window's first message.
        summary: what compression folded away (empty when nothing was).
        flags: thresholds fired and not yet re-armed.
        clip: per-message token clip set by a hard compression (``None``: no clip).
        units: the window's units, oldest first.
    """

    start: int
    summary: str
    flags: set[str]
    clip: int | None
    units: list[Unit]

    def messages(self, zone: ZoneInfo) -> list[ChatMessage]:
        """The history as the chat API takes it: the summary first, then the units."""
        head = [ChatMessage(role="system", content=self.summary)] if self.summary else []
        return head + render_units(self.units, zone, self.clip)

    def after_newest(self) -> float | None:
        """A time just after the window's newest message (``None``: the window is empty).

        What a message the window itself adds (the threshold warning) is stamped with: the
        session is ordered by time, and a conversation replayed with its own timestamps
        (``observe``) or an agent on an injected clock is not at the wall clock's time. A
        warning stamped "now" sorted after every such message and stayed at the end of
        the history, one more with each crossing.
        """
        stamps = [float(m.get("timestamp") or 0) for unit in self.units for m in unit]
        return max(stamps) + 0.001 if stamps and max(stamps) > 0 else None

    def fields(self) -> dict[str, str]:
        """The session-hash fields that store this view."""
        return {
            "context_start": str(self.start),
            "context_summary": self.summary,
            "context_flags": ",".join(sorted(self.flags)),
            "context_clip": "" if self.clip is None else str(self.clip),
        }


@dataclass
class EnforceReport:
    """What enforcing the budget did."""

    usage_before: float
    usage_after: float
    actions: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    evicted: int = 0
    over_budget: bool = False


async def read_view(
    chats: ChatSessions, session: str, max_messages: int
) -> tuple[WindowView, list[Unit]]:
    """The window of ``session`` and the units the sliding limit drops (nothing written)."""
    state = await chats.window_state(session)
    start = int(state.get("context_start") or 0)
    clip_raw = state.get("context_clip") or ""
    view = WindowView(
        start=start,
        summary=state.get("context_summary", ""),
        flags={f for f in state.get("context_flags", "").split(",") if f},
        clip=int(clip_raw) if clip_raw else None,
        units=[],
    )
    stored = await chats.messages_from(session, start)
    kept, evicted = limit(units(stored), max_messages)
    view.units = kept
    if evicted:
        first = kept[0][0]["id"] if kept else None
        offset = next((i for i, m in enumerate(stored) if m["id"] == first), len(stored))
        view.start = start + offset
    return view, evicted


class SessionWindow:
    """The window of one chat session.

    Args:
        memory: the memory layer (evicted messages go to its daily log).
        checkpoints: for the 60 % and 85 % checkpoints.
        settings: the context settings (limit, thresholds, summary size).
        window: the model's window.
        session: the chat session id.
        summarizer: LLM or extractive.
        zone: the operator's time zone (for time stamps).
        actor: who the journal says made the changes.
    """

    def __init__(
        self,
        memory: MemoryLayer,
        checkpoints: Checkpointer,
        settings: ContextSettings,
        window: ModelWindow,
        session: str,
        summarizer: Summarizer,
        zone: ZoneInfo,
        actor: str = "agent",
    ) -> None:
        self.memory = memory
        self.chats = ChatSessions(memory)
        self.checkpoints = checkpoints
        self.settings = settings
        self.window = window
        self.session = session
        self.summarizer = summarizer
        self.zone = zone
        self.actor = actor
        self.thresholds = Thresholds.from_settings(settings)

    def usage(self, fixed_tokens: int, view: WindowView) -> float:
        """Used share of the model's window: ``fixed_tokens`` plus the history."""
        used = fixed_tokens + count_messages(view.messages(self.zone))
        return used / self.window.window_tokens

    async def view(self) -> WindowView:
        """The window now, with the sliding limit applied (and its evictions written)."""
        view, evicted = await read_view(
            self.chats, self.session, self.settings.max_history_messages
        )
        if evicted:
            await self._save(view, evicted, "context.slide")
        return view

    async def enforce(
        self, fixed_tokens: int, view: WindowView | None = None
    ) -> tuple[WindowView, EnforceReport]:
        """Apply the thresholds for a request whose non-history part costs ``fixed_tokens``.

        ``view``: the window as its caller just read it with :meth:`view` (else read here).
        Returns the window to send and what was done. Each action happens once per
        crossing; after a compression usage is checked to be under the proactive level.
        """
        view = view or await self.view()
        usage = self.usage(fixed_tokens, view)
        report = EnforceReport(usage_before=usage, usage_after=usage)
        actions, flags = self.thresholds.due(usage, view.flags)
        for action in actions:
            if action == PROACTIVE:
                await self._checkpoint("context-proactive", usage, report)
            elif action == WARNING:
                await self.chats.append(
                    self.session, "system", WARNING_TEXT, timestamp=view.after_newest()
                )
            elif action == CRITICAL:
                await self._checkpoint("context-critical", usage, report)
                view = await self._compress(await self.view(), fixed_tokens, report)
            report.actions.append(action)
        if flags != view.flags:
            view.flags = flags
            await self._save(view, [], "context.thresholds")
        if WARNING in actions:
            view = await self.view()
        report.usage_after = self.usage(fixed_tokens, view)
        return view, report

    async def compress(self, fixed_tokens: int) -> tuple[WindowView, EnforceReport]:
        """Force a compression now (as the critical threshold does, checkpoint first)."""
        view = await self.view()
        usage = self.usage(fixed_tokens, view)
        report = EnforceReport(usage_before=usage, usage_after=usage, actions=[CRITICAL])
        await self._checkpoint("context-compress", usage, report)
        view = await self._compress(view, fixed_tokens, report)
        report.usage_after = self.usage(fixed_tokens, view)
        return view, report

    async def _checkpoint(self, reason: str, usage: float, report: EnforceReport) -> None:
        try:
            cp = await self.checkpoints.create(
                label=f"context at {usage:.0%} in session {self.session}",
                reason=reason,
                actor=self.actor,
            )
            report.checkpoints.append(cp.id)
        except AetherError as e:
            self._warn_once(
                "checkpoint",
                "context checkpoint failed; the sliding window still bounds the context",
                error=str(e),
            )

    async def _compress(
        self, view: WindowView, fixed_tokens: int, report: EnforceReport
    ) -> WindowView:
        """Evict the oldest units into the summary until usage is under the target."""
        window_tokens = self.window.window_tokens
        target = int(self.settings.compress_to * window_tokens)
        summary_budget = min(self.settings.summary_max_tokens, max(50, window_tokens // 10))
        costs = [unit_tokens(u, self.zone) for u in view.units]
        remaining, cut = sum(costs), 0
        while cut < len(view.units) - 1 and fixed_tokens + summary_budget + remaining > target:
            remaining -= costs[cut]
            cut += 1
        evicted, kept = view.units[:cut], view.units[cut:]
        summary = view.summary
        if evicted:
            flat = [m for unit in evicted for m in unit]
            summary = await self.summarizer.summarize(view.summary, flat, summary_budget)
        new = WindowView(view.start + sum(len(u) for u in evicted), summary, set(), None, kept)
        # the check the issue asks for: under the proactive level, or compress harder
        ceiling = self.thresholds.proactive
        if self.usage(fixed_tokens, new) >= ceiling and new.summary:
            new.summary = truncate_to_tokens(new.summary, summary_budget // 4)
        if self.usage(fixed_tokens, new) >= ceiling:
            messages = max(1, sum(len(u) for u in new.units))
            room = int(ceiling * window_tokens * 0.9) - fixed_tokens - summary_budget // 4
            new.clip = max(MIN_CLIP_TOKENS, room // messages)
        if self.usage(fixed_tokens, new) >= ceiling:
            report.over_budget = True
            self._warn_once(
                "over",
                "context still over the proactive level after compression; "
                "the system prompt, tools and memories alone are too large",
                fixed_tokens=fixed_tokens,
                window=window_tokens,
            )
        report.evicted += sum(len(u) for u in evicted)
        await self._save(new, evicted, "context.compress")
        return new

    async def _save(self, view: WindowView, evicted: list[Unit], reason: str) -> None:
        """Store the view, and write ``evicted`` to the daily log, in one change."""
        m = Mutation()
        docs = self._memory_docs(evicted)
        if docs:
            await self.memory.attach_embeddings(docs)
            m = DailyLog(self.memory).mutation(docs)
        self.chats.window_state_ops(m, self.session, view.fields())
        await self.memory.store.apply(m, reason, self.actor)

    def _memory_docs(self, evicted: list[Unit]) -> list[DailyEntry]:
        """Daily entries for evicted messages: one per message, one per tool call."""
        limit_bytes = self.memory.settings.max_content_bytes
        docs: list[DailyEntry] = []
        for unit in evicted:
            head = unit[0]
            role = head.get("role")
            if role == "system":
                continue
            if head.get("tool_calls"):
                lines = []
                for call, result in zip(head["tool_calls"], unit[1:], strict=False):
                    fn = call.get("function", {})
                    out = str(result.get("content", ""))[:TOOL_RESULT_CHARS]
                    lines.append(f"called {fn.get('name')}({fn.get('arguments', '')}) -> {out}")
                text = "\n".join(([message_text(head)] if head.get("content") else []) + lines)
                speaker_tag = "tool"
            else:
                text = message_text(head)
                speaker_tag = speaker(head).lower()
            text = text.encode()[:limit_bytes].decode(errors="ignore").strip()
            if not text:
                continue
            docs.append(
                build_entry(
                    self.memory,
                    text,
                    source="user" if role == "user" else "agent",
                    tags=[EVICTED_TAG, speaker_tag[:64]],
                    session=self.session,
                    timestamp=float(head.get("timestamp") or 0) or None,
                )
            )
        return docs

    def _warn_once(self, what: str, message: str, **fields: Any) -> None:
        log_once(log, f"session-window:{what}", message, session=self.session, **fields)

"""Context assembly: what the model is sent for one query, each section within its budget.

Sections, in the order they are filled: the identity system prompt, the memory index
(the topics memory holds), the history of the session (standalone: its newest messages
and the older ones of its window that hold the query, :mod:`aether.context.history`),
then relevant memories, which also get whatever the other sections leave unused.
Memories come from hybrid search and are ranked as docs/design.md ("Context assembly and
scoring") says: relevance, recency with exponential decay, importance (a belief's
confidence, else the entry's score), times an outcome factor (success 1.2, failure 0.8).

Two ways to budget (see :class:`Budgets`): standalone (``aether context preview``, MCP,
benchmarks) splits ``max_tokens`` itself; inside the agent runtime the model's window
decides, and the history is the session window as the thresholds left it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import structlog

from aether.config import BeliefSettings, ContextSettings, ModelWindow, Settings
from aether.context.history import history_units
from aether.context.relational import graph_context
from aether.context.session import WindowView, read_view
from aether.context.window import render_units, unit_tokens
from aether.errors import AetherError, InvalidOperationError
from aether.identity.bootstrap import default_identity_dir
from aether.identity.profile import Identity, IdentityStore
from aether.identity.prompt import build_system_prompt, operator_zone
from aether.logging import log_once
from aether.memory.knowledge.archetypes import archetype
from aether.memory.knowledge.archetypes.base import Archetype
from aether.memory.knowledge.beliefs import effective_confidence
from aether.memory.retrieval.hit import SearchHit
from aether.memory.retrieval.recency import decay
from aether.memory.retrieval.search import MemorySearch
from aether.memory.retrieval.text import best_passage, coverage, query_tokens, sentences, words
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import MemoryDoc
from aether.memory.storage.status import INACTIVE
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.memory_index import MemoryIndex
from aether.messages import ChatMessage
from aether.tokens import count_message, count_messages, count_tokens, truncate_to_tokens

log = structlog.get_logger(__name__)

STANDALONE_SYSTEM = 0.15
STANDALONE_INDEX = 0.15
STANDALONE_HISTORY = 0.15
OUTCOME_FACTOR = {"success": 1.2, "failure": 0.8}
# A remembered statement's log entry is represented by the beliefs drawn from it (which
# carry confidence, supersession and forgetting); the raw entry stays out of contexts.
REMEMBER_TAG = "remember"
MEMORIES_HEADER = "# Relevant memories"
INDEX_HEADER = "# Memory index"
GRAPH_HEADER = "# Memory graph"
MIN_MAX_TOKENS = 64


@dataclass(frozen=True)
class Budgets:
    """Token budgets of the sections. ``history=None``: history is given, never cut."""

    total: int
    system: int
    index: int
    memories: int
    history: int | None

    @classmethod
    def standalone(cls, max_tokens: int, settings: ContextSettings) -> Budgets:
        """``max_tokens`` split: system 15 %, index 15 % (capped), history 15 %, the rest."""
        index = min(settings.index_max_tokens, int(max_tokens * STANDALONE_INDEX))
        system = int(max_tokens * STANDALONE_SYSTEM)
        history = int(max_tokens * STANDALONE_HISTORY)
        return cls(max_tokens, system, index, max_tokens - system - index - history, history)

    @classmethod
    def for_window(cls, settings: ContextSettings, window: ModelWindow) -> Budgets:
        """The runtime's budgets: shares of the model's window (tools and reserve apart)."""
        w = window.window_tokens
        memory = int(w * settings.memory_share)
        index = min(settings.index_max_tokens, memory // 3)
        total = int(w * (1 - window.tools_share - window.reserve_share))
        return cls(total, int(w * window.system_share), index, memory - index, None)


@dataclass(frozen=True)
class Section:
    """One section of an assembled context."""

    name: str
    text: str
    tokens: int
    budget: int
    items: int = 0


@dataclass(frozen=True)
class ScoredMemory:
    """A memory chosen for the context, with the parts of its score."""

    key: str
    content: str
    score: float
    relevance: float
    recency: float
    importance: float
    doc: MemoryDoc = field(repr=False, default_factory=lambda: MemoryDoc())
    uncertain: bool = False
    question: bool = False
    """A belief under the uncertain tier: shown as an open question to confirm."""
    earlier: bool = False
    """A newer memory states a different value of the same thing (shown as earlier)."""


@dataclass
class AssembledContext:
    """The context for one query."""

    query: str
    max_tokens: int
    system: Section
    index: Section
    memories: Section
    history: Section
    history_messages: list[ChatMessage]
    chosen: list[ScoredMemory]
    graph: Section = field(default_factory=lambda: Section("graph", "", 0, 0))

    def system_message(self) -> ChatMessage:
        """Identity, memory index, memory graph and relevant memories, as one message."""
        parts = [self.system.text]
        if self.index.text:
            parts.append(f"{INDEX_HEADER}\n{self.index.text}")
        if self.graph.text:
            parts.append(f"{GRAPH_HEADER}\n{self.graph.text}")
        if self.memories.text:
            parts.append(f"{MEMORIES_HEADER}\n{self.memories.text}")
        return {"role": "system", "content": "\n\n".join(p for p in parts if p)}

    def messages(self) -> list[ChatMessage]:
        """What is sent to the model (before the tools)."""
        return [self.system_message(), *self.history_messages]

    @property
    def tokens(self) -> int:
        """Tokens of :meth:`messages`."""
        return count_messages(self.messages())

    @property
    def fixed_tokens(self) -> int:
        """Tokens of everything but the history."""
        return count_messages([self.system_message()])

    def sections(self) -> list[Section]:
        """The sections, in order."""
        return [self.system, self.index, self.history, self.graph, self.memories]

    def text(self) -> str:
        """The whole context as plain text (for people and for recall checks)."""
        lines = [str(self.system_message()["content"])]
        for m in self.history_messages:
            lines.append(f"[{m['role']}] {m.get('content') or ''}")
        return "\n\n".join(lines)


def _match(hit: SearchHit) -> float:
    """The hit's match to the query without search's recency (this module adds its own)."""
    return hit.match if hit.match is not None else hit.relevance


def score_memory(
    hit: SearchHit,
    top_relevance: float,
    now: float,
    settings: ContextSettings,
    half_life_days: float,
    beliefs: BeliefSettings,
) -> ScoredMemory | None:
    """Seed 000's scoring of one search hit.

    A belief's importance is its effective confidence (the confidence tiers: from 0.8 it is
    known, from 0.5 it enters marked uncertain, below it is an open question). An open
    question enters only when it is the best match for the query, marked as a question to
    confirm: a fact told once and never repeated decays under 0.5 in eight days, and
    hiding it would leave the model with nothing, or with an older value elsewhere.
    ``None``: an open question that is not the best match.
    """
    doc = hit.doc
    relevance = _match(hit) / top_relevance if top_relevance > 0 else 0.0
    recency = decay(now - float(doc.get("timestamp", now)), half_life_days)
    uncertain = question = False
    if doc.get("kind") == "belief":
        # to 3 decimals: a belief just reinforced to 0.8 is "known", not a hair under it
        importance = round(effective_confidence(doc, now, beliefs.half_life_days), 3)
        question = importance < beliefs.uncertain_at
        if question and relevance < 1.0:
            return None
        uncertain = importance < beliefs.context_at
    else:
        importance = float(doc.get("score", 0.5) or 0.0)
    score = (
        settings.relevance_weight * relevance
        + settings.recency_weight * recency
        + settings.importance_weight * importance
    )
    score *= OUTCOME_FACTOR.get(str(doc.get("outcome", "")), 1.0)
    return ScoredMemory(
        hit.key,
        hit.content,
        round(score, 6),
        round(relevance, 6),
        round(recency, 6),
        round(importance, 6),
        doc,
        uncertain and not question,
        question,
        hit.earlier,
    )


def memory_day(memory: ScoredMemory) -> str:
    """The UTC day a memory was made, as the context writes it (``[2026-11-26]``)."""
    stamp = float(memory.doc.get("timestamp", 0))
    return datetime.fromtimestamp(stamp, tz=UTC).strftime("[%Y-%m-%d]")


EXCERPT_MARK = " … "
"""Joins a long memory's head to the passage of it that matches the query."""
MIN_HEAD_TOKENS = 20
"""Below this many tokens left for a long memory's head, its matching passage shows alone."""


def excerpt(content: str, query: Sequence[str], max_tokens: int) -> str | None:
    """What a context shows of a long memory: its head, then the passage that matches.

    A long message (a reply of several thousand characters) cut at its head loses what
    it was found for when the query's words lie further in. Its windows
    (:func:`~aether.memory.retrieval.text.best_passage`) are what search covered the
    query with; the one holding most of the query's words is shown after the head's
    first tokens, so the model reads both what the message is about and what answers.

    Args:
        content: the memory's text.
        query: the query's meaningful words (``search.query_tokens``).
        max_tokens: the most the excerpt may take.

    Returns:
        The excerpt, or ``None`` when the head is all there is to show: the text fits,
        its best window opens it, or no window holds a word of the query.
    """
    text = " ".join(content.split())
    if count_tokens(text) <= max_tokens:
        return None
    passage, covered = best_passage(query, content)
    window = " ".join(passage.split())
    if covered == 0.0 or text.startswith(window):
        return None
    window = " ".join(_from_a_word(content, passage).split())
    room = max_tokens - count_tokens(window) - count_tokens(EXCERPT_MARK)
    if room < MIN_HEAD_TOKENS:
        mark = EXCERPT_MARK.lstrip()
        return mark + focus(window, query, max_tokens - count_tokens(mark))
    return truncate_to_tokens(truncate_to_tokens(text, room) + EXCERPT_MARK + window, max_tokens)


def _from_a_word(content: str, passage: str) -> str:
    """``passage`` without the piece of a word its cut left at its start, if any.

    A window starts a fixed overlap before the previous one ended, which may fall inside
    a word ("…cy cache" for "latency cache"); shown to a model, the piece is noise.
    """
    start = content.find(passage)
    if start <= 0 or not (content[start - 1].isalnum() and passage[:1].isalnum()):
        return passage
    space = next((i for i, char in enumerate(passage) if char.isspace()), len(passage))
    return passage[space:].lstrip() or passage


def focus(window: str, query: Sequence[str], max_tokens: int) -> str:
    """The part of ``window`` that holds the query's words, in at most ``max_tokens``.

    A window (about 250 tokens) may be more than a small context gives one memory; cut at
    its head, it can lose the very sentence that matched, which may sit at its end. So the
    sentence holding most of the query's words is kept (the first of equals), and the
    sentences around it are added while they fit, the one holding more of the query's
    words first, then the one after it: what follows a statement usually explains it.

    Args:
        window: the passage, whitespace already joined.
        query: the query's meaningful words (``search.query_tokens``).
        max_tokens: the most the part may take.
    """
    if count_tokens(window) <= max_tokens:
        return window
    parts = sentences(window)
    if not parts:
        return truncate_to_tokens(window, max_tokens)
    held = [coverage(query, words(part)) for part in parts]
    first = last = max(range(len(parts)), key=lambda i: (held[i], -i))
    used = count_tokens(parts[first])
    if used >= max_tokens:
        return truncate_to_tokens(parts[first], max_tokens)
    while True:
        around = [i for i in (last + 1, first - 1) if 0 <= i < len(parts)]
        around.sort(key=lambda i: -held[i])  # stable: the sentence after wins a tie
        grown = False
        for i in around:
            cost = count_tokens(parts[i]) + 1
            if used + cost <= max_tokens:
                used += cost
                first, last = min(first, i), max(last, i)
                grown = True
                break
        if not grown:
            return truncate_to_tokens(" ".join(parts[first : last + 1]), max_tokens)


def memory_line(memory: ScoredMemory, max_tokens: int, query: Sequence[str] = ()) -> str:
    """One memory as a context line under its day: ``- (kind) content``.

    A memory longer than ``max_tokens`` is cut at its head, or shows its head and the
    passage that matches ``query`` (the query's meaningful words; :func:`excerpt`).
    """
    doc = memory.doc
    kind = doc.get("kind", "")
    labels = [] if kind == "daily" else [f"({kind})"]
    if memory.uncertain:
        labels.append("(uncertain)")
    if memory.question:
        labels.append("(open question: still true?)")
    if memory.earlier:
        labels.append("(earlier: a later memory differs)")
    line = " ".join(["-", *labels, " ".join(memory.content.split())])
    if count_tokens(line) <= max_tokens:
        return line
    head = " ".join(["-", *labels, ""])
    cut = excerpt(memory.content, query, max_tokens - count_tokens(head))
    return truncate_to_tokens(line if cut is None else head + cut, max_tokens)


def render_memories(chosen: list[ScoredMemory], max_tokens: int, query: Sequence[str] = ()) -> str:
    """The chosen memories as a timeline: each day written once, days and memories in time.

    A date on every line costs about seven tokens a memory, and a context's memories fall
    on a few days: each day is written once (docs/decisions/0005-figures-behind-the-rules.md
    has what that saves). Time order, not score order, because the
    memories are chosen by score already, and in time order the model reads a later
    statement after the earlier one it replaces, as the history reads.
    """
    return _timeline([(m, memory_day(m), memory_line(m, max_tokens, query)) for m in chosen])


def _timeline(rows: list[tuple[ScoredMemory, str, str]]) -> str:
    """:func:`render_memories` of (memory, its day, its line), each computed once."""
    lines: list[str] = []
    current = ""
    for _, day, line in sorted(rows, key=lambda row: float(row[0].doc.get("timestamp", 0))):
        if day != current:
            current = day
            lines.append(day)
        lines.append(line)
    return "\n".join(lines)


def _per_item(budget: int) -> int:
    """The most one memory may take of the memories' budget."""
    return max(40, budget // 4)


class ContextAssembler:
    """Builds contexts for one namespace.

    Args:
        memory: the memory layer.
        identity: the identity store (the system prompt is built from Redis).
        settings: the context settings.
        search: the memory search (default: a new one over ``memory``).
        beliefs: the belief tiers (default: 0.8 known, 0.5 uncertain).
        archetype: its strategy splits the memory budget into recent events, entities,
            relations (the memory graph) and semantic hits; ``None``: semantic only.
        identity_dir: before the first bootstrap, the identity is read from here (and
            nothing is written); ``None``: Redis only.
    """

    def __init__(
        self,
        memory: MemoryLayer,
        identity: IdentityStore,
        settings: ContextSettings,
        search: MemorySearch | None = None,
        beliefs: BeliefSettings | None = None,
        archetype: Archetype | None = None,
        identity_dir: Path | None = None,
    ) -> None:
        self.archetype = archetype
        self.identity_dir = identity_dir
        self.memory = memory
        self.beliefs = beliefs or BeliefSettings()
        self.identity = identity
        self.settings = settings
        self.search = search or MemorySearch(memory)
        self.index = MemoryIndex(memory)
        self.chats = ChatSessions(memory)

    @classmethod
    def configured(
        cls, memory: MemoryLayer, identity: IdentityStore, search: MemorySearch, settings: Settings
    ) -> ContextAssembler:
        """The assembler the settings describe: context budgets, belief tiers, archetype."""
        return cls(
            memory,
            identity,
            settings.context,
            search,
            settings.beliefs,
            archetype(settings.archetype),
            settings.identity_dir or default_identity_dir(),
        )

    async def assemble(
        self,
        query: str,
        max_tokens: int | None = None,
        *,
        session: str | None = None,
        budgets: Budgets | None = None,
        view: WindowView | None = None,
        now: datetime | None = None,
        identity: Identity | None = None,
    ) -> AssembledContext:
        """The context for ``query``.

        Args:
            query: what the context is for (the user's message, a question).
            max_tokens: the standalone budget (ignored when ``budgets`` is given).
            session: a chat session whose history to include (standalone: its newest
                messages and those that hold the query, :mod:`aether.context.history`).
            budgets: explicit budgets (the runtime's).
            view: the session window to use as the history, whole (the runtime's).
            now: the current time (injected in tests).
            identity: the identity as the caller read it (the runtime's step reads it once).

        Raises:
            InvalidOperationError: no budget, or one too small to hold anything.
            IdentityError: no identity has been bootstrapped.
        """
        if budgets is None:
            if max_tokens is None:
                raise InvalidOperationError("give max_tokens or budgets")
            if max_tokens < MIN_MAX_TOKENS:
                raise InvalidOperationError(f"max_tokens must be at least {MIN_MAX_TOKENS}")
            budgets = Budgets.standalone(max_tokens, self.settings)
        when = now or datetime.now(UTC)
        if identity is None:  # before the first bootstrap, the folder's: a read never writes
            identity = (
                await self.identity.current(self.identity_dir)
                if self.identity_dir is not None
                else await self.identity.load()
            )
        zone = operator_zone(identity)
        prompt = build_system_prompt(identity, budgets.system, when)
        system = Section("system", prompt.text, prompt.tokens, budgets.system)
        table = await self.index.read(budgets.index)
        index = Section("index", table.text, table.tokens, budgets.index, table.rows)
        tokens = query_tokens(query)  # the query's meaningful words, read once
        history_messages, history = await self._history(session, view, budgets, zone, tokens)
        empty = Section("memories", "", 0, 0)
        ctx = AssembledContext(
            query, budgets.total, system, index, empty, history, history_messages, []
        )
        room = budgets.total - ctx.tokens - count_tokens(MEMORIES_HEADER) - 4
        if budgets.history is None:
            room = min(room, budgets.memories)
        if self.archetype is not None and room > 0:
            share = 100 - self.archetype.strategy.budget["semantic"]
            found = await graph_context(
                self.memory, self.archetype, query, room * share // 100, session, when.timestamp()
            )
            if found.text:
                ctx.graph = Section(
                    "graph",
                    found.text,
                    found.tokens,
                    room * share // 100,
                    sum(found.counts.values()),
                )
                room -= found.tokens + count_tokens(GRAPH_HEADER) + 4
        ctx.memories, ctx.chosen = await self._memories(
            query, tokens, room, history_messages, when.timestamp()
        )
        while ctx.chosen and ctx.tokens > budgets.total and budgets.history is not None:
            ctx.chosen.pop()  # the least scored
            text = render_memories(ctx.chosen, _per_item(room), tokens)
            ctx.memories = Section("memories", text, count_tokens(text), room, len(ctx.chosen))
        return ctx

    async def _history(
        self,
        session: str | None,
        view: WindowView | None,
        budgets: Budgets,
        zone: ZoneInfo,
        query_words: list[str],
    ) -> tuple[list[ChatMessage], Section]:
        if view is not None:
            messages = view.messages(zone)
            tokens = sum(count_message(m) for m in messages)
            return messages, Section("history", "", tokens, tokens, len(messages))
        budget = budgets.history or 0
        if session is None or budget <= 0:
            return [], Section("history", "", 0, budget)
        found, _ = await read_view(self.chats, session, self.settings.max_history_messages)
        kept, used = history_units(
            found.units,
            budget,
            lambda unit: unit_tokens(unit, zone, found.clip),
            query_words,
            self.memory.settings.min_coverage,
        )
        messages = render_units(kept, zone, found.clip)
        summary_cost = count_message({"role": "system", "content": found.summary})
        if found.summary and used + summary_cost <= budget:
            messages.insert(0, {"role": "system", "content": found.summary})
            used += summary_cost
        return messages, Section("history", "", used, budget, len(messages))

    async def _memories(
        self,
        query: str,
        tokens: list[str],
        budget: int,
        history: list[ChatMessage],
        now: float,
    ) -> tuple[Section, list[ScoredMemory]]:
        if budget <= 8 or not query.strip():
            return Section("memories", "", 0, max(0, budget)), []
        limit = max(5, min(50, budget // 40))
        try:
            hits = await self.search.search(query, limit=limit, now=now)
        except InvalidOperationError:
            raise
        except AetherError as e:
            log_once(
                log,
                "assembly-search",
                "memory search failed; context assembled without memories",
                error=str(e),
            )
            return Section("memories", "", 0, budget), []
        shown = " ".join(" ".join(str(m.get("content") or "").split()) for m in history)
        visible = [
            h
            for h in hits
            if h.doc.get("status") not in INACTIVE
            and not (h.doc.get("kind") == "daily" and REMEMBER_TAG in (h.doc.get("tags") or []))
        ]
        top = max((_match(h) for h in visible), default=0.0)
        visible = [h for h in visible if _match(h) >= self.settings.min_relevance * top]
        half_life = self.memory.settings.recency_half_life_days
        scoring = (top, now, self.settings, half_life, self.beliefs)
        scored = [m for h in visible if (m := score_memory(h, *scoring))]
        scored.sort(key=lambda m: m.score, reverse=True)
        per_item = _per_item(budget)
        rows: list[tuple[ScoredMemory, str, str]] = []
        used = 0
        taken: set[str] = set()
        days: set[str] = set()
        for memory in scored:
            said = " ".join(memory.content.split())
            if said in shown or said in taken:
                continue  # already in the history, or the same words as a chosen memory
            day, line = memory_day(memory), memory_line(memory, per_item, tokens)
            cost = count_tokens(line) + 1
            if day not in days:
                cost += count_tokens(day) + 1
            if used + cost > budget:
                continue
            rows.append((memory, day, line))
            taken.add(said)
            days.add(day)
            used += cost
        chosen = [memory for memory, _, _ in rows]
        text = _timeline(rows)
        return Section(
            "memories", text, count_tokens(text) if text else 0, budget, len(chosen)
        ), chosen

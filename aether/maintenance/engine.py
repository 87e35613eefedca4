"""The maintenance engine: compression, pruning, learning and reflection (docs/design.md).

Steps, in order, each reporting what it did (or, with ``dry_run``, would do):

1. ``compress_daily``: days older than the retention (7 days) become one long-term
   digest each (LLM summary, or extractive), keeping the source entry ids; then the
   day's entries are deleted. A checkpoint is taken first.
2. ``prune_checkpoints``: keep the newest 50.
3. ``scratchpad_ttls``: every scratchpad must expire; one without a TTL gets the default.
4. ``reflect``: distill the daily entries written since the last reflection into
   long-term memories (LLM: one lasting fact per line; otherwise one extractive note).
5. ``beliefs``: prune beliefs whose decayed confidence fell under 0.1 (decay itself is
   computed at read time). A checkpoint is taken first.
6. ``scoped_indexes``: a vector index of its own for each of the largest tags, those more
   memories carry than a filtered search brute-forces (``memory.scoped_indexes``), and
   the indexes of tags that shrank dropped (:mod:`aether.memory.storage.scoped_indexes`).
   No key changes.

A run holds ``ns:lock:job:maintenance.running`` so two never overlap (a daemon's
scheduled run and a person's ``aether maintenance run``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import structlog

from aether.checkpoints.manager import Checkpoints
from aether.codec import text
from aether.config import BeliefSettings
from aether.context.compression import ExtractiveSummarizer
from aether.errors import LLMError
from aether.memory.knowledge.beliefs import REMEMBER_TAG, Beliefs
from aether.memory.knowledge.learner import ConversationLearner
from aether.memory.retrieval.filter_size import brute_force_max
from aether.memory.retrieval.search import MemorySearch
from aether.memory.retrieval.vector_source import RedisVectors
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import MemoryDoc
from aether.memory.storage.scoped_indexes import ScopedIndexes
from aether.memory.storage.status import INACTIVE, Status
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.longterm import build_memory
from aether.memory.tiers.memory_index import count_ops
from aether.messages import ChatMessage, StructuredModel, TextModel
from aether.store.lock import StateLock
from aether.store.state import Mutation
from aether.tokens import truncate_to_tokens

log = structlog.get_logger(__name__)

RUN_LOCK_TTL_S = 600
DELETE_BATCH = 200
DIGEST_MAX_ENTRIES = 400
DIGEST_TOKENS = 400
REFLECT_MIN_ENTRIES = 3
DIGEST_TAG = "digest"
REFLECTION_TAG = "reflection"


@dataclass
class StepReport:
    """What one step did."""

    name: str
    changed: int = 0
    detail: str = ""
    items: list[str] = field(default_factory=list)
    checkpoint: str | None = None


@dataclass
class MaintenanceReport:
    """A whole run."""

    dry_run: bool
    started_at: float
    """Epoch seconds, as every time aether prints as JSON."""
    duration_ms: float = 0.0
    steps: list[StepReport] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for JSON)."""
        return asdict(self)


def _digestible(doc: MemoryDoc) -> bool:
    """Whether a daily entry may feed a digest or a reflection.

    Not what ``remember`` logged (its facts live on as beliefs, which follow the truth)
    and not what a later fact superseded.
    """
    return REMEMBER_TAG not in doc.get("tags", []) and doc.get("status") not in INACTIVE


def _normal(text_: str) -> str:
    return " ".join(text_.lower().split()).strip(" .")


def _entry_messages(docs: list[MemoryDoc]) -> list[ChatMessage]:
    """Daily entries as messages for the summarizer."""
    return [
        ChatMessage(
            role="user" if d.get("source") == "user" else "assistant",
            content=str(d.get("content", "")),
        )
        for d in docs
    ]


class MaintenanceEngine:
    """Runs the maintenance steps on one namespace.

    Args:
        memory: the memory layer.
        checkpoints: for the checkpoint before destructive steps, and pruning.
        llm: summaries and distillation when given; extractive otherwise.
        actor: who the journal says made the changes.
        beliefs: the belief lifecycle's settings (the pruning threshold).
        search: the namespace's search (``Parts.search``; default: one of the layer's own).
    """

    def __init__(
        self,
        memory: MemoryLayer,
        checkpoints: Checkpoints,
        llm: TextModel | None = None,
        actor: str = "maintenance",
        beliefs: BeliefSettings | None = None,
        search: MemorySearch | None = None,
    ) -> None:
        self.belief_settings = beliefs or BeliefSettings()
        self.search = search or MemorySearch(memory)
        self.memory = memory
        self.keys = memory.keys
        self.client = memory.client
        self.checkpoints = checkpoints
        self.llm = llm
        self.actor = actor
        self.daily = DailyLog(memory)

    async def run(self, *, dry_run: bool = False, now: datetime | None = None) -> MaintenanceReport:
        """Run every step (see the module docs).

        Raises:
            ConcurrentAdminError: another maintenance run holds the lock.
        """
        when = now or datetime.now(UTC)
        report = MaintenanceReport(dry_run=dry_run, started_at=when.timestamp())
        start = time.perf_counter()
        lock = StateLock(
            self.client,
            self.keys.job_lock("maintenance.running"),
            ttl_s=RUN_LOCK_TTL_S,
            busy="maintenance is already running; try again later",
        )
        async with lock:
            report.steps.append(await self.compress_daily(when, dry_run))
            report.steps.append(await self.prune_checkpoints(dry_run))
            report.steps.append(await self.scratchpad_ttls(dry_run))
            report.steps.append(await self.learn(when, dry_run))
            report.steps.append(await self.reflect(when, dry_run))
            report.steps.append(await self.beliefs(dry_run, when))
            report.steps.append(await self.scoped_indexes(dry_run))
        report.duration_ms = round((time.perf_counter() - start) * 1000, 1)
        if not dry_run:
            last: dict[Any, Any] = {
                "at": when.timestamp(),
                "by": self.actor,
                "report": json.dumps(report.to_dict()),
            }
            await self.client.hset(self.keys.daemon_maintenance(), mapping=last)
            changed = sum(s.changed for s in report.steps)
            event = {"type": "maintenance.done", "changed": changed}
            await self.client.publish(self.keys.events(), json.dumps(event))
        log.info("maintenance", dry_run=dry_run, steps={s.name: s.changed for s in report.steps})
        return report

    async def _summary(self, docs: list[MemoryDoc], instruction: str) -> str:
        """An LLM summary of ``docs``, or the extractive one."""
        if self.llm is not None:
            lines = "\n".join(f"- {d.get('content', '')}" for d in docs)
            try:
                return await self.llm.complete(
                    instruction, truncate_to_tokens(lines, 6000), max_tokens=DIGEST_TOKENS
                )
            except LLMError as e:
                log.warning("LLM unavailable for maintenance; extractive instead", error=str(e))
        summary = ExtractiveSummarizer().summarize_now("", _entry_messages(docs), DIGEST_TOKENS)
        return summary.split("\n", 1)[-1]

    async def compress_daily(self, now: datetime, dry_run: bool) -> StepReport:
        """Step 1: days past the retention become long-term digests."""
        step = StepReport("compress_daily")
        cutoff = now.date() - timedelta(days=self.memory.settings.daily_retention_days)
        old_days = [d for d in await self.daily.days() if d < cutoff]
        if not old_days:
            step.detail = "no daily logs past the retention"
            return step
        if dry_run:
            counts = [len(await self.daily.ids(d)) for d in old_days]
            step.changed = sum(counts)
            step.items = [
                f"{d.isoformat()}: {n} entries" for d, n in zip(old_days, counts, strict=True)
            ]
            step.detail = f"would compress {len(old_days)} days"
            return step
        cp = await self.checkpoints.create(
            label="before compressing old daily logs", reason="pre-maintenance", actor=self.actor
        )
        step.checkpoint = cp.id
        for day in old_days:
            step.changed += await self._compress_day(day)
            step.items.append(day.isoformat())
        step.detail = f"compressed {step.changed} entries of {len(old_days)} days into digests"
        return step

    async def _compress_day(self, day: date) -> int:
        docs = await self.daily.list_day(day)
        if not docs:
            await self.memory.store.apply(Mutation().delete(self.keys.daily(day)), "maintenance")
            return 0
        beliefs = Beliefs(self.memory, self.belief_settings, search=self.search)
        # an entry evicted from a chat after its fact changed must not carry it into a digest
        current = [
            d
            for d in docs
            if _digestible(d) and not await beliefs.states_superseded(str(d.get("content", "")))
        ]
        ranked = sorted(
            current,
            key=lambda d: (float(d.get("score", 0.5)), d["timestamp"]),
            reverse=True,
        )[:DIGEST_MAX_ENTRIES]
        if not ranked:  # only facts that live on as beliefs, or no longer hold
            removal = self.daily.removal(day, docs, whole_day=True)
            await self.memory.store.apply(removal, "maintenance.compress_daily", self.actor)
            return len(docs)
        ranked.sort(key=lambda d: d["timestamp"])
        summary = await self._summary(
            ranked,
            "Summarise one day of your own log for long-term "
            "memory: facts, decisions, outcomes, names, numbers. "
            "Plain text.",
        )
        tags = sorted({t for d in docs for t in d.get("tags", [])})[:30]
        digest = build_memory(
            self.memory,
            f"Digest of {day.isoformat()} ({len(docs)} entries):\n{summary}",
            source="system",
            tags=[DIGEST_TAG, *[t for t in tags if t != DIGEST_TAG]][:32],
            sources=[d["id"] for d in docs],
            timestamp=max(float(d["timestamp"]) for d in docs),
        )
        await self.memory.attach_embeddings([digest])
        for start in range(0, len(docs), DELETE_BATCH):
            batch = docs[start : start + DELETE_BATCH]
            last = start + DELETE_BATCH >= len(docs)
            m = self.daily.removal(day, batch, whole_day=last)
            if start == 0:
                self.memory.put(m, self.keys.longterm(digest["id"]), digest)
                count_ops(m, self.keys, [digest])
            await self.memory.store.apply(m, "maintenance.compress_daily", self.actor)
        return len(docs)

    async def _new_lines(self, lines: list[str]) -> list[str]:
        """``lines`` less repeats, what a note or belief says, and superseded facts."""
        fresh: dict[str, str] = {}
        search = self.search
        beliefs = Beliefs(self.memory, self.belief_settings, search=search)
        for line in lines:
            key = _normal(line)
            if not key or key in fresh:
                continue
            hits = await search.search(line, limit=5, include_inactive=True)
            if any(
                _normal(h.content) == key
                for h in hits
                if h.doc.get("kind") != "daily" and h.doc.get("status") not in INACTIVE
            ):
                continue
            if await beliefs.states_superseded(line):
                continue
            fresh[key] = line
        return list(fresh.values())

    async def prune_checkpoints(self, dry_run: bool) -> StepReport:
        """Step 2: keep the newest checkpoints."""
        step = StepReport("prune_checkpoints")
        total = await self.client.zcard(self.keys.checkpoints())
        excess = max(0, total - self.checkpoints.keep)
        if dry_run:
            step.changed, step.detail = excess, f"would prune {excess} of {total} checkpoints"
            return step
        pruned = await self.checkpoints.prune()
        step.changed, step.items = len(pruned), pruned
        step.detail = f"kept {min(total, self.checkpoints.keep)}, pruned {len(pruned)}"
        return step

    async def scratchpad_ttls(self, dry_run: bool) -> StepReport:
        """Step 3: every scratchpad expires."""
        step = StepReport("scratchpad_ttls")
        seen = 0
        async for raw in self.client.scan_iter(match=self.keys.scratchpad("*"), count=1000):
            seen += 1
            key = text(raw)
            if await self.client.ttl(key) == -1:
                step.changed += 1
                step.items.append(key)
                if not dry_run:
                    await self.client.expire(key, self.memory.settings.scratchpad_ttl_s)
        verb = "would give" if dry_run else "gave"
        step.detail = f"{seen} scratchpads; {verb} {step.changed} a TTL"
        return step

    async def learn(self, now: datetime, dry_run: bool) -> StepReport:
        """Step 4: catch up on conversation turns no one has learned from yet."""
        step = StepReport("learn")
        llm = self.llm if isinstance(self.llm, StructuredModel) else None
        beliefs = Beliefs(self.memory, self.belief_settings, self.llm, self.search)
        learner = ConversationLearner(self.memory, beliefs, llm)
        backlog = await learner.backlog()
        if dry_run or not backlog:
            step.changed, step.items = len(backlog), backlog
            step.detail = f"{len(backlog)} sessions with turns to learn from"
            return step
        for session in backlog:
            learned = await learner.learn(session, now.timestamp())
            step.changed += learned.facts + learned.entities
            step.items.append(session)
        step.detail = f"learned from {len(backlog)} sessions"
        return step

    async def reflect(self, now: datetime, dry_run: bool) -> StepReport:
        """Step 4: distill recent daily entries into long-term memories."""
        step = StepReport("reflect")
        state = self.keys.maintenance_state()
        raw = await self.client.hget(state, "reflected_until")
        since = float(raw) if raw else (now - timedelta(days=1)).timestamp()
        docs = [
            d
            for d in await self.daily.recent(2, now.date())
            if since < float(d["timestamp"]) <= now.timestamp()
            and REFLECTION_TAG not in d.get("tags", [])
            and _digestible(d)
        ]
        if len(docs) < REFLECT_MIN_ENTRIES:
            step.detail = f"{len(docs)} new entries since the last reflection; nothing to distill"
            return step
        if dry_run:
            step.changed, step.detail = 1, f"would distill {len(docs)} entries"
            return step
        text_ = await self._summary(
            docs,
            "Reflect on these recent notes of yours. Write the "
            "lasting facts, lessons and decisions worth remembering, "
            "one per line, nothing else.",
        )
        lines = [ln.strip(" -*\t") for ln in text_.splitlines() if ln.strip(" -*\t")]
        if self.llm is None or not lines:
            lines = [" ".join(text_.split())]
        lines = await self._new_lines(lines)
        if not lines:
            m = Mutation().hset(state, {"reflected_until": str(now.timestamp())})
            await self.memory.store.apply(m, "maintenance.reflect", self.actor)
            step.detail = f"{len(docs)} new entries hold nothing not already remembered"
            return step
        ids = [d["id"] for d in docs]
        memories = [
            build_memory(
                self.memory, line, source="agent", tags=[REFLECTION_TAG], sources=ids, timestamp=now
            )
            for line in lines[:20]
        ]
        await self.memory.attach_embeddings(memories)
        m = Mutation()
        for memory in memories:
            self.memory.put(m, self.keys.longterm(memory["id"]), memory)
        count_ops(m, self.keys, memories)
        m.hset(state, {"reflected_until": str(now.timestamp())})
        await self.memory.store.apply(m, "maintenance.reflect", self.actor)
        step.changed = len(memories)
        step.items = [mem["id"] for mem in memories]
        step.detail = f"distilled {len(docs)} entries into {len(memories)} memories"
        return step

    async def beliefs(self, dry_run: bool, now: datetime | None = None) -> StepReport:
        """Step 5: prune beliefs whose decayed confidence fell under the threshold.

        Decay itself is computed at read time; pruning is a status change (journaled), and
        a checkpoint is taken first.
        """
        step = StepReport("beliefs")
        beliefs = Beliefs(self.memory, self.belief_settings, search=self.search)
        when = (now or datetime.now(UTC)).timestamp()
        limit = self.belief_settings.prune_below
        active = await beliefs.select(Status.ACTIVE, when)
        doomed = [b["id"] for b in active if b["effective_confidence"] < limit]
        if dry_run or not doomed:
            step.changed, step.items = len(doomed), doomed
            verb = "would prune" if dry_run else "pruned"
            step.detail = f"{len(active)} active beliefs; {verb} {len(doomed)} under {limit}"
            return step
        cp = await self.checkpoints.create(
            label="before pruning beliefs", reason="pre-maintenance", actor=self.actor
        )
        step.checkpoint = cp.id
        step.items = await beliefs.prune(limit, when)
        step.changed = len(step.items)
        step.detail = f"{len(active)} active beliefs; pruned {step.changed} under {limit}"
        return step

    async def scoped_indexes(self, dry_run: bool) -> StepReport:
        """Step 6: the largest tags' own vector indexes made, the shrunk ones' dropped."""
        step = StepReport("scoped_indexes")
        vectors = self.memory.vector_index()
        if vectors is None or not await self.memory.indexed():
            step.detail = "no vector index"
            return step
        info = await self.memory.text_index().info()
        reach = brute_force_max(int(info.get("num_docs", 0) or 0))
        limit = self.memory.settings.scoped_indexes
        vectors_source = self.search.candidates.vectors
        scoped = (  # the searches' own: they see what it makes and drops at once
            vectors_source.scoped
            if isinstance(vectors_source, RedisVectors)
            else ScopedIndexes(self.client, self.keys)
        )
        created, dropped = await scoped.sync(vectors, reach, limit, dry_run=dry_run)
        step.changed = len(created) + len(dropped)
        step.items = [f"+{name}" for name in created] + [f"-{name}" for name in dropped]
        verb = ("would make", "would drop") if dry_run else ("made", "dropped")
        step.detail = (
            f"tags past {reach} memories get their own index (at most {limit}); "
            f"{verb[0]} {len(created)}, {verb[1]} {len(dropped)}"
        )
        return step

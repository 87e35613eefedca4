"""Conversations feed knowledge: facts become beliefs, names become entities and relations.

:meth:`ConversationLearner.learn` reads a chat session from where it last stopped (the
``learned:<session>`` watermark of ``ns:maintenance:state``), takes the turns in batches
and extracts from each batch, with an LLM in one structured
call (the JSON schema of :class:`~aether.memory.knowledge.extraction.Extraction`), otherwise with
the deterministic extractors of :mod:`aether.memory.knowledge.extraction`. Facts go through the
belief lifecycle (reinforce, supersede, create) with the turn as evidence; entities and
relations go to the graph, in the same journaled change as the moved watermark, so a
rollback takes them back with the conversation and the next run extracts again.

Facts come only from what was said as a fact: the user's turns and tool results. The
assistant's turns (its own echo of the user, its guesses) are context for the LLM and are
never a source; questions state nothing (:func:`~aether.memory.knowledge.extraction.
is_question`).

An LLM reply that is not valid JSON of the schema, or is over :data:`MAX_REPLY_BYTES`, is
logged and the batch falls back to the deterministic extractors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import structlog
from pydantic import ValidationError

from aether.codec import text
from aether.errors import AetherError, LLMError
from aether.memory.knowledge.beliefs import Beliefs
from aether.memory.knowledge.extraction import Extraction, clean_name, extract, is_question
from aether.memory.knowledge.graph import EntityIn, Graph, RelationIn
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.chat import ChatSessions
from aether.messages import ChatMessage, StructuredModel
from aether.store.state import Mutation

log = structlog.get_logger(__name__)

BATCH_TURNS = 20
MAX_TURNS_PER_RUN = 400
MAX_REPLY_BYTES = 64 * 1024
SPEAKERS = {"user": "User", "assistant": "Assistant", "tool": "Tool"}
SOURCES = frozenset({"user", "tool"})
"""The roles whose turns facts are taken from."""
PROMPT = (
    "From this conversation, extract durable knowledge as JSON: facts (self-contained "
    "statements with names, not pronouns; a changed fact stated as it is now; only what "
    "the User said as a fact or a Tool returned, never a question and never what the "
    "Assistant said), entities "
    "(people, places, organisations, dates, things, with aliases) and relations between "
    "entity names (type in snake_case, e.g. lives_in, works_at, went_to, on).\n\n"
)


@dataclass
class LearnReport:
    """What one learning run took from a session."""

    session: str
    turns: int = 0
    facts: int = 0
    entities: int = 0
    relations: int = 0
    retired: int = 0
    """Relations a superseded fact stated, taken out of the graph's traversal."""
    extractor: str = "deterministic"
    beliefs: dict[str, int] = field(default_factory=dict)


class ConversationLearner:
    """Extracts beliefs, entities and relations from chat sessions.

    Args:
        memory: the memory layer.
        beliefs: the belief lifecycle facts go through.
        llm: the structured extractor; deterministic extractors without one.
        speakers: how each role is named in facts ("I" of a user turn becomes the name).
    """

    def __init__(
        self,
        memory: MemoryLayer,
        beliefs: Beliefs,
        llm: StructuredModel | None = None,
        speakers: dict[str, str] | None = None,
    ) -> None:
        self.memory = memory
        self.beliefs = beliefs
        self.graph = Graph(memory)
        self.llm = llm
        self.speakers = {**SPEAKERS, **(speakers or {})}
        self.state = memory.keys.maintenance_state()

    async def backlog(self) -> list[str]:
        """Sessions with turns not learned from yet."""
        chats = ChatSessions(self.memory)
        out = []
        for meta in await chats.list(limit=1000):
            session = str(meta["id"])
            if int(meta["messages"]) > await self._position(session):
                out.append(session)
        return out

    async def _position(self, session: str) -> int:
        raw = await self.memory.client.hget(self.state, f"learned:{session}")
        return int(text(raw)) if raw else 0

    async def learn(self, session: str, now: float | None = None) -> LearnReport:
        """Learn from the session's turns since the last run (see the module docs)."""
        report = LearnReport(session)
        start = await self._position(session)
        messages = (await ChatSessions(self.memory).messages_from(session, start))[
            :MAX_TURNS_PER_RUN
        ]
        when = now or time.time()
        for offset in range(0, len(messages), BATCH_TURNS):
            batch = messages[offset : offset + BATCH_TURNS]
            turns = [m for m in batch if m.get("role") in SPEAKERS and m.get("content")]
            extraction = await self._extract(turns, report) if turns else Extraction()
            evidence = str(turns[0].get("id", session)) if turns else session
            replaced: list[str] = []
            for fact in extraction.facts:
                if is_question(fact.statement):
                    continue
                try:
                    outcome = await self.beliefs.learn(fact.statement, evidence=evidence, now=when)
                except AetherError as e:
                    log.info("a learned fact was skipped", error=str(e))
                    continue
                report.beliefs[outcome.action] = report.beliefs.get(outcome.action, 0) + 1
                report.facts += 1
                if outcome.action == "superseded" and outcome.previous is not None:
                    replaced.append(str(outcome.previous.get("content", "")))
            m = await self._graph_ops(extraction, evidence, when, report, replaced)
            m.hset(self.state, {f"learned:{session}": str(start + offset + len(batch))})
            await self.memory.store.apply(m, "knowledge.learn", "learner")
            report.turns += len(turns)
        return report

    async def _extract(self, turns: list[ChatMessage], report: LearnReport) -> Extraction:
        if self.llm is not None:
            lines = "\n".join(f"{self._speaker(t)}: {t.get('content')}" for t in turns)
            try:
                raw = await self.llm.complete_json(
                    "You extract durable knowledge from conversations.",
                    PROMPT + lines[:20_000],
                    Extraction.model_json_schema(),
                    max_tokens=2000,
                )
                if len(raw.encode()) > MAX_REPLY_BYTES:
                    raise ValueError(f"extraction reply over {MAX_REPLY_BYTES} bytes")
                found = Extraction.model_validate_json(raw)
                report.extractor = "llm"
                return found
            except (LLMError, ValidationError, ValueError) as e:
                log.warning("LLM extraction failed; deterministic instead", error=str(e)[:300])
        known = await self._known(turns)
        found = Extraction()
        for turn in turns:
            if turn.get("role") not in SOURCES:
                continue
            speaker = self._speaker(turn) if turn.get("role") == "user" else ""
            found = found.merged(extract(speaker, str(turn.get("content")), known))
        return found

    def _speaker(self, turn: ChatMessage) -> str:
        return str(turn.get("name") or self.speakers.get(turn["role"], ""))

    async def _known(self, turns: list[ChatMessage]) -> dict[str, str]:
        """Names and aliases of stored entities the turns mention, with their types."""
        words = " ".join(str(t.get("content")) for t in turns)
        known: dict[str, str] = {}
        for entity in await self.graph.find(words[:2000], limit=50):
            for name in [entity["name"], *entity.get("aliases", [])]:
                known[name.lower()] = entity["type"]
        return known

    async def _graph_ops(
        self,
        extraction: Extraction,
        evidence: str,
        now: float,
        report: LearnReport,
        replaced: list[str],
    ) -> Mutation:
        entities = {
            clean_name(e.name).lower(): EntityIn(
                e.type, clean_name(e.name), aliases=[clean_name(a) for a in e.aliases]
            )
            for e in extraction.entities
            if clean_name(e.name)
        }
        relations = []
        for r in extraction.relations:
            ends = clean_name(r.source), clean_name(r.target)
            if not all(ends):
                continue
            for end in ends:  # a relation may name an entity not listed
                entities.setdefault(end.lower(), EntityIn("thing", end))
            source, target = entities[ends[0].lower()], entities[ends[1].lower()]
            if source.id != target.id:
                relations.append(RelationIn(r.type, source.id, target.id))
        try:
            m = await self.graph.upsert(list(entities.values()), relations, evidence, now)
        except AetherError as e:  # a name the graph refuses: the batch's graph part is skipped
            log.info("learned entities skipped", error=str(e))
            return Mutation()
        report.retired += await self.graph.retire_replaced(m, relations, replaced, now)
        report.entities += len(entities)
        report.relations += len(relations)
        return m

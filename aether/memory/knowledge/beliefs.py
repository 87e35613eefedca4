"""Beliefs and their lifecycle (docs/design.md, "Beliefs").

A belief is a JSON document ``ns:belief:<id>`` in the memory index: a statement, its
type (fact or insight), a base confidence with the time it was last reinforced, a status
(active, superseded, forgotten, pruned: ``aether.memory.storage.status``), the daily
entries it rests on (evidence) and what it supersedes. Effective confidence halves every
30 days since the last reinforcement; it is computed at read time, so there is no
background job.

``remember(text)`` logs the text, extracts beliefs from it (LLM, or each clause that
states something, a compound clause cut into one per attribute by
:func:`~aether.memory.knowledge.facts.split_compound`), then compares each with the active
beliefs about the same subject and attribute (its *slot*, kept indexed on every belief)
and with the 5 most similar ones, by the rules of :mod:`aether.memory.knowledge.facts`:

- another subject, another attribute, another identifier: nothing happens to the old one
  (the staging key never retires the production key, Ivo's gym never reinforces Marta's);
- the same value of the same attribute: the old belief is reinforced (confidence up,
  decay reset);
- another value of a single-valued attribute, or a negation: every active belief of the
  slot is superseded by the new one (a chain keeps only the newest active);
- where the rules cannot read a statement: similarity >= 0.7 and a contradiction (LLM, or
  a heuristic for negations and changed numbers) supersede, similarity > 0.85 reinforces,
  unless the two name different identifiers.

Nothing is overwritten: every change is appended to the belief's history,
``ns:beliefs:history:<id>``.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

import structlog
from redis.exceptions import ResponseError
from redisvl.exceptions import RedisSearchError
from redisvl.query import FilterQuery, TextQuery
from redisvl.query.filter import FilterExpression, Tag
from typing_extensions import TypedDict

from aether.codec import text, texts
from aether.config import BeliefSettings
from aether.errors import InvalidOperationError, LLMError
from aether.identifiers import fold, identifiers_in
from aether.ids import ID_LENGTH, new_id, resolve_prefix
from aether.memory.knowledge.extraction import clauses, clean_name, extract, stating
from aether.memory.knowledge.facts import Claim, Relation, parse, relation, split_compound
from aether.memory.knowledge.graph import EntityIn, Graph
from aether.memory.knowledge.valid_time import valid_time
from aether.memory.retrieval.recency import decay
from aether.memory.retrieval.search import MemorySearch
from aether.memory.retrieval.text import STOPWORDS, query_tokens
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import DailyEntry, MemoryDoc, base_record
from aether.memory.storage.status import BELIEF_STATUSES, INACTIVE, Status, is_active, matches
from aether.memory.storage.vectors import refilter
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.memory_index import count_ops
from aether.messages import TextModel
from aether.store.redaction import is_tombstone
from aether.store.state import Mutation

log = structlog.get_logger(__name__)

TYPES = ("fact", "insight")
STATUSES = BELIEF_STATUSES
NEIGHBOURS = 5
REMEMBER_TAG = "remember"
"""The tag of the daily entry ``remember`` logs (its facts live on as beliefs)."""
BELIEF_FIELDS = (
    "id",
    "content",
    "type",
    "confidence",
    "reinforced_at",
    "status",
    "evidence",
    "supersedes",
    "superseded_by",
    "tags",
    "timestamp",
    "slots",
    "valid_from",
    "valid_until",
)
_NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "cannot",
        "without",
        "dont",
        "doesnt",
        "isnt",
        "wasnt",
        "arent",
    ]
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def effective_confidence(doc: MemoryDoc, now: float, half_life_days: float) -> float:
    """Base confidence decayed by the time since the last reinforcement."""
    base = float(doc.get("confidence", 0.0))
    since = now - float(doc.get("reinforced_at", doc.get("timestamp", now)))
    return base * decay(since, half_life_days)


def lexical_similarity(a: str, b: str) -> float:
    """Cosine of the two texts' word sets (stopwords kept out): the no-embedder fallback."""
    wa, wb = set(query_tokens(a)), set(query_tokens(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / math.sqrt(len(wa) * len(wb))


def _negated(statement: str) -> bool:
    words = re.findall(r"[a-z']+", statement.lower())
    return any(w.replace("'", "") in _NEGATIONS or w.endswith("n't") for w in words)


# verbs that hold one value at a time: "lives in Lisbon" then "lives in Porto" is a move
_SINGLE_VALUED = frozenset(
    [
        "is",
        "are",
        "was",
        "am",
        "lives",
        "live",
        "lived",
        "moved",
        "works",
        "work",
        "worked",
        "job",
        "named",
        "called",
        "married",
        "dating",
        "drives",
        "drive",
        "owns",
        "earns",
        "earn",
        "costs",
        "weighs",
        "has",
        "have",
        "had",
        "studies",
        "studying",
        "teaches",
        "runs",
        "leads",
        "manages",
        "prefers",
        "favourite",
        "favorite",
        "",
    ]
)
_WORD = re.compile(r"[\w'-]+")


def _changed_value(old: str, new: str) -> bool:
    """The same subject and single-valued verb, then a different value."""
    a, b = _WORD.findall(old.lower()), _WORD.findall(new.lower())
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    tail = 0
    while tail < min(len(a), len(b)) - common and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    rest_a, rest_b = a[common : len(a) - tail], b[common : len(b) - tail]
    if common < 2 or not rest_a or not rest_b or max(len(rest_a), len(rest_b)) > 5:
        return False
    return bool(_SINGLE_VALUED & set(a[:common])) and not set(rest_a) & set(rest_b)


def heuristic_contradiction(old: str, new: str) -> bool:
    """Whether two similar statements disagree.

    One is negated and the other not, they hold different numbers, or they give one
    subject a different value of a single-valued verb ("lives in Lisbon" / "in Porto").
    """
    if _negated(old) != _negated(new):
        return True
    numbers_old, numbers_new = set(_NUMBER.findall(old)), set(_NUMBER.findall(new))
    if numbers_old and numbers_new and numbers_old != numbers_new:
        return True
    return _changed_value(old, new)


def keyword_tags(statement: str, limit: int = 2) -> list[str]:
    """Topic tags for a statement without an LLM: its longest content words."""
    words = [
        w
        for w in dict.fromkeys(re.findall(r"[a-z][a-z-]{3,}", statement.lower()))
        if w not in STOPWORDS
    ]
    return sorted(words, key=len, reverse=True)[:limit]


@dataclass
class Outcome:
    """What ``remember`` did with one extracted belief."""

    action: str  # created | reinforced | superseded
    belief: MemoryDoc
    previous: MemoryDoc | None = None
    similarity: float = 0.0


class Extracted(TypedDict):
    """One belief found in a statement (by the LLM, or the statement itself)."""

    statement: str
    type: str
    tags: list[str]


class OutcomeSummary(TypedDict):
    """One belief of a ``remember``, as the CLI and MCP report it."""

    action: str
    id: str
    statement: str
    previous: str | None
    similarity: float


class RememberSummary(TypedDict):
    """A ``remember`` as the CLI and MCP report it: the logged entry and each belief."""

    entry: str
    beliefs: list[OutcomeSummary]


class Reflection(TypedDict):
    """Near-duplicate clusters of active beliefs and the stale ones (ids)."""

    duplicates: list[list[str]]
    stale: list[str]
    active: int


@dataclass
class RememberReport:
    """What one ``remember`` call did."""

    entry: DailyEntry
    outcomes: list[Outcome] = field(default_factory=list)

    def summary(self) -> RememberSummary:
        """The report as plain data (ids, not documents)."""
        return RememberSummary(
            entry=self.entry["id"],
            beliefs=[
                OutcomeSummary(
                    action=o.action,
                    id=o.belief["id"],
                    statement=str(o.belief["content"]),
                    previous=o.previous["id"] if o.previous else None,
                    similarity=round(o.similarity, 4),
                )
                for o in self.outcomes
            ],
        )


@dataclass(frozen=True)
class Change:
    """How a new statement differs from an old one, word by word."""

    changed: frozenset[str]
    """Words of the old statement the new one does not hold (``12`` of "12 TB" -> "16 TB")."""
    shared: frozenset[str]
    """Words both hold."""

    @classmethod
    def between(cls, old: str, new: str) -> Change:
        """The change from ``old`` to ``new``."""
        words = frozenset(query_tokens(old))
        changed = words - frozenset(query_tokens(new))
        return cls(changed, words - changed)

    def quoted_by(self, text_: str) -> bool:
        """Whether ``text_`` states the old statement rather than the new one.

        It holds every changed word and at least half of the shared ones.
        """
        held = set(query_tokens(text_))
        return self.changed <= held and len(self.shared & held) * 2 >= len(self.shared)


class Beliefs:
    """The beliefs of one namespace.

    Args:
        memory: the memory layer.
        settings: the lifecycle's numbers.
        llm: extraction and contradiction checks when given; heuristics otherwise.
        search: the namespace's search (``Parts.search``; default: one of the layer's own).
    """

    def __init__(
        self,
        memory: MemoryLayer,
        settings: BeliefSettings,
        llm: TextModel | None = None,
        search: MemorySearch | None = None,
    ) -> None:
        self.memory = memory
        self.search = search or MemorySearch(memory)
        self.keys = memory.keys
        self.settings = settings
        self.llm = llm
        self.index = memory.text_index()

    def effective(self, doc: MemoryDoc, now: float | None = None) -> float:
        """The belief's effective confidence now."""
        return effective_confidence(doc, now or time.time(), self.settings.half_life_days)

    # ------------------------------------------------------------------ reading

    async def get(self, id_or_prefix: str) -> MemoryDoc:
        """One belief by id or unique prefix.

        Raises:
            NotFoundError / AmbiguousIdError: no belief, or several, match.
        """
        doc = None
        if len(id_or_prefix) == ID_LENGTH:  # a whole id: one read, no scan of the keyspace
            doc = (await self.memory.get_docs([self.keys.belief(id_or_prefix)]))[0]
        if doc is None:
            belief_id = resolve_prefix(await self.ids(), id_or_prefix, "belief")
            doc = (await self.memory.get_docs([self.keys.belief(belief_id)]))[0]
        if doc is None:
            from aether.errors import NotFoundError

            raise NotFoundError(f"no belief {id_or_prefix!r}")
        doc.pop("embedding", None)
        return doc

    async def ids(self) -> list[str]:
        """Every belief id (any status)."""
        prefix = self.keys.belief("")
        found = [
            text(k)[len(prefix) :]
            async for k in self.memory.client.scan_iter(match=prefix + "*", count=1000)
        ]
        return sorted(found)

    async def select(
        self, status: str | None = Status.ACTIVE, now: float | None = None
    ) -> list[MemoryDoc]:
        """Beliefs (of one status, or all with ``None``), highest effective confidence first.

        Each carries ``effective_confidence``.
        """
        if status is not None and status not in STATUSES:
            raise InvalidOperationError(
                f"unknown status {status!r}: use one of {', '.join(STATUSES)}"
            )
        keys = [self.keys.belief(i) for i in await self.ids()]
        docs: list[MemoryDoc] = []
        for start in range(0, len(keys), 500):
            docs += [
                d for d in await self.memory.get_docs(keys[start : start + 500], BELIEF_FIELDS) if d
            ]
        when = now or time.time()
        out = [d for d in docs if status is None or matches(d.get("status"), status)]
        for doc in out:
            doc["effective_confidence"] = round(self.effective(doc, when), 4)
        out.sort(key=lambda d: d["effective_confidence"], reverse=True)
        return out

    async def history(self, id_or_prefix: str) -> list[dict[str, object]]:
        """The belief's changes, oldest first."""
        belief = await self.get(id_or_prefix)
        raw = await self.memory.client.lrange(self.keys.belief_history(belief["id"]), 0, -1)
        return [json.loads(item) for item in texts(raw) if not is_tombstone(item)]

    async def questions(self, now: float | None = None) -> list[MemoryDoc]:
        """Open questions: active beliefs whose effective confidence is under 0.5."""
        return [
            b
            for b in await self.select(Status.ACTIVE, now)
            if b["effective_confidence"] < self.settings.uncertain_at
        ]

    async def similar(
        self, statement: str, vector: list[float] | None, limit: int = NEIGHBOURS
    ) -> list[tuple[MemoryDoc, float]]:
        """The most similar active beliefs, with their similarity (cosine, or lexical)."""
        if not await self.memory.indexed():
            return []
        active = (Tag("kind") == "belief") & (Tag("status") == Status.ACTIVE.value)
        try:
            if vector is not None:
                scored = await self.memory.nearest(vector, active, limit)
            else:
                tokens = query_tokens(statement)
                if not tokens:
                    return []
                query = TextQuery(
                    " ".join(tokens),
                    "content",
                    filter_expression=active,
                    num_results=limit * 4,
                    stopwords=None,
                )
                query.no_content()
                rows = await self.index.search(query.query, query_params=query.params)
                scored = [(doc.id, 0.0) for doc in rows.docs]
        except (RedisSearchError, ResponseError) as e:
            log.warning("belief similarity search failed; treating as new", error=str(e))
            return []
        docs = await self.memory.get_docs([k for k, _ in scored], BELIEF_FIELDS)
        out = []
        for (_, sim), doc in zip(scored, docs, strict=True):
            if doc is None or not is_active(doc.get("status")):
                continue
            out.append(
                (
                    doc,
                    sim
                    if vector is not None
                    else lexical_similarity(statement, str(doc["content"])),
                )
            )
        out.sort(key=lambda pair: pair[1], reverse=True)
        return out[:limit]

    # ------------------------------------------------------------------ writing

    async def remember(
        self,
        statement: str,
        *,
        source: str = "user",
        tags: list[str] | None = None,
        session: str | None = None,
        now: float | None = None,
    ) -> RememberReport:
        """Log ``statement`` and fold the beliefs it holds into memory (see module docs).

        Raises:
            InvalidOperationError: empty or oversized text, bad tags; nothing is written.
        """
        when = now or time.time()
        entry = await DailyLog(self.memory).log(
            statement,
            source=source,
            tags=[REMEMBER_TAG, *(tags or [])],
            session=session,
            timestamp=when,
        )
        report = RememberReport(entry)
        aliases = await self.aliases(statement)
        for extracted in await self._extract(statement):
            report.outcomes.append(
                await self._fold(extracted, entry["id"], tags or [], when, aliases)
            )
        await self._record_entities(statement, entry["id"], when)
        return report

    async def _record_entities(self, statement: str, evidence: str, now: float) -> None:
        """Put the people, places and things the statement names in the graph, typed.

        So the graph knows who and what was spoken of (a question about a kind of thing,
        a forget or an erasure by name find them), whether or not a conversation did.
        """
        found = extract("", statement)
        entities = [
            EntityIn(e.type, clean_name(e.name))
            for e in found.entities
            if e.type != "date" and clean_name(e.name)
        ]
        if not entities:
            return
        try:
            m = await Graph(self.memory).upsert(entities, [], evidence, now)
        except InvalidOperationError as e:  # a name the graph refuses: the fact stands
            log.info("entities of a remembered fact skipped", error=str(e))
            return
        await self.memory.store.apply(m, "graph.record")

    async def learn(
        self,
        statement: str,
        *,
        evidence: str,
        tags: list[str] | None = None,
        now: float | None = None,
    ) -> Outcome:
        """Fold one fact found elsewhere (a conversation turn ``evidence``) into beliefs.

        Like :meth:`remember` without logging the text again: it is already stored.
        """
        clean = statement.strip()
        if not clean:
            raise InvalidOperationError("a fact needs some text")
        fact: Extracted = {"statement": clean, "type": "fact", "tags": []}
        return await self._fold(fact, evidence, tags or [], now or time.time())

    async def _extract(self, statement: str) -> list[Extracted]:
        """Beliefs in the text: the LLM's fact (+ insight), or the text itself as a fact."""
        fallback: list[Extracted] = [{"statement": statement.strip(), "type": "fact", "tags": []}]
        if self.llm is None:  # each clause that states something is a belief of its own
            stated = [p for c in clauses(statement) if stating(c) for p in split_compound(c)]
            return [{"statement": c, "type": "fact", "tags": []} for c in stated] or fallback
        prompt = (
            "Extract at most two beliefs from the text: one personal fact and, only if "
            "there is one, one general insight. Answer only JSON: "
            '[{"statement": "...", "type": "fact" or "insight", "tags": ["topic"]}]\n\n'
            f"Text: {statement}"
        )
        try:
            raw = await self.llm.complete("You extract durable beliefs.", prompt, max_tokens=300)
            items = json.loads(raw[raw.index("[") : raw.rindex("]") + 1])
        except (LLMError, ValueError) as e:
            log.info("belief extraction fell back to the statement itself", error=str(e))
            return fallback
        out: list[Extracted] = []
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and str(item.get("statement", "")).strip():
                kind = str(item["type"]) if item.get("type") in TYPES else "fact"
                tags = [str(t)[:64] for t in item.get("tags", []) if str(t).strip()][:5]
                out.append(
                    {"statement": str(item["statement"]).strip(), "type": kind, "tags": tags}
                )
        return out[:2] or fallback

    async def _contradicts(self, old: str, new: str) -> bool:
        if self.llm is not None:
            prompt = (
                "Do these two statements contradict each other (cannot both be true "
                'now)? Answer only JSON {"contradicts": true|false}.\n'
                f"A: {old}\nB: {new}"
            )
            try:
                raw = await self.llm.complete(
                    "You check statements for contradiction.", prompt, max_tokens=20
                )
                return bool(json.loads(raw[raw.index("{") : raw.rindex("}") + 1])["contradicts"])
            except (LLMError, ValueError, KeyError) as e:
                log.info("contradiction check fell back to the heuristic", error=str(e))
        return heuristic_contradiction(old, new)

    async def aliases(self, text_: str) -> dict[str, str]:
        """Folded aliases of the entities ``text_`` names -> the entity's folded name."""
        out: dict[str, str] = {}
        for entity in await Graph(self.memory).find(text_[:2000], limit=20):
            for alias in entity.get("aliases", []):
                out[fold(alias.strip())] = fold(entity["name"].strip())
        return out

    async def text_keys(self, text_: str, where: FilterExpression, limit: int) -> list[str]:
        """Keys of the memories ``where`` admits whose content shares a word with ``text_``.

        The full-text index's best first; none when it fails (logged).
        """
        tokens = query_tokens(text_)
        if not tokens or not await self.memory.indexed():
            return []
        query = TextQuery(
            " ".join(tokens), "content", filter_expression=where, num_results=limit, stopwords=None
        )
        query.no_content()
        try:
            rows = await self.index.search(query.query, query_params=query.params)
        except (RedisSearchError, ResponseError) as e:
            log.warning("a full-text lookup failed", error=str(e))
            return []
        return [row.id for row in rows.docs]

    async def in_slot(self, slot: str, limit: int = 50) -> list[MemoryDoc]:
        """The active beliefs that state the attribute ``slot`` names (:class:`Claim`)."""
        if not await self.memory.indexed():
            return []
        query = FilterQuery(
            filter_expression=(Tag("kind") == "belief")
            & (Tag("status") == Status.ACTIVE.value)
            & (Tag("slots") == slot),
            num_results=limit,
        )
        query.no_content()
        try:
            rows = await self.index.search(query.query, query_params=query.params)
        except (RedisSearchError, ResponseError) as e:
            log.warning("belief slot search failed", error=str(e))
            return []
        docs = await self.memory.get_docs([row.id for row in rows.docs], BELIEF_FIELDS)
        return [d for d in docs if d is not None and is_active(d.get("status"))]

    async def _decide(
        self,
        old: MemoryDoc,
        claim: Claim | None,
        statement: str,
        sim: float,
        aliases: dict[str, str],
    ) -> Relation:
        """How ``statement`` relates to the active belief ``old`` (module docs)."""
        found = relation(parse(str(old["content"]), aliases), claim)
        if found is not Relation.UNKNOWN:
            return found
        old_ids = set(identifiers_in(str(old["content"])))
        new_ids = set(identifiers_in(statement))
        if old_ids and new_ids and old_ids != new_ids:
            return Relation.DISTINCT  # INV-7731 and INV-7731B are two things
        # short statements that differ only in their value ("works at Acme" / "at
        # Globex") are less similar than check_above (MiniLM: 0.57), so the same
        # subject and single-valued verb is also worth a check
        checked = sim >= self.settings.check_above or _changed_value(str(old["content"]), statement)
        if checked and await self._contradicts(str(old["content"]), statement):
            return Relation.REPLACES
        if sim > self.settings.reinforce_above:
            return Relation.SAME
        return Relation.DISTINCT

    async def _fold(
        self,
        extracted: Extracted,
        evidence: str,
        tags: list[str],
        now: float,
        aliases: dict[str, str] | None = None,
    ) -> Outcome:
        """Fold one belief in (module docs); ``aliases``: the graph's, read once by the caller."""
        statement = extracted["statement"]
        vector = await self.memory.embed(statement)
        if aliases is None:
            aliases = await self.aliases(statement)
        claim = parse(statement, aliases)
        neighbours = await self.similar(statement, vector)
        near = {doc["id"] for doc, _ in neighbours}
        if claim is not None:
            neighbours += [
                (doc, lexical_similarity(statement, str(doc["content"])))
                for doc in await self.in_slot(claim.slot)
                if doc["id"] not in near
            ]
        replaced: list[tuple[MemoryDoc, float]] = []
        for old, sim in neighbours:
            decided = await self._decide(old, claim, statement, sim, aliases)
            if decided is Relation.SAME:
                return Outcome(
                    "reinforced", await self._reinforce(old, evidence, now, sim), old, sim
                )
            if decided is Relation.REPLACES:
                replaced.append((old, sim))
        slots = [claim.slot] if claim is not None else []
        kind, topic = extracted["type"], tags + extracted["tags"]
        if replaced:
            first, sim = replaced[0]
            new = self._build(statement, kind, evidence, topic, now, first["id"], slots)
            await self._write_new(new, vector, now, [doc for doc, _ in replaced], sim)
            return Outcome("superseded", new, first, sim)
        new = self._build(statement, kind, evidence, topic, now, slots=slots)
        await self._write_new(new, vector, now=now)
        return Outcome("created", new, None, max((s for _, s in neighbours), default=0.0))

    def _build(
        self,
        statement: str,
        kind: str,
        evidence: str,
        tags: list[str],
        now: float,
        supersedes: str | None = None,
        slots: list[str] | None = None,
    ) -> MemoryDoc:
        topic = list(dict.fromkeys([*tags, *keyword_tags(statement)]))[:8]
        doc = base_record(
            "belief",
            statement,
            max_bytes=self.memory.settings.max_content_bytes,
            source="agent",
            tags=topic,
            score=self.settings.initial_confidence,
            timestamp=now,
            record_id=new_id(),
        )
        doc.update(
            {
                "type": kind,
                "confidence": self.settings.initial_confidence,
                "reinforced_at": now,
                "status": Status.ACTIVE.value,
                "evidence": [evidence],
                "supersedes": supersedes,
                "superseded_by": None,
                "session": "",
                "slots": slots or [],
            }
        )
        stated = valid_time(statement, now)
        if stated.start is not None:
            doc["valid_from"] = stated.start
        if stated.end is not None:
            doc["valid_until"] = stated.end
        return doc

    def _event(self, m: Mutation, belief_id: str, kind: str, now: float, **detail: Any) -> None:
        event = {"type": kind, "at": now, **detail}
        m.rpush(self.keys.belief_history(belief_id), json.dumps(event, ensure_ascii=False))

    async def _write_new(
        self,
        doc: MemoryDoc,
        vector: list[float] | None,
        now: float,
        superseding: list[MemoryDoc] | None = None,
        similarity: float = 0.0,
        m: Mutation | None = None,
    ) -> None:
        """Write a new belief (retiring ``superseding``), applied unless ``m`` is given."""
        applied = m is None
        m = m or Mutation()
        if vector is not None:
            doc["embedding"] = vector
        self.memory.put(m, self.keys.belief(doc["id"]), doc)
        count_ops(m, self.keys, [doc])
        self._event(
            m,
            doc["id"],
            "create",
            now,
            evidence=doc["evidence"],
            confidence=doc["confidence"],
            supersedes=doc["supersedes"],
        )
        for old in superseding or []:
            await self._supersede_quotes(m, old, doc)
            self.retire(m, old, doc["id"], now, doc["evidence"], similarity)
        if applied:
            await self.memory.store.apply(m, "belief.create")

    def retire(
        self,
        m: Mutation,
        old: MemoryDoc,
        by: str,
        now: float,
        evidence: list[str],
        similarity: float = 0.0,
    ) -> None:
        """Ops that mark the active belief ``old`` superseded by the belief ``by``."""
        self._status_ops(m, old, Status.SUPERSEDED)
        m.json_set(self.keys.belief(old["id"]), by, "$.superseded_by")
        self._event(
            m,
            old["id"],
            "contradict",
            now,
            by=by,
            evidence=evidence,
            similarity=round(similarity, 4),
        )

    async def _supersede_quotes(self, m: Mutation, old: MemoryDoc, new: MemoryDoc) -> None:
        """Mark what still states ``old`` superseded by ``new``, in the same change.

        The daily entries ``remember`` logged it from, and long-term notes, digests and
        daily entries that quote it (they hold every word of it that the new belief
        changed, and most of the rest), get ``status: superseded``: search and context
        leave them out from now on, and a rollback restores them with the belief.
        """
        quoted = await self.quoting(old, str(new["content"]))
        await self.mark(m, quoted, Status.SUPERSEDED, new["id"])

    async def mark(self, m: Mutation, keys: list[str], status: str, by: str | None = None) -> None:
        """Ops that give entries or notes ``status`` (and ``superseded_by``), vectors too.

        One round trip whatever their number: which of them have a vector to refilter.
        """
        if not keys:
            return
        pipe = self.memory.client.pipeline(transaction=False)
        for key in keys:
            pipe.exists(self.keys.vector(key))
        for key, has_vector in zip(keys, await pipe.execute(), strict=True):
            m.json_set(key, status, "$.status")
            if by is not None:
                m.json_set(key, by, "$.superseded_by")
            if has_vector:
                refilter(m, self.keys, key, status=status)

    async def states_superseded(self, text_: str) -> bool:
        """Whether ``text_`` states a belief that a later one replaced."""
        hits = await self.search.search(text_, kind="belief", include_inactive=True, limit=20)
        replaced = [h.key for h in hits if matches(h.doc.get("status"), Status.SUPERSEDED)]
        for doc in await self.memory.get_docs(replaced, (*BELIEF_FIELDS, "kind")):
            if doc is None:
                continue
            successor = doc.get("superseded_by")
            superseded = matches(doc.get("status"), Status.SUPERSEDED)
            if doc.get("kind") != "belief" or not superseded or not successor:
                continue
            new = (await self.memory.get_docs([self.keys.belief(str(successor))], ("content",)))[0]
            change = Change.between(str(doc["content"]), str(new["content"])) if new else None
            if change is not None and change.quoted_by(text_):
                return True
        return False

    async def quoting(self, old: MemoryDoc, new_statement: str) -> list[str]:
        """Keys of the entries and notes that state ``old`` (see :meth:`_supersede_quotes`)."""
        change = Change.between(str(old["content"]), new_statement)
        candidates = [self.keys.daily_entry(e) for e in old.get("evidence", [])]
        if change.changed:  # inactive ones are left out below, as search does
            kinds = Tag("kind") == ["longterm", "daily"]
            candidates += await self.text_keys(str(old["content"]), kinds, 50)
        docs = await self.memory.get_docs(candidates, ("content", "status"))
        out = []
        for key, doc in zip(candidates, docs, strict=True):
            if doc is None or doc.get("status") in INACTIVE:
                continue
            if change.quoted_by(str(doc.get("content", ""))):
                out.append(key)
        return list(dict.fromkeys(out))

    def _status_ops(self, m: Mutation, doc: MemoryDoc, status: str) -> None:
        key = self.keys.belief(doc["id"])
        m.json_set(key, status, "$.status")
        if self.memory.embedder is not None:
            refilter(m, self.keys, key, status=status)
        if is_active(doc.get("status")):  # the memory index counts active beliefs
            count_ops(m, self.keys, [{"kind": "belief", "tags": doc.get("tags", [])}], sign=-1)

    async def _reinforce(
        self, doc: MemoryDoc, evidence: str, now: float, similarity: float
    ) -> MemoryDoc:
        confidence = min(1.0, self.effective(doc, now) + self.settings.reinforce_step)
        key = self.keys.belief(doc["id"])
        m = Mutation()
        m.json_set(key, round(confidence, 6), "$.confidence")
        m.json_set(key, round(confidence, 6), "$.score")
        m.json_set(key, now, "$.reinforced_at")
        m.json_set(key, [*doc.get("evidence", []), evidence], "$.evidence")
        self._event(
            m,
            doc["id"],
            "reinforce",
            now,
            evidence=[evidence],
            confidence=round(confidence, 6),
            similarity=round(similarity, 4),
        )
        await self.memory.store.apply(m, "belief.reinforce")
        return {
            **doc,
            "confidence": confidence,
            "reinforced_at": now,
            "evidence": [*doc.get("evidence", []), evidence],
        }

    async def forget(self, id_or_prefix: str, now: float | None = None) -> MemoryDoc:
        """Soft-delete a belief (status ``forgotten``); it never reaches a context again.

        Raises:
            InvalidOperationError: the belief is not active.
        """
        doc = await self.get(id_or_prefix)
        if not is_active(doc.get("status")):
            raise InvalidOperationError(f"belief {doc['id']} is {doc.get('status')}, not active")
        when = now or time.time()
        m = Mutation()
        self._status_ops(m, doc, "forgotten")
        self._event(m, doc["id"], "forget", when)
        await self.memory.store.apply(m, "belief.forget")
        return {**doc, "status": "forgotten"}

    async def prune(self, threshold: float | None = None, now: float | None = None) -> list[str]:
        """Mark active beliefs under ``threshold`` effective confidence ``pruned``."""
        limit = self.settings.prune_below if threshold is None else threshold
        if not 0 <= limit <= 1:
            raise InvalidOperationError("the threshold is a confidence between 0 and 1")
        when = now or time.time()
        doomed = [
            b for b in await self.select(Status.ACTIVE, when) if b["effective_confidence"] < limit
        ]
        for start in range(0, len(doomed), 200):
            m = Mutation()
            for doc in doomed[start : start + 200]:
                self._status_ops(m, doc, "pruned")
                self._event(
                    m, doc["id"], "prune", when, effective_confidence=doc["effective_confidence"]
                )
            await self.memory.store.apply(m, "belief.prune")
        return [d["id"] for d in doomed]

    async def reflect(self, now: float | None = None) -> Reflection:
        """Near-duplicate clusters and stale beliefs (a report; nothing changes)."""
        when = now or time.time()
        active = await self.select(Status.ACTIVE, when)
        clusters: list[list[str]] = []
        seen: set[str] = set()
        for doc in active:
            if doc["id"] in seen:
                continue
            vector = await self.memory.embed(str(doc["content"]))
            near = [
                d["id"]
                for d, sim in await self.similar(str(doc["content"]), vector, 10)
                if d["id"] != doc["id"] and sim > 0.9 and d["id"] not in seen
            ]
            if near:
                clusters.append([doc["id"], *near])
                seen.update([doc["id"], *near])
        stale = [d["id"] for d in active if d["effective_confidence"] < self.settings.uncertain_at]
        return Reflection(duplicates=clusters, stale=stale, active=len(active))

    async def stats(self, now: float | None = None) -> dict[str, object]:
        """Counts by status and type, mean effective confidence, open questions."""
        every = await self.select(None, now)
        active = [b for b in every if is_active(b.get("status"))]
        by_status = {s: sum(1 for b in every if matches(b.get("status"), s)) for s in STATUSES}
        by_type = {t: sum(1 for b in active if b.get("type") == t) for t in TYPES}
        mean = sum(b["effective_confidence"] for b in active) / len(active) if active else 0.0
        tiers = self.settings
        return {
            "total": len(every),
            "by_status": by_status,
            "active_by_type": by_type,
            "mean_effective_confidence": round(mean, 4),
            "in_context": sum(1 for b in active if b["effective_confidence"] >= tiers.context_at),
            "uncertain": sum(
                1
                for b in active
                if tiers.uncertain_at <= b["effective_confidence"] < tiers.context_at
            ),
            "open_questions": sum(
                1 for b in active if b["effective_confidence"] < tiers.uncertain_at
            ),
        }

"""The archetype's part of a context (docs/design.md, "Archetypes").

Known failure patterns, recent events, salient entities and the relations around them.
The memory budget is split as the archetype's strategy says (recent / semantic /
entities / relations); each part is ranked with the archetype's scoring: recency
``exp(-age_hours / 24)``, relevance (the share of the query's words an item holds) and
salience, times 1.2 for a success and 0.8 for a failure. What a part leaves unused goes
to the semantic part (hybrid search), which the assembler fills last.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from aether.memory.knowledge.archetypes.base import Archetype, ContextStrategy
from aether.memory.knowledge.events import Events
from aether.memory.knowledge.graph import Graph
from aether.memory.retrieval.recency import decay
from aether.memory.retrieval.text import coverage, query_tokens, words
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import MemoryDoc
from aether.memory.tiers.decisions import FailureMemory, pattern_line
from aether.tokens import count_tokens, truncate_to_tokens

SEED_HALF_LIFE_DAYS = math.log(2)
"""Seed 000's recency is ``exp(-age_hours / 24)``: a one-day e-folding, that half-life."""
OUTCOME_FACTOR = {"success": 1.2, "failure": 0.8}
LINE_TOKENS = 60
SEED_ENTITIES = 5


@dataclass
class GraphContext:
    """The rendered relational sections and what each holds."""

    text: str
    tokens: int
    counts: dict[str, int]


def seed_score(
    strategy: ContextStrategy,
    *,
    age_s: float,
    rel: float,
    salience: float,
    outcome: str | None = None,
) -> float:
    """Seed 000's score of one item."""
    score = decay(age_s, SEED_HALF_LIFE_DAYS) * strategy.recency_weight
    score += rel * strategy.relevance_weight + salience * strategy.salience_weight
    return score * OUTCOME_FACTOR.get(outcome or "", 1.0)


def _fill(title: str, lines: list[str], budget: int) -> list[str]:
    """The header and as many lines as fit ``budget`` tokens (nothing when none fits)."""
    if not lines or budget <= 20:
        return []
    out = [f"## {title}"]
    used = count_tokens(out[0]) + 1
    for line in lines:
        line = truncate_to_tokens(line, LINE_TOKENS)
        cost = count_tokens(line) + 1
        if used + cost > budget:
            break
        out.append(line)
        used += cost
    return out if len(out) > 1 else []


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M")


async def graph_context(
    memory: MemoryLayer,
    archetype: Archetype,
    query: str,
    budget: int,
    session: str | None,
    now: float,
) -> GraphContext:
    """The relational sections within ``budget`` tokens (the semantic share excluded)."""
    strategy = archetype.strategy
    shares = strategy.budget
    query_words = query_tokens(query)
    total_share = max(1, 100 - shares["semantic"])
    part = {
        name: budget * shares[name] // total_share for name in ("recent", "entities", "relations")
    }
    blocks: list[str] = []
    counts: dict[str, int] = {}

    def add(name: str, lines: list[str]) -> None:
        blocks.extend(lines)
        counts[name] = max(0, len(lines) - 1)

    patterns = await FailureMemory(memory).patterns()
    add(
        "patterns",
        _fill("Known failure patterns", [pattern_line(p) for p in patterns], min(budget // 5, 200)),
    )

    recent: list[MemoryDoc] = []
    if session:
        recent = await Events(memory, archetype).recent(session, 30)
    scored = sorted(
        recent,
        key=lambda e: seed_score(
            strategy,
            age_s=now - float(e["timestamp"]),
            rel=coverage(query_words, words(str(e["content"]))),
            salience=0.5,
            outcome=e.get("outcome"),
        ),
        reverse=True,
    )
    event_lines = [
        f"- [{_when(float(e['timestamp']))}] {e['type']}"
        + (f" ({e['outcome']})" if e.get("outcome") else "")
        + f": {' '.join(str(e.get('summary') or e['content']).split())}"
        for e in scored
    ]
    add("events", _fill("Recent events", event_lines, part["recent"]))

    graph = Graph(memory)
    entities = await graph.find(query, limit=20) if query_words else []
    entities.sort(
        key=lambda d: seed_score(
            strategy,
            age_s=now - d["last_seen"],
            rel=coverage(query_words, words(" ".join([d["name"], *d["aliases"]]))),
            salience=d["salience"],
        ),
        reverse=True,
    )
    entity_lines = [
        f"- {d['type']} {d['name']} ({d['mention_count']} mentions, salience {d['salience']:.2f})"
        for d in entities
    ]
    add("entities", _fill("Entities", entity_lines, part["entities"]))

    seeds = [d["id"] for d in entities[:SEED_ENTITIES]]
    expansion = await graph.expand(seeds, depth=2) if seeds else None
    relation_lines: list[str] = []
    if expansion is not None:
        names = {eid: node["name"] for eid, node in expansion.nodes.items()}
        for source, kind, target, weight, hop in expansion.edges:
            if source in names and target in names:
                relation_lines.append(
                    f"- {names[source]} {kind} {names[target]} (weight {weight:g}, hop {hop})"
                )
    add("relations", _fill("Relations", relation_lines, part["relations"]))
    text = "\n".join(blocks)
    return GraphContext(text, count_tokens(text) if text else 0, counts)

"""The whole memory loop over four simulated weeks: facts change, the context follows.

A user tells the agent (the real :class:`AgentRuntime` against the scripted
OpenAI-compatible server) about their life; eleven facts change along the way (a job, a
city, a partner's name, counts...). Every evening maintenance runs at the simulated time
(its ``learn`` step turns the day's turns into beliefs and graph entries, the others
reflect, digest and prune). Time is injected, never slept. Afterwards, for every fact, the
context assembled for a question about it holds the latest value and never an older one,
and the graph holds the people and places mentioned.

With an LLM, extraction is one structured call per batch (the scripted server plays the
model: it reads the turns it is sent) and contradictions are the model's judgement. The
same scenario runs with the deterministic extractors and heuristics for the facts they
can read (``deterministic=True`` below).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.identity.bootstrap import default_identity_dir
from aether.maintenance.engine import MaintenanceEngine
from aether.memory.knowledge.graph import Graph
from aether.operations import Parts
from aether.runtime.agent import AgentRuntime
from aether.runtime.llm import LLMClient
from aether.testing.model import ScriptedOpenAI, completion


@dataclass(frozen=True)
class Fact:
    says: str
    """What the user says, ``{v}`` the value."""
    states: str
    """The fact as a model would extract it (also what contradiction checks compare)."""
    question: str
    values: tuple[str, ...]
    """Oldest first: the last is what must be recalled."""
    shown: str = "{v}"
    """How a value appears in text (``{v} cats``): what the context must not show."""
    kind: str | None = None
    """The value's entity type, when it is one."""
    named: str = "{v}"
    """How the value is named as an entity."""
    relation: str = "has"
    """The relation from the subject to the value, as the scripted model names it."""
    deterministic: bool = True


FACTS = (
    Fact(
        "I work at {v} now.",
        "User works at {v}",
        "Where does the user work?",
        ("Acme", "Globex"),
        kind="organisation",
        relation="works_at",
    ),
    Fact(
        "I live in {v}.",
        "User lives in {v}",
        "Which city does the user live in?",
        ("Lisbon", "Porto", "Braga"),
        kind="place",
        relation="lives_in",
    ),
    Fact(
        "My partner is {v}.",
        "User's partner is {v}",
        "What is the name of the user's partner?",
        ("Samuel", "Alexis"),
        kind="person",
        relation="partner",
    ),
    Fact("I have {v} cats.", "User has {v} cats", "How many cats?", ("4", "6"), "{v} cats"),
    Fact(
        "My manager is {v}.",
        "User's manager is {v}",
        "Who is the user's manager?",
        ("Priya", "Tomasz"),
        kind="person",
        relation="manager",
    ),
    Fact(
        "My sister Maria lives in {v}.",
        "Maria lives in {v}",
        "Where does Maria, the user's sister, live?",
        ("Berlin", "Madrid"),
        kind="place",
        relation="lives_in",
    ),
    Fact(
        "I run {v} km every week.",
        "User runs {v} km every week",
        "How far does the user run every week?",
        ("15", "35"),
        "{v} km",
    ),
    Fact(
        "The NAS has {v} TB of disks.",
        "The NAS has {v} TB of disks",
        "How big is the NAS?",
        ("12", "16"),
        "{v} TB",
    ),
    Fact(
        "My favourite band is {v}.",
        "User's favourite band is {v}",
        "What is the user's favourite band?",
        ("Muse", "Radiohead"),
    ),
    Fact(
        "I drive a {v}.",
        "User drives a {v}",
        "What car does the user drive?",
        ("Corolla", "Civic"),
    ),
    Fact(
        "My dentist is Dr {v}.",
        "User's dentist is Dr {v}",
        "Who is the user's dentist?",
        ("Silva", "Costa"),
        kind="person",
        named="Dr {v}",
        relation="dentist",
    ),
)
FILLERS = (
    "Quiet day, read a few chapters of a novel.",
    "Cooked a big pot of soup for the week.",
    "Long walk by the river this evening.",
)
START = datetime(2026, 3, 2, tzinfo=UTC)


def _pattern(template: str) -> re.Pattern[str]:
    return re.compile(re.escape(template).replace(re.escape("{v}"), r"(\w+)") + r"\.?$")


def _read(text: str, template: str) -> str | None:
    found = _pattern(template).match(text.strip())
    return found.group(1) if found else None


def plan() -> list[tuple[int, str]]:
    """(day, message): each fact stated, then changed (a city twice), fillers between."""
    out = [(day, FILLERS[day % len(FILLERS)]) for day in range(28)]
    for i, fact in enumerate(FACTS):
        for n, value in enumerate(fact.values):
            out.append((1 + i + n * 12, fact.says.format(v=value)))
    return sorted(out, key=lambda x: x[0])


def extraction(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model's structured extraction: it reads each ``User:`` line it is sent."""
    facts, entities, relations = [], [{"name": "User", "type": "person"}], []
    for line in body["messages"][-1]["content"].splitlines():
        said = line.removeprefix("User: ").strip()
        for fact in FACTS:
            value = _read(said, fact.says)
            if value is None:
                continue
            facts.append({"statement": fact.states.format(v=value)})
            if fact.kind:
                name = fact.named.format(v=value)
                entities.append({"name": name, "type": fact.kind})
                subject = "Maria" if "Maria" in fact.says else "User"
                if subject == "Maria":
                    entities.append({"name": "Maria", "type": "person"})
                relations.append({"source": subject, "type": fact.relation, "target": name})
    reply = {"facts": facts, "entities": entities, "relations": relations}
    return completion(json.dumps(reply))


def responder(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model's other answers: a short reply, or a contradiction judgement."""
    system = str(body["messages"][0].get("content", ""))
    if "contradiction" in system:
        prompt = str(body["messages"][-1]["content"])
        a = re.search(r"^A: (.*)$", prompt, re.M)
        b = re.search(r"^B: (.*)$", prompt, re.M)
        verdict = False
        for fact in FACTS:
            old = _read(a.group(1), fact.states) if a else None
            new = _read(b.group(1), fact.states) if b else None
            verdict = verdict or (old is not None and new is not None and old != new)
        return completion(json.dumps({"contradicts": verdict}))
    return completion("Noted.")


@pytest.mark.parametrize("extractor", ["llm", "deterministic"])
async def test_four_weeks_of_changing_facts(
    settings: Settings, client: Redis, checkpoints: Checkpoints, extractor: str
) -> None:
    s = settings.model_copy(
        update={"context": settings.context.model_copy(update={"window_tokens": 2048})}
    )
    parts = Parts(s, client)
    layer, checkpoints = parts.memory, parts.checkpoints
    await parts.search.ensure_index()
    now = [START.timestamp()]
    with ScriptedOpenAI(responder=responder, extractor=extraction) as server:
        llm = LLMClient(server.base_url, "scripted", max_retries=0)
        agent = AgentRuntime(parts, llm=llm, clock=lambda: now[0])
        await agent.identity.ensure(default_identity_dir())
        maintenance = MaintenanceEngine(
            layer, checkpoints, llm=llm if extractor == "llm" else None, beliefs=s.beliefs
        )
        by_day: dict[int, list[str]] = {}
        for day, message in plan():
            by_day.setdefault(day, []).append(message)
        for day, messages in sorted(by_day.items()):
            for n, message in enumerate(messages):
                now[0] = (START + timedelta(days=day, hours=9, minutes=10 * n)).timestamp()
                assert (await agent.step(message)).reply == "Noted."
            await maintenance.run(now=START + timedelta(days=day, hours=23))
        facts = [f for f in FACTS if extractor == "llm" or f.deterministic]
        asker = AgentRuntime(Parts(settings, client), session="questions", clock=lambda: now[0])
        for fact in facts:
            ctx, _ = await asker.context(fact.question)
            seen = ctx.text()  # the system prompt, memories, graph and history
            latest = fact.shown.format(v=fact.values[-1])
            assert re.search(rf"\b{re.escape(latest)}\b", seen), (fact.question, seen)
            for old in fact.values[:-1]:
                shown = fact.shown.format(v=old)
                assert not re.search(rf"\b{re.escape(shown)}\b", seen), (fact.question, old, seen)
        graph = Graph(layer)
        for fact in facts:
            if fact.kind in ("person", "place"):
                for value in fact.values:
                    assert await graph.find(fact.named.format(v=value)), value
        assert await graph.find("Maria")
        await llm.aclose()

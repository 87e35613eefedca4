"""Reranking by the configured LLM, and finding nothing when it judges nothing relevant.

``AETHER_MEMORY__RERANK=llm`` (issue #32, items 5 and 6): the real ``openai`` client
against the scripted local server, whose structured-output answers grade the memories
the way a reader would (a memory that answers 3, one on the topic 1, the rest 0).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from redis.asyncio import Redis

from aether.app import Aether
from aether.config import Settings
from aether.errors import LLMError
from aether.identity.bootstrap import default_identity_dir
from aether.memory.retrieval.llm_judge import GRADES, MAX_CHARS, LLMJudge, prompt, read_judgement
from aether.memory.retrieval.rerank import WEIGHT
from aether.memory.tiers.daily import DailyLog
from aether.runtime.llm import LLMClient
from aether.testing.model import ScriptedOpenAI, completion, structured
from tests.conftest import dump_state, invoke_cli, run_cli
from tests.test_daemon_faults import _cli, _env, _stop, _up, _wait_up, home  # noqa: F401

NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()
QUESTION = "Where did Caroline move from?"
UNANSWERED = "Which school did Caroline study at?"
ANSWER = "Caroline: I came here from Sweden four years ago, right after school."
DISTRACTORS = (
    "Melanie: Caroline, where should we move the meeting? Caroline will decide later.",
    "Melanie: Caroline, move your car please, it blocks the garage.",
    "Caroline: Where did you buy that lamp? I want to move mine.",
)
_MEMORY = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def reader(body: dict[str, Any]) -> dict[str, Any]:
    """Grades as a reader would: the answer 3, a memory about Caroline 1, the rest 0.

    Only ``QUESTION`` has an answer among the memories.
    """
    asked = str(body["messages"][-1]["content"])
    question = asked.splitlines()[0]
    grades = []
    for number, text in _MEMORY.findall(asked):
        grade = 3 if "Sweden" in text and QUESTION in question else int("Caroline" in text)
        grades.append({"memory": int(number), "grade": grade})
    return completion(json.dumps({"grades": grades}))


def judged(settings: Settings, server: ScriptedOpenAI, floor: float = 0.0) -> Settings:
    memory = settings.memory.model_copy(update={"rerank": "llm", "rerank_floor": floor})
    llm = settings.llm.model_copy(
        update={"base_url": server.base_url, "model": "scripted", "max_retries": 0}
    )
    return settings.model_copy(update={"memory": memory, "llm": llm})


async def _seed(agent: Aether) -> str:
    daily = DailyLog(agent.memory)
    for i, text in enumerate(DISTRACTORS):
        await daily.log(text, timestamp=NOW - 3_600 * (i + 1))
    answer = await daily.log(ANSWER, timestamp=NOW - 86_400 * 3)
    return str(answer["id"])


def _judge_requests(server: ScriptedOpenAI) -> list[dict[str, Any]]:
    return [
        r["body"]
        for r in server.requests
        if r["path"].endswith("/chat/completions") and "response_format" in r["body"]
    ]


def test_a_judgement_reads_as_probabilities_and_a_bad_one_is_an_error() -> None:
    raw = json.dumps({"grades": [{"memory": 2, "grade": 3}, {"memory": 1, "grade": 1}]})
    assert read_judgement(raw, 3) == [1 / GRADES, 1.0, 0.0]  # ungraded: unrelated
    stray = json.dumps({"grades": [{"memory": 9, "grade": 3}, {"memory": 1, "grade": 2}]})
    assert read_judgement(stray, 2) == [2 / GRADES, 0.0]  # a number out of range is ignored
    assert read_judgement('{"grades": []}', 0) == []
    for bad in (
        "not json",
        '{"grades": [{"memory": 1, "grade": 7}]}',
        '{"grades": [{"memory": "one"}]}',
        '{"grades": []}',
        '{"grades": [{"memory": 5, "grade": 3}]}',
    ):
        with pytest.raises(LLMError):
            read_judgement(bad, 2)


def test_the_prompt_numbers_every_memory_and_cuts_a_long_one() -> None:
    long_text = "word " * 1_000
    asked = prompt("Where?\n\n[9] injected", [ANSWER, long_text])
    numbered = _MEMORY.findall(asked)
    assert [n for n, _ in numbered] == ["1", "2"]  # a question's own brackets stay on its line
    assert numbered[0][1] == ANSWER
    assert len(numbered[1][1]) <= MAX_CHARS + 3 and numbered[1][1].endswith("...")


async def test_the_judge_asks_once_per_question_and_memory() -> None:
    with ScriptedOpenAI(extractor=reader) as server:
        llm = LLMClient(server.base_url, "scripted", max_retries=0)
        judge = LLMJudge(llm)
        first = await judge.probabilities(QUESTION, [ANSWER, DISTRACTORS[0], "The sky."])
        assert first == [1.0, 1 / GRADES, 0.0]
        again = await judge.probabilities(QUESTION, [DISTRACTORS[0], ANSWER])
        assert again == [1 / GRADES, 1.0]
        assert len(_judge_requests(server)) == 1  # the second was answered from the cache
        await judge.probabilities(QUESTION, [ANSWER, DISTRACTORS[1]])
        assert len(_judge_requests(server)) == 2
        assert "[2]" not in str(_judge_requests(server)[-1]["messages"][-1]["content"])
        await llm.aclose()


async def test_a_search_judged_by_the_llm_leads_with_the_answer(
    settings: Settings, client: Redis
) -> None:
    with ScriptedOpenAI(extractor=reader) as server:
        plain = Aether(settings, client)
        await plain.ready()
        answer = await _seed(plain)
        before = await plain.search.search(QUESTION, limit=4, now=NOW)
        assert before and before[0].doc["id"] != answer  # the question's words mislead fusion
        agent = Aether(judged(settings, server), client)
        await agent.ready()
        image = await dump_state(client, agent.keys)
        after = await agent.search.search(QUESTION, limit=4, now=NOW)
        assert after[0].doc["id"] == answer
        assert {h.key for h in after} == {h.key for h in before}  # reordered, nothing new
        top = after[0]
        fused = next(h for h in before if h.key == top.key)
        assert top.match == pytest.approx((1 - WEIGHT) * (fused.match or 0) + WEIGHT, abs=1e-5)
        asked = _judge_requests(server)
        assert len(asked) == 1 and QUESTION in str(asked[0]["messages"][-1]["content"])
        assert await dump_state(client, agent.keys) == image  # a judged read writes nothing
        await agent.aclose()


async def test_with_a_floor_an_unanswered_question_finds_nothing(
    settings: Settings, client: Redis
) -> None:
    with ScriptedOpenAI(extractor=reader) as server:
        agent = Aether(judged(settings, server, floor=0.34), client)
        await agent.ready()
        answer = await _seed(agent)
        plain = await Aether(settings, client).search.search(UNANSWERED, limit=4, now=NOW)
        assert plain  # fusion finds the question's words...
        assert await agent.search.search(UNANSWERED, limit=4, now=NOW) == []  # ...no answer
        found = await agent.search.search(QUESTION, limit=4, now=NOW)
        assert [h.doc["id"] for h in found] == [answer]  # only what the judge kept
        await agent.aclose()


async def test_when_the_llm_is_down_or_talks_nonsense_search_keeps_its_order(
    settings: Settings, client: Redis
) -> None:
    replies: list[Callable[[dict[str, Any]], dict[str, Any]]] = []

    def judge_or_not(body: dict[str, Any]) -> dict[str, Any]:
        return replies.pop(0)(body) if replies else reader(body)

    with ScriptedOpenAI(extractor=judge_or_not) as server:
        plain = Aether(settings, client)
        await plain.ready()
        await _seed(plain)
        expected = [h.key for h in await plain.search.search(QUESTION, limit=4, now=NOW)]
        agent = Aether(judged(settings, server, floor=0.34), client)
        server.failing = True
        down = await agent.search.search(QUESTION, limit=4, now=NOW)
        assert [h.key for h in down] == expected  # unjudged: fusion's order, nothing dropped
        server.failing = False
        replies.append(lambda body: completion("I think the first one."))
        nonsense = await agent.search.search(QUESTION, limit=4, now=NOW)
        assert [h.key for h in nonsense] == expected
        recovered = await agent.search.search(QUESTION, limit=4, now=NOW)
        assert len(recovered) == 1 and "Sweden" in recovered[0].content
        await agent.aclose()


async def test_judged_searches_take_hostile_queries_and_run_concurrently(
    settings: Settings, client: Redis
) -> None:
    with ScriptedOpenAI(extractor=reader) as server:
        agent = Aether(judged(settings, server), client)
        await agent.ready()
        answer = await _seed(agent)
        odd = await agent.search.search("*&^%$#@!{}[]|\\\"' -@tag:{x} Caroline", limit=4, now=NOW)
        assert all(h.doc["content"] for h in odd)
        long_query = QUESTION + " and" * 20_000
        assert len(await agent.search.search(long_query, limit=4, now=NOW)) <= 4
        body = _judge_requests(server)[-1]["messages"][-1]["content"]
        assert len(body) < 20_000  # the question is cut, not sent whole
        together = await asyncio.gather(
            *(agent.search.search(QUESTION, limit=4, now=NOW) for _ in range(4))
        )
        assert all(hits[0].doc["id"] == answer for hits in together)
        await agent.aclose()


async def test_a_context_over_simulated_days_with_the_llm_judging_and_then_down(
    settings: Settings, client: Redis
) -> None:
    with ScriptedOpenAI(extractor=reader) as server:
        agent = Aether(judged(settings, server, floor=0.34), client)
        await agent.ready()
        await agent.identity.ensure(default_identity_dir())
        daily = DailyLog(agent.memory)
        day = 86_400.0
        start = NOW - 12 * day
        await daily.log(ANSWER, timestamp=start + day)  # said once, early on
        for n in range(2, 8):  # then days of talk that share the question's words
            for i, text in enumerate(DISTRACTORS):
                await daily.log(text, timestamp=start + n * day + i)
        at = datetime.fromtimestamp(NOW, UTC)
        ctx = await agent.assembler.assemble(QUESTION, 600, now=at)
        assert [m.content for m in ctx.chosen] == [ANSWER]
        nothing = await agent.assembler.assemble(UNANSWERED, 600, now=at)
        assert nothing.chosen == [] and nothing.memories.text == ""
        server.failing = True  # the LLM goes down: contexts still come, unjudged
        down = await agent.assembler.assemble("Where did Melanie move the meeting?", 600, now=at)
        assert down.chosen and any("meeting" in m.content for m in down.chosen)
        await agent.aclose()


def test_llm_reranking_without_an_llm_is_refused_with_what_to_set(
    cli_env: dict[str, str],
) -> None:
    with pytest.raises(ValidationError, match="AETHER_LLM__BASE_URL"):
        Settings(memory={"rerank": "llm"})  # type: ignore[arg-type]
    bad = run_cli({**cli_env, "AETHER_MEMORY__RERANK": "llm"}, "memory", "search", QUESTION)
    assert bad.returncode != 0 and "AETHER_LLM__BASE_URL" in bad.stderr + bad.stdout


def test_the_cli_search_is_judged_by_the_configured_llm(cli_env: dict[str, str]) -> None:
    for text in (ANSWER, *DISTRACTORS):
        logged = invoke_cli(cli_env, "memory", "log", text)
        assert logged.returncode == 0, logged.stderr
    with ScriptedOpenAI(extractor=reader) as server:
        env = {
            **cli_env,
            "AETHER_MEMORY__RERANK": "llm",
            "AETHER_MEMORY__RERANK_FLOOR": "0.34",
            "AETHER_LLM__BASE_URL": server.base_url,
            "AETHER_LLM__MODEL": "scripted",
        }
        found = invoke_cli(env, "memory", "search", QUESTION, "--json")
        assert found.returncode == 0, found.stderr
        hits = json.loads(found.stdout)
        assert [h["content"] for h in hits] == [ANSWER]
        assert len(_judge_requests(server)) == 1
        none = invoke_cli(env, "memory", "search", UNANSWERED, "--json")
        assert none.returncode == 2, none.stderr  # ran and found nothing
        assert json.loads(none.stdout) == []


async def test_the_scripted_program_judges_by_shared_words_so_a_newcomer_can_try_it() -> None:
    with ScriptedOpenAI(extractor=structured) as server:
        llm = LLMClient(server.base_url, "scripted", max_retries=0)
        grades = await LLMJudge(llm).probabilities(
            "Where did Caroline move from?", [ANSWER, "The weather was mild."]
        )
        assert grades[0] > grades[1] == 0.0
        extraction = await llm.complete_json(
            "Extract facts.", "Caroline moved.", {"type": "object"}
        )
        assert json.loads(extraction) == {"facts": [], "entities": [], "relations": []}
        await llm.aclose()


def test_the_daemon_judges_its_contexts_and_answers_when_the_judge_fails(
    home: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    judging = [True]

    def judge_or_nonsense(body: dict[str, Any]) -> dict[str, Any]:
        return reader(body) if judging[0] else completion("the second one, I think")

    def echo_context(body: dict[str, Any]) -> dict[str, Any]:
        return completion("echo: " + str(body["messages"][0]["content"]))

    with ScriptedOpenAI(responder=echo_context, extractor=judge_or_nonsense) as server:
        env = {
            **_env(home, server),
            "AETHER_MEMORY__RERANK": "llm",
            "AETHER_MEMORY__RERANK_FLOOR": "0.34",
        }
        for text in (ANSWER, *DISTRACTORS):
            assert _cli(env, "memory", "log", text).returncode == 0
        log = tmp_path / "daemon.log"
        proc = _up(env, log)
        try:
            _wait_up(env, proc, log)
            sent = _cli(env, "send", QUESTION, "--timeout", "60")
            assert sent.returncode == 0, sent.stderr + log.read_text()[-3000:]
            assert "Sweden" in sent.stdout and "garage" not in sent.stdout  # judged context
            assert any(
                QUESTION in str(b["messages"][-1]["content"]) for b in _judge_requests(server)
            )
            judging[0] = False  # the judge talks nonsense: the agent still answers, unjudged
            again = _cli(env, "send", "Where should we move the meeting?", "--timeout", "60")
            assert again.returncode == 0, again.stderr + log.read_text()[-3000:]
            assert "meeting" in again.stdout
            assert proc.poll() is None
        finally:
            _stop(proc)
        assert proc.returncode == 0, log.read_text()[-3000:]
        assert "relevance judge unavailable" in log.read_text()

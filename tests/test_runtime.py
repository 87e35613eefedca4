"""The agent runtime end to end: the real openai client against a scripted local server."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from redis.asyncio import Redis

from aether.app import Aether
from aether.checkpoints.manager import Checkpoints
from aether.config import ContextSettings, Settings
from aether.context.session import EVICTED_TAG
from aether.context.thresholds import CRITICAL, PROACTIVE, WARNING, WARNING_TEXT
from aether.errors import CheckpointError, InvalidOperationError, LLMError, LLMNotConfiguredError
from aether.identity.bootstrap import default_identity_dir
from aether.memory.retrieval.search import MemorySearch
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.episodes import Episodes
from aether.runtime.agent import AgentRuntime, StepResult
from aether.runtime.llm import LLMClient
from aether.runtime.tools import Tool
from aether.store.client import connect
from aether.testing.model import ScriptedOpenAI, completion

STAMP = re.compile(r"^\[Current Time: \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\] ")
FILLER = (
    "We talked about the garden, the weather on the coast, a book about sailing ships, "
    "the price of train tickets and what to cook for dinner on the weekend. "
)


def responder(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: tools when asked, summaries without the secret, else chatter."""
    messages = body["messages"]
    last = messages[-1]
    if messages[0]["content"].startswith("You compress your own conversation history"):
        return completion("The user chatted about everyday things.")
    if last["role"] == "user" and "USE TOOLS" in last["content"]:
        return completion(
            tool_calls=[
                ("call_s", "memory_search", {"query": "locker"}),
                ("call_p", "scratchpad_set", {"id": "plan", "value": "water plants"}),
            ]
        )
    if last["role"] == "user" and "DECIDE" in last["content"]:
        return completion(
            tool_calls=[
                (
                    "call_d",
                    "decision_record",
                    {
                        "title": "Session store",
                        "choice": "Redis streams",
                        "rationale": "ordered and durable, and already deployed",
                    },
                ),
                ("call_x", "scratchpad_get", {"id": "no/such pad"}),
            ]
        )
    if last["role"] == "user" and "BROKEN TOOLS" in last["content"]:
        return completion(
            tool_calls=[
                ("call_u", "no_such_tool", {}),
                ("call_j", "memory_search", {"limit": "many"}),
                ("call_c", "shout", {"text": "hello"}),
            ]
        )
    if last["role"] == "tool":
        return completion("Done with the tools.")
    return completion("Understood. " + FILLER)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(dims=64, responder=responder) as s:
        yield s


def configured(settings: Settings, server: ScriptedOpenAI, **context: Any) -> Settings:
    return settings.model_copy(
        update={
            "embedding": settings.embedding.model_copy(
                update={
                    "provider": "openai",
                    "model": "bow",
                    "base_url": server.base_url,
                    "dims": 64,
                }
            ),
            "llm": {
                "base_url": server.base_url,
                "model": "scripted",
                "max_retries": 0,
                "timeout_s": 10,
            },
            "context": ContextSettings(**{"window_tokens": 4096, **context}),
        }
    )


async def open_runtime(settings: Settings, client: Redis, session: str = "conv") -> AgentRuntime:
    wired = Aether(settings, client)
    await wired.ready()
    rt = wired.runtime(session, llm=LLMClient.from_settings(settings))
    await rt.identity.ensure(default_identity_dir())
    return rt


def check_request(body: dict[str, Any]) -> None:
    """No tool pair split, every user message stamped."""
    messages = body["messages"]
    assert messages[0]["role"] == "system"
    for i, m in enumerate(messages):
        if m["role"] == "user":
            assert STAMP.match(m["content"]), m["content"][:60]
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            following = messages[i + 1 : i + 1 + len(ids)]
            assert [f.get("tool_call_id") for f in following] == ids
        if m["role"] == "tool":
            callers = [c["id"] for p in messages[:i] for c in p.get("tool_calls") or []]
            assert m["tool_call_id"] in callers


async def test_a_long_conversation_crosses_each_threshold_once_per_crossing(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    s = configured(settings, server)
    rt = await open_runtime(s, client)
    first = await rt.step("My locker code is 4711 and my cat is named Ziggy. USE TOOLS please.")
    assert [r.name for r in first.tool_runs] == ["memory_search", "scratchpad_set"]
    assert all(r.success for r in first.tool_runs) and first.llm_calls == 2
    assert first.reply == "Done with the tools."
    results: list[StepResult] = [first]
    actions: list[str] = []
    for i in range(60):
        result = await rt.step(f"Message {i}. {FILLER}{FILLER}")
        results.append(result)
        actions += result.actions
        if actions.count(CRITICAL) == 2:
            break
    assert actions == [PROACTIVE, WARNING, CRITICAL, PROACTIVE, WARNING, CRITICAL]
    # after each compression the window is under 60 %
    compressions = [r for res in results for r in res.reports if CRITICAL in r.actions]
    assert len(compressions) == 2
    assert all(r.usage_after < 0.60 for r in compressions)
    assert all(r.evicted > 0 for r in compressions)
    # a checkpoint at each 60 % crossing and before each compression
    reasons = [c.reason for c in await rt.checkpoints.list()]
    assert reasons.count("context-proactive") == 2 and reasons.count("context-critical") == 2
    # the warning went into the conversation once per crossing, and the model saw it
    stored = await ChatSessions(rt.memory).messages("conv")
    assert [m["content"] for m in stored if m["role"] == "system"] == [WARNING_TEXT] * 2
    requests = server.chat_requests()
    assert any(m["content"] == WARNING_TEXT for r in requests for m in r["messages"][1:])
    for body in requests:
        if not body["messages"][0]["content"].startswith("You compress"):
            check_request(body)
    # the LLM wrote the summaries; the evicted fact is out of the window...
    last = [r for r in requests if not r["messages"][0]["content"].startswith("You compress")][-1]
    history = " ".join(str(m.get("content")) for m in last["messages"][1:])
    assert "4711" not in history and "The user chatted about everyday things." in history
    # ...but in memory, where search finds it
    hits = await MemorySearch(rt.memory).search("what is my locker code", limit=3)
    assert "4711" in hits[0].content
    assert EVICTED_TAG in hits[0].doc["tags"] and hits[0].doc["session"] == "conv"
    # and the next question gets it back as a relevant memory
    await rt.step("Quick question: what was my locker code again?")
    system = server.chat_requests()[-1]["messages"][0]["content"]
    assert "# Relevant memories" in system and "4711" in system
    # the tool calls were recorded as episodes, and the tool pair kept together in chat
    episodes = await Episodes(rt.memory).list("conv")
    assert [e["tool"] for e in episodes] == ["memory_search", "scratchpad_set"]
    assert stored[1]["role"] == "assistant" and [m["role"] for m in stored[2:4]] == ["tool"] * 2


async def test_the_window_survives_a_restart(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    s = configured(settings, server, window_tokens=2048, memory_share=0.05)
    rt = await open_runtime(s, client)
    for i in range(60):
        if CRITICAL in (await rt.observe("user", f"note {i}: {FILLER}")).actions:
            break
    await rt.observe("user", "one more note after the compression")
    before = await (await rt.session_window()).view()
    assert before.summary and before.start > 0
    again = await open_runtime(s, client)
    after = await (await again.session_window()).view()
    assert (after.start, after.summary, after.flags) == (before.start, before.summary, before.flags)


async def test_step_without_an_llm_is_a_clear_error_and_writes_nothing(
    settings: Settings, client: Redis
) -> None:
    s = settings.model_copy(update={"embedding": {"provider": "none"}})
    rt = Aether(s, client).runtime("quiet")
    with pytest.raises(LLMNotConfiguredError, match="AETHER_LLM__BASE_URL"):
        await rt.step("hello")
    assert await client.exists(rt.memory.keys.chat_messages("quiet")) == 0
    await rt.identity.ensure(default_identity_dir())
    report = await rt.observe("user", "everything else works without a model")
    assert report.usage_before > 0


async def test_an_unreachable_llm_fails_retryably(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    rt = await open_runtime(configured(settings, server), client)
    server.failing = True
    with pytest.raises(LLMError) as caught:
        await rt.step("hello?")
    assert caught.value.retryable
    server.failing = False
    assert (await rt.step("hello again")).reply.startswith("Understood.")


async def test_a_failing_llm_opens_the_breaker_then_fails_at_once(
    server: ScriptedOpenAI,
) -> None:
    """After N failures in a row calls fail at once (naming the URL) until the cool-down."""
    import time

    from aether.runtime.llm import CircuitBreaker, LLMClient

    now = [1_000.0]
    url = server.base_url
    breaker = CircuitBreaker(url, failures=2, cooldown_s=30, clock=lambda: now[0])
    llm = LLMClient(url, "m", timeout_s=5, max_retries=0, breaker=breaker)
    messages = [{"role": "user", "content": "hi"}]
    server.failing = True  # it answers 500: worth trying again, until N in a row
    for _ in range(2):
        with pytest.raises(LLMError, match="answered 500") as caught:
            await llm.chat(messages)
        assert url in str(caught.value) and caught.value.retryable
    started = time.monotonic()
    with pytest.raises(LLMError, match="fail at once") as fast:
        await llm.chat(messages)
    assert time.monotonic() - started < 0.1 and not fast.value.retryable
    assert url in str(fast.value) and breaker.failing_since == 1_000.0
    server.failing = False
    now[0] += 31  # the cool-down is over: the endpoint is tried again, and answers
    assert (await llm.chat(messages)).content
    assert breaker.open_until is None and breaker.in_a_row == 0
    await llm.aclose()


async def test_a_refused_connection_opens_the_breaker_at_once() -> None:
    """Nothing listens there: the first call fails within its timeout, the next at once."""
    import socket
    import time

    from aether.runtime.llm import CircuitBreaker, LLMClient

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    breaker = CircuitBreaker(dead, failures=3, cooldown_s=30)
    llm = LLMClient(dead, "m", timeout_s=5, max_retries=3, breaker=breaker)
    messages = [{"role": "user", "content": "hi"}]
    started = time.monotonic()
    with pytest.raises(LLMError, match="unreachable") as caught:
        await llm.chat(messages)
    assert time.monotonic() - started < 15 and caught.value.retryable  # not 50 s
    assert breaker.open_until is not None  # open after one refused call, not three
    started = time.monotonic()
    with pytest.raises(LLMError, match="fail at once"):
        await llm.chat(messages)
    assert time.monotonic() - started < 0.1
    await llm.aclose()


async def test_bad_tool_calls_become_error_results(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    # a window whose tool share (15 %) holds the memory tools and one more
    rt = await open_runtime(configured(settings, server, window_tokens=8192), client)
    heard: list[dict[str, Any]] = []

    async def shout(args: dict[str, Any]) -> str:
        heard.append(args)
        raise RuntimeError("shouting is broken")

    rt.register_tool(
        Tool(
            "shout",
            "Shout a text.",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            shout,
        )
    )
    result = await rt.step("BROKEN TOOLS now")
    assert [r.success for r in result.tool_runs] == [False, False, False]
    outputs = [r.output for r in result.tool_runs]
    assert "unknown tool" in outputs[0]
    assert "must be integer" in outputs[1] or "missing required" in outputs[1]
    assert "shouting is broken" in outputs[2] and heard == [{"text": "hello"}]
    assert result.reply == "Done with the tools."
    stored = await ChatSessions(rt.memory).messages("conv")
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    with pytest.raises(InvalidOperationError, match="already registered"):
        rt.register_tool(Tool("shout", "again", {"type": "object"}, shout))
    huge = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x " * 50} for i in range(60)},
    }
    with pytest.raises(InvalidOperationError, match="budget"):
        rt.register_tool(Tool("huge", "too big", huge, shout))


async def test_a_tool_that_keeps_failing_becomes_a_known_failure_pattern(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    """Each failed call is a failure memory; the third alike is a pattern every context shows."""
    from aether.memory.tiers.decisions import FailureMemory

    wired_settings = configured(settings, server, window_tokens=8192)
    rt = await open_runtime(wired_settings, client)

    async def shout(args: dict[str, Any]) -> str:
        raise RuntimeError("shouting is broken")

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    rt.register_tool(Tool("shout", "Shout a text.", schema, shout))
    failures = FailureMemory(rt.memory)
    for turn in range(3):
        result = await rt.step("BROKEN TOOLS now")
        assert [r.outcome for r in result.tool_runs] == ["error", "error", "error"]
        shouted = [p for p in await failures.patterns(min_count=1) if "shout" in str(p["key"])]
        assert shouted and shouted[0]["count"] == turn + 1
    known = await failures.patterns()  # seen three times: detected
    assert any("shouting_is_broken" in str(p["key"]) for p in known)
    wired = Aether(wired_settings, client)
    ctx = await wired.assembler.assemble("shout the greeting", 4000, session="conv")
    shown = ctx.graph.text
    assert "Known failure patterns" in shown and "shouting is broken" in shown


async def test_the_agent_records_decisions_and_each_tool_run_is_an_event(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    """Decisions from the agent's tool are memories a later search finds; each tool run
    (the failed one too) is an event the next context's recent events show."""
    from aether.memory.knowledge.archetypes import archetype
    from aether.memory.knowledge.events import Events
    from aether.memory.tiers.decisions import DecisionMemory
    from aether.operations import Caller
    from aether.operations import memory as memory_ops

    wired_settings = configured(settings, server, window_tokens=8192)
    rt = await open_runtime(wired_settings, client)
    result = await rt.step("DECIDE how to store sessions")
    assert [r.success for r in result.tool_runs] == [True, False]
    decisions = await DecisionMemory(rt.memory).list()
    assert [(d["title"], d["choice"]) for d in decisions] == [("Session store", "Redis streams")]
    events = await Events(rt.memory, archetype("general")).recent("conv", 10)
    kinds = sorted((e["type"], e["outcome"], e["summary"]) for e in events)
    assert kinds == [
        ("error", "failure", "scratchpad_get failed"),
        ("tool_call", "success", "decision_record ok"),
    ]
    wired = Aether(wired_settings, client)
    question = memory_ops.SearchArgs(query="why did we pick redis streams for sessions?")
    found = await memory_ops.memory_search(wired, Caller("cli"), question)
    assert any(h["kind"] == "decision" for h in found.results)
    ctx = await wired.assembler.assemble("what happened with the tools?", 4000, session="conv")
    assert "decision_record ok" in ctx.graph.text and "scratchpad_get failed" in ctx.graph.text


class BrokenCheckpoints(Checkpoints):
    async def create(self, *args: Any, **kwargs: Any) -> Any:
        raise CheckpointError("disk full")


async def test_compression_still_bounds_the_window_when_checkpoints_fail(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    s = configured(settings, server, window_tokens=2048, memory_share=0.05)
    rt = await open_runtime(s, client)
    rt.parts.checkpoints = BrokenCheckpoints(client, rt.memory.keys)  # the window's
    reports = [await rt.observe("user", f"note {i}: {FILLER}") for i in range(40)]
    critical = [r for r in reports if CRITICAL in r.actions]
    assert critical and all(r.usage_after < 0.60 and not r.checkpoints for r in critical)
    assert max(r.usage_after for r in reports) < 0.85


async def test_one_huge_message_is_compressed_harder(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    s = configured(settings, server, window_tokens=2048, memory_share=0.05)
    rt = await open_runtime(s, client)
    report = await rt.observe("user", "enormous paste: " + "lorem ipsum dolor " * 500)
    assert CRITICAL in report.actions
    assert report.usage_before >= 0.85 and report.usage_after < 0.60 and not report.over_budget
    view = await (await rt.session_window()).view()
    assert view.clip is not None and len(view.units) == 1


async def test_tool_results_are_stored_with_their_calls(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    rt = await open_runtime(configured(settings, server), client)
    await rt.step("USE TOOLS for the plan")
    stored = await ChatSessions(rt.memory).messages("conv")
    call = stored[1]
    assert [c["id"] for c in call["tool_calls"]] == ["call_s", "call_p"]
    assert json.loads(call["tool_calls"][1]["function"]["arguments"])["value"] == "water plants"
    assert [m["tool_call_id"] for m in stored[2:4]] == ["call_s", "call_p"]
    from aether.memory.tiers.scratchpad import Scratchpads

    assert await Scratchpads(rt.memory).get("plan") == "water plants"


async def test_the_scripted_model_runs_as_a_program_for_trying_the_daemon() -> None:
    """`python -m aether.testing.model` serves a model the real client can talk to."""
    import socket
    import subprocess
    import sys

    from aether.runtime.llm import LLMClient

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "aether.testing.model", "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/v1" in first
        assert "AETHER_LLM__MODEL=scripted" in proc.stdout.readline()
        llm = LLMClient(f"http://127.0.0.1:{port}/v1", "scripted", max_retries=0)
        reply = await llm.chat([{"role": "user", "content": "Is anyone there?"}])
        assert reply.content == '(scripted model) I heard: "Is anyone there?"'
        await llm.aclose()
    finally:
        proc.terminate()
        proc.wait(10)


async def test_a_replayed_conversation_keeps_its_warnings_where_they_were_crossed(
    settings: Settings, client: Redis, server: ScriptedOpenAI
) -> None:
    """Turns observed with their own (past) times: a warning sits after the turn that
    crossed 75 %, never at the wall clock's time after every turn of the history."""
    rt = await open_runtime(configured(settings, server, window_tokens=2048), client)
    start = datetime(2023, 5, 8, 13, 0, tzinfo=UTC).timestamp()  # three years ago
    warned_after: list[str] = []
    for i in range(80):
        said = f"Turn {i}. {FILLER}"
        report = await rt.observe("user" if i % 2 else "assistant", said, timestamp=start + i * 60)
        if WARNING in report.actions:
            warned_after.append(said)
        if len(warned_after) == 2:
            break
    assert len(warned_after) == 2  # crossed, compressed, crossed again
    stored = await ChatSessions(rt.memory).messages("conv")
    for said in warned_after:
        at = next(i for i, m in enumerate(stored) if m["content"] == said)
        assert stored[at + 1]["content"] == WARNING_TEXT  # right after the turn that crossed
        assert stored[at + 1]["timestamp"] < start + 80 * 60  # in the conversation's time
    for i in range(3):  # later turns follow the warning, as they did in time
        await rt.observe("user", f"Later {i}. {FILLER}", timestamp=start + 100 * 60 + i)
    window = await (await rt.session_window()).view()
    tail = [m for unit in window.units for m in unit][-1]
    assert str(tail["content"]).startswith("Later 2.")


async def _commands_during(settings: Settings, client: Redis, work: Any) -> list[list[str]]:
    """Every command Redis ran while ``work`` ran (MONITOR on a connection of its own)."""
    seen: list[list[str]] = []
    sentinel = "aether-test-monitor-end"
    watcher = await connect(settings)
    async with watcher, watcher.monitor() as monitor:
        await client.echo("aether-test-monitor-start")
        while "aether-test-monitor-start" not in (await monitor.next_command())["command"]:
            pass
        await work()
        await client.echo(sentinel)
        while True:
            command = (await monitor.next_command())["command"]
            if sentinel in command:
                return seen
            seen.append(command.split())


async def test_a_step_of_eight_tool_rounds_reads_the_identity_once_and_searches_once(
    settings: Settings, client: Redis
) -> None:
    """Each tool round of one message reuses the context's memory part: only the history grows."""

    def looping(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if messages[0]["content"].startswith("You compress your own conversation history"):
            return completion("The user chatted.")
        if body.get("tools"):  # offered tools: call one again, round after round
            return completion(tool_calls=[(f"c{len(messages)}", "scratchpad_get", {"id": "x"})])
        return completion("Done after every round.")

    with ScriptedOpenAI(dims=64, responder=looping) as server:
        s = configured(settings, server, max_tool_rounds=8)
        rt = await open_runtime(s, client)
        await rt.step("The garden plan: water the tomatoes on Tuesday.")
        keys = rt.memory.keys
        result: list[StepResult] = []

        async def step() -> None:
            result.append(await rt.step("What is the plan for the garden?"))

        commands = await asyncio.wait_for(_commands_during(s, client, step), 120)
    assert result[0].llm_calls == 8 and len(result[0].tool_runs) == 7
    assert result[0].reply == "Done after every round."
    identity_reads = [c for c in commands if c[:2] == ["HGETALL", keys.identity_profile()]]
    assert len(identity_reads) == 1
    # one search: one full-text query over the memory index that is not a completion
    searches = [
        c for c in commands if c[:2] == ["FT.SEARCH", keys.memory_index()] and "INKEYS" not in c
    ]
    assert len(searches) == 1, searches

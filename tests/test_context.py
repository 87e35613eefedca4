"""The context layer's parts: tokens, units and the window, thresholds, summaries,
the memory index and assembly within budget."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import ContextSettings, Settings
from aether.context.assembly import (
    EXCERPT_MARK,
    AssembledContext,
    Budgets,
    ContextAssembler,
    ScoredMemory,
    excerpt,
    focus,
    render_memories,
)
from aether.context.compression import HEADER, ExtractiveSummarizer, LLMSummarizer
from aether.context.history import history_units
from aether.context.thresholds import CRITICAL, PROACTIVE, WARNING, Thresholds
from aether.context.window import limit, render, units
from aether.errors import InvalidOperationError
from aether.identity.bootstrap import default_identity_dir
from aether.identity.profile import IdentityStore
from aether.memory.retrieval.search import MemorySearch
from aether.memory.retrieval.text import best_passage, query_tokens
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.longterm import LongTermMemory
from aether.memory.tiers.memory_index import MemoryIndex
from aether.runtime.llm import LLMClient
from aether.store.state import Mutation
from aether.testing.model import ScriptedOpenAI
from aether.tokens import count_message, count_messages, count_tokens, truncate_to_tokens
from tests.conftest import run_cli

UTC = ZoneInfo("UTC")


def _call(cid: str, name: str = "memory_search") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _conversation() -> list[dict[str, Any]]:
    return [
        {"id": "01", "role": "user", "content": "hi", "timestamp": 0.0},
        {
            "id": "02",
            "role": "assistant",
            "content": "",
            "timestamp": 1.0,
            "tool_calls": [_call("a"), _call("b")],
        },
        {"id": "03", "role": "tool", "content": "ra", "tool_call_id": "a", "timestamp": 1.0},
        {"id": "04", "role": "tool", "content": "rb", "tool_call_id": "b", "timestamp": 1.0},
        {"id": "05", "role": "assistant", "content": "done", "timestamp": 2.0},
        {"id": "06", "role": "user", "content": "bye", "timestamp": 3.0},
    ]


def test_tool_calls_and_results_are_counted() -> None:
    plain = {"role": "assistant", "content": "ok"}
    arguments = json.dumps({"query": "a long query " * 20})
    function = {"name": "memory_search", "arguments": arguments}
    calling = {**plain, "tool_calls": [{"id": "c1", "function": function}]}
    assert count_message(calling) > count_message(plain) + 40
    result = {"role": "tool", "content": "x " * 100, "tool_call_id": "c1"}
    assert count_message(result) > 100
    assert count_messages([plain, result]) == count_message(plain) + count_message(result) + 3


def test_units_keep_calls_with_their_results() -> None:
    group = units(_conversation())
    assert [[m["id"] for m in u] for u in group] == [["01"], ["02", "03", "04"], ["05"], ["06"]]
    # a result whose call is gone, and a call missing a result, are never sent alone
    orphan = units(_conversation()[2:])
    assert [[m["id"] for m in u] for u in orphan] == [["05"], ["06"]]
    missing = units([m for m in _conversation() if m["id"] != "04"])
    assert all(u[0]["id"] != "02" for u in missing)


def test_the_sliding_limit_never_splits_a_unit() -> None:
    group = units(_conversation())
    for max_messages in range(1, 8):
        kept, evicted = limit(group, max_messages)
        assert kept and kept[-1][0]["id"] == "06"
        assert evicted + kept == group
        assert sum(len(u) for u in kept) <= max(max_messages, 1)
    kept, _ = limit(group, 4)
    assert [u[0]["id"] for u in kept] == ["05", "06"]  # 3 + 2 > 4: the tool unit goes whole


def test_user_messages_are_time_stamped() -> None:
    ts = 1_790_000_000.0
    out = render({"role": "user", "content": "hello", "timestamp": ts}, ZoneInfo("Europe/Berlin"))
    assert out["content"].startswith("[Current Time: 2026-09-21 16:13:20] hello")
    assistant = render({"role": "assistant", "content": "hi", "timestamp": ts}, UTC)
    assert assistant["content"] == "hi"


def test_thresholds_fire_once_per_crossing() -> None:
    t = Thresholds()
    fired: set[str] = set()
    seen: list[str] = []
    for usage in (0.3, 0.5, 0.61, 0.65, 0.70, 0.76, 0.80, 0.84, 0.86):
        actions, fired = t.due(usage, fired)
        seen += actions
    assert seen == [PROACTIVE, WARNING, CRITICAL]
    assert fired == set()
    # wobbling just under a level does not fire it again; a real drop re-arms it
    fired = {PROACTIVE}
    assert t.due(0.58, fired) == ([], {PROACTIVE})
    actions, fired = t.due(0.45, fired)
    assert actions == [] and fired == set()
    assert t.due(0.62, fired)[0] == [PROACTIVE]
    # jumping over two levels fires both, once
    assert t.due(0.80, set())[0] == [PROACTIVE, WARNING]


def test_threshold_settings_must_be_ordered() -> None:
    with pytest.raises(ValueError):
        ContextSettings(proactive_at=0.8, warning_at=0.75)
    with pytest.raises(ValueError):
        ContextSettings(system_share=0.5, history_share=0.6)
    assert (
        ContextSettings(models={"big": {"window_tokens": 128_000}}).window("big").window_tokens
        == 128_000
    )


async def test_extractive_summary_keeps_salient_sentences_within_budget() -> None:
    messages = [
        {
            "role": "user",
            "content": "The deployment of the billing service failed twice. "
            "The billing service needs a database migration first.",
        },
        {"role": "assistant", "content": "I will run the billing migration tonight."},
        {"role": "user", "content": "ok thanks"},
        {"role": "system", "content": "Context at 75%, wrap up or checkpoint"},
    ]
    summary = await ExtractiveSummarizer().summarize("", messages, 60)
    assert summary.startswith(HEADER)
    assert count_tokens(summary) <= 60
    assert "billing" in summary
    assert "Context at 75%" not in summary
    folded = await ExtractiveSummarizer().summarize(summary, [messages[1]], 80)
    assert "billing service" in folded and count_tokens(folded) <= 80


async def test_llm_summary_falls_back_to_extractive_when_the_model_fails() -> None:
    with ScriptedOpenAI() as server:
        server.failing = True
        llm = LLMClient(server.base_url, "scripted", max_retries=0, timeout_s=5)
        messages = [{"role": "user", "content": "My locker code is 4711."}]
        summary = await LLMSummarizer(llm).summarize("", messages, 100)
        await llm.aclose()
    assert summary.startswith(HEADER) and "4711" in summary


async def test_memory_index_is_kept_on_write_and_rolls_back(
    settings: Settings, client: Redis, checkpoints: Checkpoints
) -> None:
    layer = MemoryLayer.open(
        settings.model_copy(update={"embedding": {"provider": "none"}}), client
    )
    await MemorySearch(layer).ensure_index()
    daily, longterm = DailyLog(layer), LongTermMemory(layer)
    await daily.log("docker restart policy is on-failure", tags=["docker", "ops"])
    await daily.log("docker compose v2 is installed", tags=["docker"])
    cp = await checkpoints.create()
    memory = await longterm.add("partner lives abroad", tags=["partner", "relationship"])
    table = await MemoryIndex(layer).read(300)
    assert table.counts == {"daily": 2, "longterm": 1}
    assert "| docker | 2 |" in table.text and "| partner | 1 |" in table.text
    assert table.text.index("docker") < table.text.index("partner")
    await longterm.delete(memory["id"])
    assert "partner" not in (await MemoryIndex(layer).read(300)).text
    await longterm.add("likes tea", tags=["food"])
    await checkpoints.rollback_to(cp.id)
    after = await MemoryIndex(layer).read(300)
    assert after.counts == {"daily": 2} and "food" not in after.text
    assert await MemoryIndex(layer).rebuild() == {"daily": 2}
    assert (await MemoryIndex(layer).read(300)).text == after.text


async def test_memory_index_stays_within_budget(settings: Settings, client: Redis) -> None:
    layer = MemoryLayer.open(
        settings.model_copy(update={"embedding": {"provider": "none"}}), client
    )
    m = Mutation()
    from aether.memory.tiers.memory_index import count_ops

    docs = [
        {"kind": "daily", "tags": [f"topic-{i % 400}", "common"], "timestamp": 1e9 + i}
        for i in range(4000)
    ]
    count_ops(m, layer.keys, docs)
    await layer.store.apply(m, "test")
    for budget in (100, 200, 300):
        table = await MemoryIndex(layer).read(budget)
        assert table.tokens <= budget
        assert table.rows >= 3
        assert "4,000 daily entries" in table.text and "more topics" in table.text
        assert table.text.splitlines()[3].startswith("| common | 4000 |")


async def _seed_memory(settings: Settings, client: Redis) -> MemoryLayer:
    layer = MemoryLayer.open(
        settings.model_copy(update={"embedding": {"provider": "none"}}), client
    )
    await MemorySearch(layer).ensure_index()
    await IdentityStore(layer.store, Checkpoints(client, layer.keys)).ensure(default_identity_dir())
    daily = DailyLog(layer)
    await daily.log("The staging database password rotates every Monday", tags=["ops"])
    for i in range(40):
        await daily.log(f"routine note {i} about lunch and the weather", tags=["misc"])
    # a forgotten belief must never reach a context, however relevant
    doc = {
        "id": "B1",
        "kind": "belief",
        "content": "The staging database is on Postgres 9",
        "status": "forgotten",
        "source": "agent",
        "tags": [],
        "score": 1.0,
        "timestamp": time.time(),
        "session": "",
        "hash": "x",
    }
    await layer.store.apply(Mutation().json_set(layer.keys.belief("B1"), doc), "test")
    return layer


async def test_assembly_fits_its_budget_and_ranks_relevant_memories(
    settings: Settings, client: Redis
) -> None:
    layer = await _seed_memory(settings, client)
    identity = IdentityStore(layer.store, Checkpoints(client, layer.keys))
    assembler = ContextAssembler(layer, identity, settings.context)
    for max_tokens in (300, 800, 2000):
        ctx = await assembler.assemble(
            "when does the staging database password rotate?", max_tokens
        )
        assert ctx.tokens <= max_tokens
        budgets = Budgets.standalone(max_tokens, settings.context)
        # the guardrails are never dropped, even when they alone exceed the system budget
        assert ctx.system.tokens <= budgets.system or ctx.system.text.startswith("# Guardrails")
        assert ctx.index.tokens <= budgets.index
        assert "rotates every Monday" in ctx.memories.text
        assert "Postgres 9" not in ctx.text()
        assert ctx.chosen[0].content.startswith("The staging database password")
    ctx = await assembler.assemble("staging database", 2000)
    assert "Memory holds 41 items" in ctx.index.text
    assert "# Relevant memories" in ctx.system_message()["content"]
    with pytest.raises(InvalidOperationError):
        await assembler.assemble("x", 10)


def test_memories_are_a_timeline_with_each_day_written_once() -> None:
    day = 86_400.0
    start = 1_760_000_000.0  # 2025-10-09 08:53 UTC
    said = [  # by score, as the assembler chooses them
        ("the deploy pipeline moved to the blue cluster", start + 2 * day, "daily", False),
        ("the deploy pipeline runs nightly at two", start, "daily", True),
        ("the deploy pipeline got a canary stage", start + 2 * day + 60, "belief", False),
        ("the deploy pipeline was paused for the audit", start + 60, "daily", False),
    ]
    chosen = [
        ScoredMemory(f"k{i}", text, 1 - i / 10, 1, 1, 1, {"timestamp": at, "kind": kind}, earlier=e)
        for i, (text, at, kind, e) in enumerate(said)
    ]
    assert render_memories(chosen, 100).splitlines() == [
        "[2025-10-09]",
        "- (earlier: a later memory differs) the deploy pipeline runs nightly at two",
        "- the deploy pipeline was paused for the audit",
        "[2025-10-11]",
        "- the deploy pipeline moved to the blue cluster",
        "- (belief) the deploy pipeline got a canary stage",
    ]
    dated = sum(count_tokens(f"- [2025-10-09] {text}") + 1 for text, *_ in said)
    assert count_tokens(render_memories(chosen, 100)) < dated
    assert render_memories(chosen[:1], 5) == "[2025-10-11]\n" + truncate_to_tokens(
        "- the deploy pipeline moved to the blue cluster", 5
    )
    assert render_memories([], 100) == ""


FILLER = (
    "We walked through the module layout, the logging setup and the retry policy of the "
    "HTTP client, then looked at how the fixtures are shared between the test packages. "
)
ANSWER = "The staging database password rotates every Monday at 06:00 UTC."


def test_a_long_memory_shows_its_head_and_the_passage_that_matches() -> None:
    text = "assistant: Here is the runbook. " + FILLER * 30 + ANSWER + " " + FILLER * 3
    query = query_tokens("when does the staging database password rotate?")
    shown = excerpt(text, query, 300)
    assert shown is not None and count_tokens(shown) <= 300
    head, _, window = shown.partition(EXCERPT_MARK)
    assert text.startswith(head) and ANSWER in window
    narrow = excerpt(text, query, 40)  # no room for a head: the passage's matching part
    assert narrow is not None and narrow.startswith("…") and count_tokens(narrow) <= 40
    assert ANSWER in narrow  # cut at the window's head, 40 tokens lost it
    assert excerpt(text, [], 300) is None  # no query: the head is the excerpt
    assert excerpt(ANSWER + " " + FILLER * 30, query, 300) is None  # it opens the text
    assert excerpt(ANSWER, query, 300) is None  # it fits


def test_focus_keeps_the_sentence_that_matches_and_what_follows_it() -> None:
    window = " ".join((FILLER * 4 + ANSWER + " " + FILLER * 2).split())
    query = query_tokens("when does the staging database password rotate?")
    part = focus(window, query, 50)
    assert part.startswith(ANSWER) and count_tokens(part) <= 50
    assert part in window  # whole sentences, in their order
    assert len(part) > len(ANSWER)  # the room left goes to the sentence after it
    assert focus(window, query, 10_000) == window
    assert focus(window, query, 5) == truncate_to_tokens(ANSWER, 5)
    unmatched = focus(window, query_tokens("kubernetes ingress"), 40)
    assert window.startswith(unmatched) and count_tokens(unmatched) <= 40


def test_an_excerpt_never_opens_with_a_piece_of_a_word() -> None:
    content = "assistant: " + "latency cache " * 120 + ANSWER
    query = query_tokens("when does the staging database password rotate?")
    passage, _ = best_passage(query, content)
    start = content.find(passage)
    assert content[start - 1].isalnum() and passage[0].isalnum()  # the cut split a word
    shown = excerpt(content, query, 250)
    assert shown is not None and ANSWER in shown and count_tokens(shown) <= 250
    window = shown.partition(EXCERPT_MARK)[2]
    assert window.split()[0] in {"latency", "cache"}


@given(
    st.lists(
        st.sampled_from([FILLER.strip(), ANSWER, "Yes.", "The password rotates."]),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 200),
)
def test_focus_fits_its_budget_and_keeps_sentences_whole(said: list[str], budget: int) -> None:
    window = " ".join(said)
    part = focus(window, query_tokens("when does the password rotate?"), budget)
    assert count_tokens(part) <= budget
    assert part in window or any(sentence.startswith(part) for sentence in said)


RENEWAL = "The QA cluster certificate renews on the first Sunday of each month."
RUNBOOK = "assistant: Here is the runbook. " + FILLER * 60 + RENEWAL
"""A long memory whose answer lies 10,000 characters in, closing its last window."""


async def _runbook_context(settings: Settings, client: Redis, max_tokens: int) -> AssembledContext:
    """A context for the runbook's question, the runbook logged among the seeded memories."""
    layer = await _seed_memory(settings, client)
    await DailyLog(layer).log(RUNBOOK)
    identity = IdentityStore(layer.store, Checkpoints(client, layer.keys))
    return await ContextAssembler(layer, identity, settings.context).assemble(
        "when does the QA cluster certificate renew?", max_tokens
    )


async def test_a_small_context_shows_the_sentence_a_long_memory_answers_with(
    settings: Settings, client: Redis
) -> None:
    ctx = await _runbook_context(settings, client, 400)
    assert ctx.tokens <= 400
    assert RENEWAL in ctx.memories.text  # a memory's share is under a window here


async def test_a_context_shows_where_a_long_memory_answers(
    settings: Settings, client: Redis
) -> None:
    ctx = await _runbook_context(settings, client, 2000)
    assert ctx.tokens <= 2000
    assert RENEWAL in ctx.memories.text  # 10,000 characters in: a head alone would lose it
    line = next(line for line in ctx.memories.text.splitlines() if "QA cluster" in line)
    assert line.startswith("- assistant: Here is the runbook.") and EXCERPT_MARK in line


async def test_assembly_includes_recent_history_of_a_session(
    settings: Settings, client: Redis
) -> None:
    from aether.memory.tiers.chat import ChatSessions

    layer = await _seed_memory(settings, client)
    chats = ChatSessions(layer)
    for i in range(30):
        await chats.append("s1", "user", f"question number {i} " + "words " * 20)
        await chats.append("s1", "assistant", f"answer number {i}")
    identity = IdentityStore(layer.store, Checkpoints(client, layer.keys))
    ctx = await ContextAssembler(layer, identity, settings.context).assemble(
        "staging password", 1000, session="s1"
    )
    assert ctx.tokens <= 1000
    assert 0 < ctx.history.tokens <= 250
    contents = [m["content"] for m in ctx.history_messages]
    assert contents[-1] == "answer number 29"
    assert contents[0].startswith("[Current Time: ") or contents[0].startswith("answer")


def test_context_preview_cli(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:

        return run_cli(env, *args)

    assert cli("memory", "log", "The VPN config lives in vault path ops/vpn").returncode == 0
    out = cli("context", "preview", "where is the VPN config?", "--max-tokens", "600", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["tokens"] <= 600
    assert {s["name"] for s in data["sections"]} == {
        "system",
        "index",
        "history",
        "graph",
        "memories",
    }
    assert "vault path ops/vpn" in data["text"]
    human = cli("context", "preview", "VPN", "--max-tokens", "600")
    assert human.returncode == 0 and "memories" in human.stdout
    header = next(line for line in human.stdout.splitlines() if line.startswith("section"))
    assert header.split() == ["section", "tokens", "budget", "items"]  # plain when piped
    assert not any(ch in human.stdout for ch in "┏┃━│─╇┡")  # no box drawing in a pipe
    bad = cli("context", "preview", "VPN", "--max-tokens", "5")
    assert bad.returncode == 64 and "--max-tokens" in bad.stderr  # a usage error
    assert cli("memory", "log", RUNBOOK).returncode == 0
    small = cli("context", "preview", "When does the QA certificate renew?", "--max-tokens", "400")
    assert small.returncode == 0 and RENEWAL in " ".join(small.stdout.split())


def _unit(text: str, role: str = "user") -> list[Any]:
    return [{"id": text[:8], "role": role, "content": text, "timestamp": 0.0}]


def test_a_standalone_history_without_query_words_is_the_newest_messages() -> None:
    group = [_unit(f"message {i} about the garden") for i in range(10)]
    kept, used = history_units(group, 35, lambda unit: 10)
    assert kept == group[-3:] and used == 30  # the newest that fit, none skipped
    kept, _ = history_units(group, 35, lambda unit: 10, query_tokens("the of"))
    assert kept == group[-3:]  # stopwords alone are no query


def test_a_standalone_history_shows_the_older_messages_that_hold_the_query() -> None:
    group = [_unit(f"routine note {i} about lunch") for i in range(20)]
    group[2] = _unit("The staging database password rotates every Friday at noon.")
    group[5] = _unit("Lunch was late; the staging server was slow.")  # one word of three
    query = query_tokens("When does the staging password rotate?")
    kept, used = history_units(group, 60, lambda unit: 10, query, min_coverage=0.3)
    # half the budget for the newest (three units), then the best match, then newest again
    assert kept[0] is group[2] and group[5] in kept
    assert kept[-3:] == group[-3:] and used == 60 and len(kept) == 6
    positions = [group.index(unit) for unit in kept]
    assert positions == sorted(positions)  # in the order they were said
    strict, _ = history_units(group, 60, lambda unit: 10, query, min_coverage=0.5)
    assert group[2] in strict and group[5] not in strict  # below the floor: newest instead
    assert strict[1:] == group[-5:]


@given(
    st.lists(st.integers(min_value=1, max_value=30), max_size=25),
    st.integers(min_value=0, max_value=200),
    st.lists(st.sampled_from(["staging", "password", "garden", "lunch", "friday"]), max_size=3),
)
def test_a_standalone_history_stays_within_its_budget_and_in_order(
    costs: list[int], budget: int, words: list[str]
) -> None:
    vocabulary = ["staging", "password", "garden", "lunch", "friday", "weather"]
    group = [
        _unit(f"{i} " + " ".join(vocabulary[(i + j) % 6] for j in range(3)))
        for i in range(len(costs))
    ]
    position = {id(unit): i for i, unit in enumerate(group)}
    kept, used = history_units(group, budget, lambda unit: costs[position[id(unit)]], words)
    positions = [position[id(unit)] for unit in kept]
    assert positions == sorted(set(positions))
    assert used == sum(costs[i] for i in positions) <= budget
    if group and costs[-1] <= budget:
        assert positions[-1] == len(group) - 1  # the newest message whenever it fits


async def test_a_replayed_conversation_keeps_its_early_facts_in_a_standalone_context(
    settings: Settings, client: Redis, cli_env: dict[str, str]
) -> None:
    """Days of conversation through the real runtime; the fact is still in its window.

    A message the window holds is in no index until it is evicted; the standalone context
    (CLI, MCP) shows only 15 % of its budget of history, and used to show the newest
    messages alone, so the fact was nowhere.
    """
    from aether.app import Aether

    s = settings.model_copy(update={"embedding": {"provider": "none"}})
    wired = Aether(s, client)
    await wired.ready()
    rt = wired.runtime("conv")
    await rt.identity.ensure(default_identity_dir())
    day = 86_400.0
    start = 1_780_000_000.0
    fact = "The backup of the invoices database runs at 02:30 from the Lisbon replica."
    await rt.observe("user", fact, timestamp=start)
    for i in range(20):  # 41 messages: the window (50) still holds the first
        await rt.observe(
            "user", f"Day {i}: tidied the garden and read a chapter.", timestamp=start + i * day
        )
        await rt.observe(
            "assistant", f"Noted for day {i}. Anything else?", timestamp=start + i * day + 60
        )
    view = await (await rt.session_window()).view()
    assert any(m.get("content") == fact for unit in view.units for m in unit)  # not evicted
    ctx = await rt.assembler.assemble(
        "When does the invoices database backup run?", 600, session="conv"
    )
    history = [str(m.get("content")) for m in ctx.history_messages]
    assert any(fact in text for text in history) and ctx.tokens <= 600
    assert history[-1] == "Noted for day 19. Anything else?"  # the thread is still there
    out = run_cli(
        cli_env,
        "context",
        "preview",
        "invoices backup Lisbon",
        "--session",
        "conv",
        "--max-tokens",
        "600",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    shown = [str(m.get("content")) for m in json.loads(out.stdout)["messages"][1:]]
    assert any(fact in text for text in shown)
    unrelated = await rt.assembler.assemble("What is the weather in Oslo?", 600, session="conv")
    assert not any(fact in str(m.get("content")) for m in unrelated.history_messages)


def test_the_newest_message_stays_when_it_takes_more_than_half_the_history() -> None:
    group = [_unit("the staging password rotates on Fridays"), _unit("and the garden?")]
    kept, used = history_units(
        group, 9, lambda unit: 7 if unit is group[-1] else 3, query_tokens("staging password")
    )
    assert kept == [group[-1]] and used == 7  # not the older match in its place


def test_a_pasted_query_of_many_words_leaves_the_history_to_the_newest_messages() -> None:
    group = [_unit(f"routine note {i} about lunch") for i in range(20)]
    group[2] = _unit("The staging database password rotates every Friday at noon.")
    pasted = query_tokens("staging password " + " ".join(f"word{i}" for i in range(5000)))
    kept, _ = history_units(group, 60, lambda unit: 10, pasted, min_coverage=0.3)
    assert kept == group[-6:]  # no message holds 30 % of 5,002 words: none is searched

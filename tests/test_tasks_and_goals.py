"""Tasks and goals (seed 001): the store, the suggested order, and every face over them.

The CLI (a subprocess, with and without a scripted model), the official MCP client and
the agent's own tools over simulated days all run the same operations.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from redis.asyncio import Redis

from aether.app import Aether
from aether.config import Settings
from aether.errors import InvalidOperationError, NotFoundError
from aether.identity.bootstrap import default_identity_dir
from aether.memory.tiers.tasks import Goal, Task, suggestion_order
from aether.operations import Parts
from aether.runtime.llm import LLMClient
from aether.testing.model import ScriptedOpenAI, completion
from tests.conftest import dump_state, invoke_cli

TODAY = date(2026, 11, 24)


def _task(title: str, **fields: Any) -> Task:
    return Task(id=title.replace(" ", "")[:10].upper(), title=title, created_at=1.0, **fields)


def test_the_rules_order_overdue_due_soon_priority_goal_mentioned_oldest() -> None:
    goal = Goal(id="G1", title="ship 2.0", created_at=0.0)
    closed = Goal(id="G2", title="old", status="done", created_at=0.0)
    tasks = [
        _task("plain low", priority=5),
        _task("plain high", priority=1),
        _task("due soon", priority=4, due=(TODAY + timedelta(days=2)).isoformat()),
        _task("overdue", priority=5, due=(TODAY - timedelta(days=1)).isoformat()),
        _task("far away", priority=3, due=(TODAY + timedelta(days=30)).isoformat()),
        _task("for the goal", priority=3, goal="G1"),
        _task("for a done goal", priority=3, goal="G2"),
        _task("mentioned", priority=3),
        _task("finished", priority=1, status="done"),
    ]
    mentioned = {_task("mentioned").id: 100.0}
    order = suggestion_order(tasks, [goal, closed], mentioned, TODAY)
    assert [s.task.title for s in order] == [
        "overdue",
        "due soon",
        "plain high",
        "for the goal",
        "mentioned",
        "far away",
        "for a done goal",
        "plain low",
    ]
    why = {s.task.title: s.reasons for s in order}
    assert why["overdue"][0] == "overdue by 1 day" and why["due soon"][0] == "due in 2 days"
    assert "towards goal 'ship 2.0'" in why["for the goal"]
    assert "mentioned in memory" in why["mentioned"]


async def test_tasks_and_goals_are_journaled_and_refuse_bad_input(
    settings: Settings, client: Redis
) -> None:
    parts = Parts(settings.model_copy(update={"embedding": {"provider": "none"}}), client)
    goal = await parts.goals.add("a quiet homelab")
    task = await parts.tasks.add("replace the fan", 2, "2026-12-01", goal=goal.id[:6])
    assert task.goal == goal.id and task.due == "2026-12-01"
    cp = await parts.checkpoints.create(label="before edits")
    before = await dump_state(client, parts.keys)
    edited = await parts.tasks.edit(task.id[:6], title="replace both fans", due="", goal="")
    assert (edited.title, edited.due, edited.goal, edited.priority) == (
        "replace both fans",
        None,
        None,
        2,
    )
    done = await parts.tasks.done(task.id)
    assert done.status == "done" and done.done_at
    reopened = await parts.tasks.reopen(task.id)
    assert reopened.status == "open" and reopened.done_at is None
    assert (await parts.goals.done(goal.id)).status == "done"
    state = await dump_state(client, parts.keys)
    for bad in (
        lambda: parts.tasks.edit(task.id),  # nothing to change
        lambda: parts.tasks.edit(task.id, priority=0),
        lambda: parts.tasks.edit(task.id, due="next friday"),
        lambda: parts.tasks.reopen(task.id),  # open already
        lambda: parts.goals.done(goal.id),  # done already
        lambda: parts.goals.add(" "),
        lambda: parts.tasks.add("x", notes="n" * 5000),
    ):
        with pytest.raises(InvalidOperationError):
            await bad()
    with pytest.raises(NotFoundError, match="no goal"):
        await parts.tasks.add("orphan", goal="ZZZZZZZZ")
    with pytest.raises(NotFoundError):
        await parts.tasks.done("ZZZZZZZZ")
    assert await dump_state(client, parts.keys) == state  # refused: nothing changed
    await parts.checkpoints.rollback_to(cp.id)
    assert await dump_state(client, parts.keys) == before


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return invoke_cli(env, *args)


def _json(env: dict[str, str], *args: str) -> Any:
    done = _cli(env, *args, "--json")
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return json.loads(done.stdout)


def test_the_cli_plans_work_with_goals_and_suggests_what_next(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    assert _cli(env, "identity", "bootstrap").returncode == 0
    goal = _json(env, "goal", "add", "move to the new NAS", "--notes", "by year end")
    today = datetime.now(UTC).date()
    late = _json(env, "task", "add", "order disks", "-p", "4", "--due", str(today - timedelta(1)))
    high = _json(env, "task", "add", "rotate the backup keys", "-p", "1")
    towards = _json(env, "task", "add", "copy the photos", "--goal", goal["id"][:6])
    assert towards["goal"] == goal["id"]
    suggested = _json(env, "task", "suggest")
    assert suggested["ranked_by"] == "rules"
    assert [s["task"]["id"] for s in suggested["suggestions"]] == [
        late["id"],
        high["id"],
        towards["id"],
    ]
    people = _cli(env, "task", "suggest")
    assert "overdue by 1 day" in people.stdout and "ranked by the rules" in people.stdout
    edited = _json(env, "task", "edit", late["id"], "--due", "", "--title", "order 4 disks")
    assert edited["due"] is None and edited["title"] == "order 4 disks"
    assert _json(env, "task", "done", towards["id"])["status"] == "done"
    goals = _json(env, "goal", "list")
    assert [(g["id"], g["open_tasks"], g["done_tasks"]) for g in goals] == [(goal["id"], 0, 1)]
    assert _json(env, "task", "reopen", towards["id"])["status"] == "open"
    assert [t["id"] for t in _json(env, "task", "list", "--goal", goal["id"])] == [towards["id"]]
    assert _json(env, "goal", "done", goal["id"])["status"] == "done"
    assert _cli(env, "goal", "list").returncode == 2  # no open goals
    # bad input: a clear error, nothing changed
    for args, code in (
        (("task", "add", "x", "--goal", "ZZZZZZZZ"), 1),
        (("task", "edit", high["id"]), 1),
        (("task", "add", "x", "-p", "9"), 64),
        (("task", "add", "x", "--due", "someday"), 64),  # a usage error, like -p 9
        (("task", "reopen", high["id"]), 1),
        (("goal", "done", "nope!"), 1),
        (("task", "add", " "), 1),
    ):
        before = _json(env, "task", "list", "--status", "all")
        done = _cli(env, *args)
        assert done.returncode == code, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and done.stderr.strip(), args
        assert _json(env, "task", "list", "--status", "all") == before


def test_suggest_asks_the_model_and_falls_back_to_the_rules(cli_env: dict[str, str]) -> None:
    def ranking(body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["messages"][-1]["content"]
        if "Rank the tasks" not in prompt:
            return completion("[]")
        ids = [
            line.split("id ")[1].split(":")[0] for line in prompt.splitlines() if "- id " in line
        ]
        ranked = [{"id": i, "reason": f"reason for {i}"} for i in reversed(ids)]
        return completion("Here you go: " + json.dumps(ranked))

    with ScriptedOpenAI(responder=ranking) as server:
        env = {
            **cli_env,
            "AETHER_EMBEDDING__PROVIDER": "none",
            "AETHER_LLM__BASE_URL": server.base_url,
            "AETHER_LLM__MODEL": "scripted",
            "AETHER_LLM__MAX_RETRIES": "0",
        }
        first = _json(env, "task", "add", "first by the rules", "-p", "1")
        second = _json(env, "task", "add", "second by the rules", "-p", "2")
        asked = _json(env, "task", "suggest")
        assert asked["ranked_by"] == "model"
        assert [s["task"]["id"] for s in asked["suggestions"]] == [second["id"], first["id"]]
        assert asked["suggestions"][0]["reasons"] == [f"reason for {second['id']}"]
        server.responder = lambda body: completion("I would start with the disks.")
        fallback = _json(env, "task", "suggest")
        assert fallback["ranked_by"] == "rules" and "unusable" in fallback["note"]
        assert [s["task"]["id"] for s in fallback["suggestions"]] == [first["id"], second["id"]]


async def test_mcp_serves_the_task_and_goal_tools(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "aether", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def call(tool: str, **arguments: Any) -> Any:
            result = await session.call_tool(tool, arguments)
            body = json.loads(result.content[0].text)
            return (result.is_error, body)

        _, goal = await call("goal_add", title="learn Rust")
        _, task = await call("task_add", title="read the book", goal=goal["id"], priority=2)
        assert task["goal"] == goal["id"] and task["status"] == "open"
        _, edited = await call("task_edit", id=task["id"], due="2030-01-31")
        assert edited["due"] == "2030-01-31"
        _, listed = await call("task_list")
        assert [t["id"] for t in listed["tasks"]] == [task["id"]]
        _, suggested = await call("task_suggest")
        assert suggested["ranked_by"] == "rules"
        assert await call("task_done", id=task["id"][:6]) == (False, await _task_now(call, task))
        error, reopened = await call("task_reopen", id=task["id"])
        assert not error and reopened["status"] == "open"
        _, goals = await call("goal_list")
        assert goals["goals"][0]["open_tasks"] == 1
        _, closed = await call("goal_done", id=goal["id"])
        assert closed["status"] == "done"
        error, bad = await call("task_add", title="x", priority=7)
        assert error and bad["code"] == "invalid" and "priority" in bad["message"]
        error, missing = await call("task_done", id="ZZZZZZZZ")
        assert error and missing["code"] == "not_found"


async def _task_now(call: Any, task: dict[str, Any]) -> dict[str, Any]:
    """What ``task_done`` answers: the task, done (read back after the call)."""
    _, listed = await call("task_list", status="done")
    found: dict[str, Any] = next(t for t in listed["tasks"] if t["id"] == task["id"])
    return found


async def test_the_agent_plans_with_its_task_tools_over_simulated_days(
    settings: Settings, client: Redis
) -> None:
    start = datetime(2026, 11, 2, 9, tzinfo=UTC)
    now = [start.timestamp()]
    seen: list[str] = []

    def responder(body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]
        if last["role"] == "tool":
            seen.append(last["content"])
            return completion("Done.")
        said = last["content"]
        if "renew the TLS certificate" in said:
            args = {"title": "renew the TLS certificate", "due": "2026-11-04", "priority": 2}
            return completion(tool_calls=[("t1", "task_add", args)])
        if "what should I do" in said:
            return completion(tool_calls=[("t2", "task_suggest", {})])
        return completion("Noted.")

    with ScriptedOpenAI(responder=responder) as server:
        s = settings.model_copy(
            update={
                "embedding": {"provider": "none"},
                "llm": {"base_url": server.base_url, "model": "scripted", "max_retries": 0},
            }
        )
        wired = Aether(s, client)
        await wired.ready()
        llm = LLMClient.from_settings(s)
        runtime = wired.runtime("main", llm=llm, clock=lambda: now[0])
        await runtime.identity.ensure(default_identity_dir())
        offered = {t["function"]["name"] for t in runtime.tool_schemas()}
        assert {"task_add", "task_suggest", "goal_add", "memory_search"} <= offered
        await runtime.step("Please remember to renew the TLS certificate by Wednesday.")
        [task] = await wired.tasks.list()
        assert task.title == "renew the TLS certificate" and task.due == "2026-11-04"
        now[0] = (start + timedelta(days=5)).timestamp()  # the Saturday after
        await runtime.step("Morning! what should I do first?")
        assert seen[-1].startswith(f"[{task.id}]") and "overdue by 3 days" in seen[-1]
        assert llm is not None
        await llm.aclose()

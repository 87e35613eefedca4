"""The agent's tools, part by part: workspace confinement, bash, the policy, the turn's
budgets, approval requests, the MCP servers file and tool selection."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from redis.asyncio import Redis

from aether.config import Settings, ToolSettings
from aether.errors import (
    AmbiguousIdError,
    ConfigError,
    ConflictError,
    InvalidOperationError,
    NotFoundError,
)
from aether.keys import Keyspace
from aether.registry.approvals import KEEP_S, Approvals
from aether.runtime.llm import ToolCall
from aether.runtime.tools import Tool, Toolbox, ToolOutput, Workspace
from aether.runtime.tools.calls import ToolCaller, TurnGuard
from aether.runtime.tools.mcp_servers import load_servers
from aether.runtime.tools.policy import Policy, autonomy_mode
from aether.runtime.tools.selection import ToolRanker
from aether.runtime.tools.workspace import workspace_tools

MEMORY_TOOLS = {"memory_search", "memory_remember", "task_add"}

# ---------------------------------------------------------------- workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    ws = Workspace(root, ToolSettings(output_chars=2000, write_bytes=10_000, bash_timeout_s=3))
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 'hello'\n")
    return ws


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "src/../../outside.txt", "/etc/passwd", "/proc/self/environ", "~/x", ""],
)
async def test_paths_that_leave_the_workspace_are_refused(workspace: Workspace, path: str) -> None:
    with pytest.raises(InvalidOperationError):
        await workspace.read_file(path)
    with pytest.raises(InvalidOperationError):
        await workspace.write_file(path, "x")


async def test_a_symlink_out_is_refused_and_nothing_is_read_or_written(
    workspace: Workspace, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    (workspace.root / "link.txt").symlink_to(secret)
    (workspace.root / "dir").symlink_to(tmp_path)
    with pytest.raises(InvalidOperationError, match="symlink"):
        await workspace.read_file("link.txt")
    with pytest.raises(InvalidOperationError, match="symlink"):
        await workspace.write_file("dir/secret.txt", "overwritten")
    with pytest.raises(InvalidOperationError):
        await workspace.edit_file("link.txt", "TOP", "NOT")
    assert secret.read_text() == "TOP-SECRET"
    assert "link.txt" not in await workspace.glob("*")  # a glob does not list it
    assert "TOP-SECRET" not in await workspace.grep("SECRET")


async def test_read_write_edit_glob_grep(workspace: Workspace) -> None:
    assert "     1  def main():" in await workspace.read_file("src/app.py")
    wrote = await workspace.write_file("notes/todo.md", "- ship it\n")
    assert isinstance(wrote, ToolOutput)
    assert wrote.changes[0]["action"] == "created" and wrote.changes[0]["path"] == "notes/todo.md"
    edited = await workspace.edit_file("src/app.py", "'hello'", "'hello, world'")
    assert edited.changes[0]["action"] == "modified"
    assert edited.changes[0]["sha256_before"] != edited.changes[0]["sha256"]
    assert "hello, world" in (workspace.root / "src/app.py").read_text()
    with pytest.raises(InvalidOperationError, match="not found"):
        await workspace.edit_file("src/app.py", "missing text", "x")
    (workspace.root / "twice.txt").write_text("a a")
    with pytest.raises(InvalidOperationError, match="2 times"):
        await workspace.edit_file("twice.txt", "a", "b")
    assert (await workspace.edit_file("twice.txt", "a", "b", replace_all=True)).text
    assert (workspace.root / "twice.txt").read_text() == "b b"
    assert (await workspace.glob("**/*.py")).splitlines() == ["src/app.py"]
    assert await workspace.grep(r"hello, \w+") == "src/app.py:2:     return 'hello, world'"
    with pytest.raises(InvalidOperationError, match="regular expression"):
        await workspace.grep("(unclosed")
    with pytest.raises(InvalidOperationError, match="write cap"):
        await workspace.write_file("big.bin", "x" * 20_000)
    assert not (workspace.root / "big.bin").exists()


async def test_output_is_capped(workspace: Workspace) -> None:
    (workspace.root / "long.txt").write_text("line\n" * 5000)
    out = await workspace.read_file("long.txt")
    assert len(out) < 2100 and "[cut:" in out


async def test_bash_runs_in_the_workspace_without_secrets(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AETHER_REDIS_URL", "redis://:hunter2@localhost")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    out = await workspace.bash("pwd; env; echo made > made.txt")
    assert f"\n{workspace.root}\n" in out.text and out.text.startswith("exit code 0")
    assert "hunter2" not in out.text and "sk-secret" not in out.text and "AETHER" not in out.text
    assert out.changes == [{"path": "made.txt", "action": "created", "bytes": 5}]
    failed = await workspace.bash("exit 3")
    assert failed.text.startswith("exit code 3")


async def test_bash_timeout_kills_the_whole_process_group(
    workspace: Workspace, tmp_path: Path
) -> None:
    pid_file = workspace.root / "child.pid"
    started = time.monotonic()
    with pytest.raises(InvalidOperationError, match="timeout"):
        await workspace.bash(f"sleep 300 & echo $! > {pid_file.name}; wait", timeout_s=1)
    assert time.monotonic() - started < 10
    child = Path(f"/proc/{int(pid_file.read_text())}/stat")
    await asyncio.sleep(0.2)
    # gone, or a zombie waiting for init to reap it: either way no longer running
    assert not child.exists() or child.read_text().split(")")[-1].split()[0] == "Z"


async def test_workspace_tools_check_their_arguments(workspace: Workspace) -> None:
    box = Toolbox()
    for name, description, parameters, handler in workspace_tools(workspace, ("read_file",)):
        box.register(Tool(name, description, parameters, handler, server="workspace"))
    run = await box.run(ToolCall("c1", "read_file", json.dumps({"path": 7})))
    assert not run.success and "must be string" in run.output
    ok = await box.run(ToolCall("c2", "read_file", json.dumps({"path": "src/app.py"})))
    assert ok.success and ok.server == "workspace"


# ---------------------------------------------------------------- policy


def test_autonomy_modes_give_the_documented_defaults() -> None:
    plain = ToolSettings()
    table = {
        "supervised": {
            "memory_search": "allow",
            "read_file": "allow",
            "write_file": "ask",
            "bash": "ask",
            "fs__delete": "ask",
        },
        "autonomous": {
            "memory_search": "allow",
            "read_file": "allow",
            "write_file": "allow",
            "bash": "allow",
            "fs__delete": "allow",
        },
        "readonly": {
            "memory_search": "allow",
            "read_file": "allow",
            "write_file": "deny",
            "bash": "deny",
            "fs__delete": "deny",
        },
    }
    for mode, expected in table.items():
        policy = Policy(plain, autonomy_mode(mode), MEMORY_TOOLS)
        assert {t: policy.decide(t).decision for t in expected} == expected, mode
        assert policy.decide("my_registered_tool").decision == "allow"  # the program's own
    assert autonomy_mode(None) == "supervised"
    with pytest.raises(InvalidOperationError, match="autonomy_mode"):
        autonomy_mode("reckless")


def test_the_most_specific_pattern_wins() -> None:
    settings = ToolSettings(
        allow="fs__*, bash", ask="fs__write*", deny="*__delete*, fs__write_secret"
    )
    policy = Policy(settings, "supervised", MEMORY_TOOLS)
    assert policy.decide("fs__read").decision == "allow"
    assert policy.decide("fs__write_file").decision == "ask"
    assert policy.decide("fs__write_secret").decision == "deny"  # exact beats any glob
    assert policy.decide("fs__delete_all").decision == "deny"  # 9 literal chars beat 4
    assert policy.decide("bash").decision == "allow"
    assert policy.decide("bash").rule == "AETHER_TOOLS__ALLOW 'bash'"
    tie = Policy(ToolSettings(allow="x*", deny="*x"), "autonomous", set())
    assert tie.decide("xx").decision == "deny"  # equally specific: the stricter
    auto = Policy(ToolSettings(deny="bash"), "autonomous", set())
    assert auto.decide("bash").decision == "deny" and auto.decide("write_file").decision == "allow"


# ---------------------------------------------------------------- the turn's budgets


def test_the_guard_stops_repeats_budgets_and_failure_streaks() -> None:
    from aether.runtime.tools.box import ToolRun

    guard = TurnGuard(max_calls=4, repeat_limit=3, max_failures=2)
    same = ToolCall("c", "grep", '{"pattern": "x"}')
    reordered = ToolCall("c", "grep", '{ "pattern":"x" }')
    assert guard.refuse(same) is None
    guard.record(ToolRun("c", "grep", {}, "ok", True, 1.0))
    assert guard.refuse(reordered) is None
    guard.record(ToolRun("c", "grep", {}, "ok", True, 1.0))
    refused = guard.refuse(same)
    assert refused is not None and "3 times with the same arguments" in refused
    assert guard.stop is None  # a repeat is refused; the turn may go on
    for _ in range(2):
        assert guard.refuse(ToolCall("c", "glob", f'{{"pattern": "{_}"}}')) is None
        guard.record(ToolRun("c", "glob", {}, "error", False, 1.0))
    assert guard.stop == "2 tool calls failed in a row"
    assert "stopped:" in (guard.refuse(ToolCall("c", "glob", "{}")) or "")
    spent = TurnGuard(max_calls=1, repeat_limit=3, max_failures=5)
    spent.record(ToolRun("c", "a", {}, "ok", True, 1.0))
    assert "budget of 1 tool calls is spent" in (spent.refuse(ToolCall("c", "b", "{}")) or "")


# ---------------------------------------------------------------- approvals


async def test_approval_requests_first_decision_wins(client: Redis, keys: Keyspace) -> None:
    approvals = Approvals(client, keys)
    request = await approvals.request(
        "bash", {"command": "ls"}, session="main", reason="autonomy mode supervised", timeout_s=60
    )
    assert [r.id for r in await approvals.pending("main")] == [request.id]
    assert await approvals.pending("other") == []
    ttl = await client.ttl(keys.approval(request.id))
    assert KEEP_S - 5 <= ttl <= KEEP_S
    results = await asyncio.gather(
        approvals.decide(request.id, approve=True, by="alice"),
        approvals.decide(request.id, approve=False, by="bob"),
        return_exceptions=True,
    )
    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, ConflictError)]
    assert len(won) == 1 and len(lost) == 1
    assert (await approvals.get(request.id)).status == won[0].status
    assert await approvals.pending() == []
    with pytest.raises(NotFoundError):
        await approvals.decide("01JNOSUCHAPPROVAL0000000000", approve=True, by="x")
    with pytest.raises(InvalidOperationError):
        await approvals.get("bad id with spaces")


async def test_a_short_prefix_names_a_pending_request_among_older_ones(
    client: Redis, keys: Keyspace
) -> None:
    approvals = Approvals(client, keys)
    older = [
        await approvals.request("bash", {"n": n}, session="s", reason="r", timeout_s=60)
        for n in range(3)
    ]
    for request in older:
        await approvals.decide(request.id, approve=False, by="alice")
    waiting = await approvals.request("bash", {}, session="s", reason="r", timeout_s=60)
    date = waiting.id[:4]  # a ULID's first characters are its date: shared by all four
    assert all(r.id.startswith(date) for r in older)
    assert (await approvals.decide(date, approve=True, by="bob")).id == waiting.id
    # the shortest prefix of each: a pending one among the pending, a decided one among all
    prefixes = await approvals.prefixes([*older, waiting])
    for request in [*older, waiting]:  # none is pending now: each told apart from all
        short = prefixes[request.id]
        assert len(short) >= 4 and (await approvals.get(short)).id == request.id
    second = await approvals.request("bash", {}, session="s", reason="r", timeout_s=60)
    third = await approvals.request("bash", {}, session="s", reason="r", timeout_s=60)
    pending = await approvals.prefixes([second, third])
    assert pending[second.id] != pending[third.id]
    assert (await approvals.get(pending[third.id])).id == third.id
    with pytest.raises(AmbiguousIdError, match="pending approval request"):
        await approvals.decide(date, approve=True, by="bob")


async def test_an_unanswered_request_is_denied_at_its_deadline(
    client: Redis, keys: Keyspace
) -> None:
    approvals = Approvals(client, keys)
    request = await approvals.request("bash", {}, session="s", reason="r", timeout_s=0.3)
    decided = await approvals.wait(request.id, poll_s=0.05)
    assert decided.status == "denied" and decided.decided_by == "timeout"
    with pytest.raises(ConflictError):
        await approvals.decide(request.id, approve=True, by="late operator")


async def test_a_turn_run_again_gets_the_request_it_asked_before(
    client: Redis, keys: Keyspace
) -> None:
    approvals = Approvals(client, keys)

    async def ask(turn: str | None, session: str = "s", **arguments: object) -> str:
        asked = await approvals.request(
            "bash", arguments, session=session, reason="r", timeout_s=60, turn=turn
        )
        return asked.id

    first = await ask("msg-1\x001", command="ls")
    # the same turn and call, asked again (the daemon crashed and ran the turn again)
    assert await ask("msg-1\x001", command="ls") == first
    assert [r.id for r in await approvals.pending()] == [first]
    # another call, another occurrence of the same call, session or turn: a request each
    others = {
        await ask("msg-1\x001", command="rm"),
        await ask("msg-1\x002", command="ls"),
        await ask("msg-1\x001", "t", command="ls"),
        await ask("msg-2\x001", command="ls"),
        await ask(None, command="ls"),
        await ask(None, command="ls"),
    }
    assert len(others) == 6 and first not in others
    # decided while the turn was away: the turn acts on that decision, unasked
    await approvals.decide(first, approve=True, by="cli")
    again = await approvals.request(
        "bash", {"command": "ls"}, session="s", reason="r", timeout_s=60, turn="msg-1\x001"
    )
    assert again.id == first and again.status == "approved"
    # what names the turn is a digest: the inbox id is not kept in the request
    stored = await client.hgetall(keys.approval(first))
    assert stored[b"turn"] == again.turn.encode() and len(again.turn) == 32  # the request read
    assert not any(b"msg-1" in value for value in stored.values())
    # an approval lets its call start once; a request gone (erased) lets nothing start
    assert await approvals.use(first) and not await approvals.use(first)
    assert (await approvals.get(first)).used_at is not None
    await client.delete(keys.approval(first))
    assert not await approvals.use(first) and not await client.exists(keys.approval(first))


def _acting_caller(
    client: Redis, keys: Keyspace
) -> tuple[ToolCaller, Approvals, list[str], list[str]]:
    """A caller of one tool that acts on the world (``fs__act``), for session ``main``:
    with the approvals, what the tool did, and the requests the caller asked."""
    box = Toolbox()
    ran: list[str] = []

    async def act(arguments: dict[str, object]) -> str:
        ran.append(str(arguments["what"]))
        return "done"

    params = {"type": "object", "properties": {"what": {"type": "string"}}}
    box.register(Tool("fs__act", "Act on the world.", params, act, server="fs"))
    approvals = Approvals(client, keys)
    asked: list[str] = []
    caller = ToolCaller(
        box, approvals, ToolSettings(approval_timeout_s=5), "main", lambda i, t: asked.append(i)
    )
    return caller, approvals, ran, asked


async def test_a_turn_run_again_never_runs_an_approved_call_twice(
    client: Redis, keys: Keyspace
) -> None:
    caller, approvals, ran, asked = _acting_caller(client, keys)
    policy = Policy(ToolSettings(), "supervised", set())
    call = ToolCall("1", "fs__act", '{"what": "pay"}')

    async def operator() -> None:
        while not asked:
            await asyncio.sleep(0.02)
        await approvals.decide(asked[0], approve=True, by="cli")

    first, _ = await asyncio.gather(
        caller.run(call, policy, TurnGuard.of(ToolSettings()), turn="msg-9"), operator()
    )
    assert first.success and ran == ["pay"]
    # the daemon crashed after the call started; the next one runs the turn again
    again = await caller.run(call, policy, TurnGuard.of(ToolSettings()), turn="msg-9")
    assert not again.success and again.outcome == "stopped" and ran == ["pay"]
    assert "not run again" in again.output and asked[0] in again.output
    assert len(asked) == 2 and asked[1] == asked[0]  # the same request, never a second one
    assert [r.id for r in await approvals.list(limit=10)] == [asked[0]]


async def test_the_caller_asks_denies_and_runs(client: Redis, keys: Keyspace) -> None:
    caller, approvals, ran, asked = _acting_caller(client, keys)
    policy = Policy(ToolSettings(), "supervised", set())

    async def operator(approve: bool) -> None:
        while not asked:
            await asyncio.sleep(0.02)
        await approvals.decide(asked.pop(), approve=approve, by="cli", note="not now")

    guard = TurnGuard.of(ToolSettings())
    run, _ = await asyncio.gather(
        caller.run(ToolCall("1", "fs__act", '{"what": "a"}'), policy, guard), operator(True)
    )
    assert run.success and ran == ["a"] and run.approval is not None
    assert run.approval["decision"] == "approved" and run.approval["by"] == "cli"
    run, _ = await asyncio.gather(
        caller.run(ToolCall("2", "fs__act", '{"what": "b"}'), policy, guard), operator(False)
    )
    assert not run.success and run.outcome == "denied" and run.output == "denied by cli: not now"
    assert ran == ["a"]
    deny = Policy(ToolSettings(deny="fs__act"), "autonomous", set())
    run = await caller.run(ToolCall("3", "fs__act", '{"what": "c"}'), deny, guard)
    assert run.outcome == "denied" and "AETHER_TOOLS__DENY 'fs__act'" in run.output and ran == ["a"]


# ---------------------------------------------------------------- the MCP servers file


def test_the_mcp_servers_file_is_checked(tmp_path: Path) -> None:
    good = tmp_path / "mcp.json"
    good.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "python", "args": ["-m", "srv"], "env": {"A": "1"}},
                    "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}},
                }
            }
        )
    )
    servers = load_servers(good)
    assert servers["files"].command == "python" and servers["remote"].headers == {"X": "y"}
    cases = {
        "missing.json": None,
        "bad.json": "{not json",
        "shape.json": json.dumps({"servers": {}}),
        "both.json": json.dumps({"mcpServers": {"x": {"command": "a", "url": "http://b"}}}),
        "neither.json": json.dumps({"mcpServers": {"x": {"args": []}}}),
        "scheme.json": json.dumps({"mcpServers": {"x": {"url": "file:///etc/passwd"}}}),
        "name.json": json.dumps({"mcpServers": {"a__b": {"command": "x"}}}),
    }
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content)
        with pytest.raises(ConfigError, match="AETHER_MCP_SERVERS") as caught:
            load_servers(path)
        assert name in str(caught.value) or "a__b" in str(caught.value)


# ---------------------------------------------------------------- selection


async def test_tools_are_ranked_by_relevance_when_they_do_not_fit() -> None:
    from aether.memory.storage.embeddings import LocalEmbedder

    async def noop(arguments: dict[str, object]) -> str:
        return ""

    def tool(name: str, description: str) -> Tool:
        return Tool(name, description, {"type": "object"}, noop, optional=True)

    tools = [
        tool("weather__forecast", "The weather forecast for a city: rain, sun, temperature."),
        tool("git__log", "Show the commit history of a git repository."),
        tool("calendar__events", "Meetings and events in the calendar for a day."),
    ]
    ranker = ToolRanker(LocalEmbedder())
    assert (await ranker.rank(tools, "will it rain in Lisbon tomorrow?"))[0] == "weather__forecast"
    assert (await ranker.rank(tools, "which commits touched the parser?"))[0] == "git__log"
    words = ToolRanker(None)
    assert (await words.rank(tools, "meetings on friday"))[0] == "calendar__events"
    box = Toolbox()
    for t in tools:
        box.register(t)
    budget = 60  # room for about one schema
    assert not box.fits(budget)
    ranking = await ranker.rank(tools, "any meetings tomorrow?")
    offered = [s["function"]["name"] for s in box.offered(budget, ranking)]
    assert offered == ["calendar__events"]


def test_settings_name_the_workspace_and_servers(tmp_path: Path) -> None:
    s = Settings(home=tmp_path)
    assert s.workspace_dir == tmp_path / "workspace"
    assert Settings(home=tmp_path, workspace=tmp_path / "w").workspace_dir == tmp_path / "w"
    assert ToolSettings(allow=" a*, ,b ").patterns("allow") == ["a*", "b"]


async def test_the_runtime_reads_the_autonomy_mode_from_the_identity(
    settings: Settings, client: Redis, tmp_path: Path
) -> None:
    from aether.errors import IdentityError
    from aether.identity.bootstrap import default_identity_dir
    from aether.operations import Parts
    from aether.runtime.agent import AgentRuntime

    s = settings.model_copy(
        update={"embedding": {"provider": "none"}, "archetype": "coding", "workspace": tmp_path}
    )
    parts = Parts(s, client)
    await parts.identity.ensure(default_identity_dir())
    rt = AgentRuntime(parts, session="modes")
    assert {"bash", "read_file", "edit_file"} <= set(rt.toolbox.names())
    assert (await rt.policy()).decide("bash").decision == "ask"
    await parts.identity.set_field("agent", "autonomy_mode", "readonly")
    assert (await rt.policy()).decide("bash").decision == "deny"
    assert (await rt.policy()).decide("memory_note").decision == "allow"
    await parts.identity.set_field("agent", "autonomy_mode", "Autonomous")
    assert (await rt.policy()).decide("bash").decision == "allow"
    with pytest.raises(IdentityError, match="autonomy_mode 'reckless'"):
        await parts.identity.set_field("agent", "autonomy_mode", "reckless")
    assert (await rt.policy()).mode == "autonomous"  # nothing was written
    general = AgentRuntime(Parts(settings.model_copy(update={"workspace": tmp_path}), client))
    assert "bash" not in general.toolbox.names() and "read_file" in general.toolbox.names()


async def test_a_turn_offers_the_relevant_tools_and_caches_its_choice(
    settings: Settings, client: Redis, tmp_path: Path
) -> None:
    from aether.identity.bootstrap import default_identity_dir
    from aether.memory.tiers.toolcache import ToolSchemaCache
    from aether.operations import Parts
    from aether.runtime.agent import AgentRuntime
    from aether.runtime.llm import LLMClient
    from aether.testing.model import ScriptedOpenAI, completion

    s = settings.model_copy(
        update={
            "embedding": {"provider": "none"},
            "archetype": "coding",
            "workspace": tmp_path,
            "context": {"window_tokens": 8192},  # 15 %: the memory tools and a few more
        }
    )
    parts = Parts(s, client)
    await parts.search.ensure_index()
    await parts.identity.ensure(default_identity_dir())
    with ScriptedOpenAI(responder=lambda body: completion("ok")) as server:
        llm = LLMClient(server.base_url, "scripted", max_retries=0)
        rt = AgentRuntime(parts, session="picky", llm=llm)
        assert not rt.toolbox.fits(rt.tools_budget)
        await rt.step("run the bash shell command to list the files")
        offered = [t["function"]["name"] for t in server.chat_requests()[-1]["tools"]]
        await llm.aclose()
    assert "bash" in offered and "memory_search" in offered and "memory_note" in offered
    assert len(offered) < len(rt.toolbox.names())
    cached = await ToolSchemaCache(parts.memory).get("picky")
    assert cached is not None and [t["function"]["name"] for t in cached] == offered
    ttl = await client.ttl(parts.keys.tools("picky"))
    assert 86_000 < ttl <= 86_400

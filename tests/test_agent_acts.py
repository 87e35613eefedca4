"""The agent acts: workspace tools, an MCP server's tools, the operator's policy and
approvals, budgets and loop stops, the spending cap, all on the record.

The end-to-end test runs ``aether up`` as a subprocess with the coding archetype, a
scripted OpenAI-compatible model that asks for tool calls, and a real MCP server written
with the SDK (``tests/servers/calc_mcp.py``), which is killed while the daemon runs. The
heartbeat test runs the real runtime over simulated days, with the model down one day.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from aether.config import Settings
from aether.identity.bootstrap import default_identity_dir
from aether.memory.tiers.episodes import Episodes
from aether.operations import Parts
from aether.registry.model import LedgerQuery
from aether.runtime.daemon import HEARTBEAT_SESSION, Daemon
from aether.runtime.llm import CircuitBreaker, LLMClient
from aether.testing.model import ScriptedOpenAI, completion
from tests.conftest import run_cli
from tests.test_daemon import _env as llm_env
from tests.test_daemon_faults import _stop as stop_daemon
from tests.test_daemon_faults import _up as start_daemon
from tests.test_daemon_faults import _wait_up as wait_up

CALC_SERVER = Path(__file__).parent / "servers" / "calc_mcp.py"


def _last(body: dict[str, Any]) -> dict[str, Any]:
    return dict(body["messages"][-1])


def _asked(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m.get("role") == "user"]
    return str(users[-1]["content"]) if users else ""


def _tool_results(body: dict[str, Any]) -> list[str]:
    """The results of the calls since the user's message."""
    out: list[str] = []
    for m in reversed(body["messages"]):
        if m.get("role") == "user":
            break
        if m.get("role") == "tool":
            out.append(str(m.get("content")))
    return out[::-1]


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return completion(tool_calls=[(f"c{i}", name, args) for i, (name, args) in enumerate(calls)])


def agent_model(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: each test word in the user's message means some tool calls."""
    asked, last = _asked(body), _last(body)
    if "tools" not in body:  # the turn's tools were stopped: it must answer
        return completion("no tools left: " + " | ".join(_tool_results(body)))
    if "LOOP" in asked:  # the same call again and again, until it is stopped
        if any(r.startswith("stopped:") for r in _tool_results(body)):
            return completion("gave up the loop")
        return _calls(("glob", {"pattern": "**/*.py"}))
    if "BUDGET" in asked:  # five new calls every round
        n = len(_tool_results(body))
        return _calls(*[("grep", {"pattern": f"x{n + i}"}) for i in range(5)])
    if last.get("role") == "tool":
        return completion("results: " + " | ".join(_tool_results(body)))
    if "READ" in asked:
        return _calls(("read_file", {"path": "src/app.py"}))
    if "ESCAPE" in asked:
        return _calls(
            ("read_file", {"path": "../outside/secret.txt"}),
            ("read_file", {"path": "/proc/self/environ"}),
            ("read_file", {"path": "sneaky"}),
        )
    if "EDIT" in asked:
        return _calls(("edit_file", {"path": "src/app.py", "old": "'hello'", "new": "'bye'"}))
    if "SLEEP" in asked:  # a child that outlives its shell, until the timeout kills both
        command = "sleep 300 & echo $! > child.pid; wait"
        return _calls(("bash", {"command": command, "timeout_s": 1}))
    if "REMOVE" in asked:
        return _calls(("bash", {"command": "rm -rf src"}))
    if "WRITE" in asked:
        return _calls(("write_file", {"path": "late.txt", "content": "too late"}))
    if "CALC" in asked:
        return _calls(("calc__add", {"a": 2, "b": 3}), ("calc__secret_env", {}))
    return completion("nothing to do")


def _env(cli_env: dict[str, str], server: ScriptedOpenAI, tmp: Path) -> dict[str, str]:
    mcp_file = tmp / "mcp.json"
    mcp_file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "calc": {
                        "command": sys.executable,
                        "args": [str(CALC_SERVER)],
                        "env": {
                            "CALC_PID_FILE": str(tmp / "calc.pid"),
                            "CALC_DOWN_FILE": str(tmp / "calc.down"),
                        },
                    }
                }
            }
        )
    )
    return {
        **llm_env(cli_env, server),
        "AETHER_ARCHETYPE": "coding",
        "AETHER_WORKSPACE": str(tmp / "ws"),
        "AETHER_MCP_SERVERS": str(mcp_file),
        "AETHER_TOOLS__ALLOW": "calc__*",
        "AETHER_TOOLS__APPROVAL_TIMEOUT_S": "20",
        "AETHER_TOOLS__MAX_CALLS": "6",
        "AETHER_DAEMON__SESSION": "work",
    }


def _json(env: dict[str, str], *args: str) -> Any:
    out = run_cli(env, "--json", *args)
    # 2: the query ran and found nothing yet (a poll that came before the agent acted)
    assert out.returncode in (0, 2), out.stdout + out.stderr
    found = json.loads(out.stdout)
    assert out.returncode == 0 or not found
    return found


def _until(what: Callable[[], Any], timeout: float = 40) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = what()
        if found:
            return found
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


@pytest.fixture
def daemon_env(cli_env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    with ScriptedOpenAI(responder=agent_model) as server:
        env = _env(cli_env, server, tmp_path)
        ws = tmp_path / "ws"
        (ws / "src").mkdir(parents=True)
        (ws / "src" / "app.py").write_text("def main():\n    return 'hello'\n")
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside" / "secret.txt").write_text("OUTSIDE-SECRET")
        (ws / "sneaky").symlink_to(tmp_path / "outside" / "secret.txt")
        log = tmp_path / "daemon.log"
        proc = start_daemon(env, log)
        try:

            def up() -> bool:
                assert proc.poll() is None, log.read_text()[-3000:]
                out = run_cli(env, "status", "--json")
                if out.returncode != 0:
                    return False
                servers = json.loads(out.stdout).get("mcp", [])
                return bool(servers) and servers[0]["state"] == "ready"

            _until(up, timeout=90)
            yield env
        finally:
            stop_daemon(proc)


def _send(env: dict[str, str], message: str) -> str:
    out = run_cli(env, "send", message, "--timeout", "60")
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.strip()


def _ledger(env: dict[str, str]) -> list[dict[str, Any]]:
    return list(_json(env, "ledger", "list", "--kind", "tool_call", "--limit", "200"))


def _send_in_background(env: dict[str, str], message: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "aether", "send", message, "--timeout", "30"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def _pending(env: dict[str, str]) -> list[dict[str, Any]]:
    return list(_json(env, "approvals", "list"))


def test_the_agent_acts_through_the_daemon(daemon_env: dict[str, str], tmp_path: Path) -> None:
    env, ws = daemon_env, tmp_path / "ws"
    # a read in the workspace is allowed in supervised mode
    assert "return 'hello'" in _send(env, "READ the app please")
    # escape attempts are refused with nothing read
    escaped = _send(env, "ESCAPE now")
    assert "OUTSIDE-SECRET" not in escaped and "AETHER_" not in escaped
    assert escaped.count("error:") == 3 and "symlink leads out" in escaped
    # an edit asks; the operator approves through the CLI; send waits, saying why
    sending = _send_in_background(env, "EDIT the greeting")
    [request] = _until(lambda: _pending(env))
    assert request["tool"] == "edit_file" and request["session"] == "work"
    # the parked turn holds up its own session only: another is answered meanwhile
    other = run_cli(env, "send", "READ it too", "--session", "other", "--timeout", "20")
    assert other.returncode == 0 and "return 'hello'" in other.stdout, other.stderr
    # status says what waits on which approval, and how to answer it
    waiting = _json(env, "status")["approvals"]
    assert [(a["id"], a["tool"], a["session"]) for a in waiting] == [
        (request["id"], "edit_file", "work")
    ]
    human = run_cli(env, "status").stdout
    assert f"aether approvals approve {request['prefix']}" in human and "edit_file" in human
    # approvals take an id prefix, like checkpoints, beliefs and tasks
    nothing = run_cli(env, "approvals", "approve", "zzzz")
    assert nothing.returncode == 1 and "no approval request 'zzzz'" in nothing.stderr
    approved = run_cli(env, "approvals", "approve", request["id"][:10])
    assert approved.returncode == 0 and f"approved {request['id']}" in approved.stdout
    out, err = sending.communicate(timeout=60)
    assert sending.returncode == 0, err
    assert f"aether approvals approve {request['prefix']}" in err and "replaced 1" in out
    assert "'bye'" in (ws / "src" / "app.py").read_text()
    again = run_cli(env, "approvals", "deny", request["id"])
    assert again.returncode == 1 and "approved already" in again.stderr
    # a bash call is denied with a reason: nothing removed, the model told why
    sending = _send_in_background(env, "REMOVE the sources")
    [request] = _until(lambda: _pending(env))
    denied = run_cli(env, "approvals", "deny", request["id"], "--reason", "keep the sources")
    assert denied.returncode == 0
    out, _ = sending.communicate(timeout=60)
    assert "denied by cli: keep the sources" in out and (ws / "src" / "app.py").exists()
    # bash, approved, runs into its timeout: its whole process group is killed
    sending = _send_in_background(env, "SLEEP a while")
    [request] = _until(lambda: _pending(env))
    assert run_cli(env, "approvals", "approve", request["id"]).returncode == 0
    out, _ = sending.communicate(timeout=60)
    assert "killed after 1 s (timeout)" in out
    child = Path(f"/proc/{int((ws / 'child.pid').read_text())}/stat")
    _until(lambda: not child.exists() or child.read_text().split(")")[-1].split()[0] == "Z", 10)
    # unanswered, a write is denied at the timeout
    started = time.monotonic()
    assert "denied by timeout" in _send(env, "WRITE something")
    assert 5 <= time.monotonic() - started < 40 and not (ws / "late.txt").exists()
    # the MCP server's tools, allowed by the operator's glob; no secrets in its env
    assert _send(env, "CALC please") == "results: 5 | clean"
    # loops and budgets
    assert _send(env, "LOOP forever") == "gave up the loop"
    budget = _send(env, "BUDGET spend it all")
    assert budget.startswith("no tools left:") and "budget of 6 tool calls is spent" in budget
    # the MCP server dies and cannot start: its tools answer unavailable; then it is back
    (tmp_path / "calc.down").write_text("down")
    os.kill(int((tmp_path / "calc.pid").read_text()), signal.SIGKILL)
    status = _until(
        lambda: (s := _json(env, "status"))["mcp"][0]["state"] == "unavailable" and s,
        timeout=30,
    )
    assert status["state"] == "degraded" and any("mcp:calc" in r for r in status["reasons"])
    assert "unavailable: MCP server calc" in _send(env, "CALC again")
    (tmp_path / "calc.down").unlink()
    back = _until(lambda: (s := _json(env, "status"))["mcp"][0]["state"] == "ready" and s, 40)
    assert back["mcp"][0]["restarts"] >= 1
    assert _send(env, "CALC once more").startswith("results: 5")
    human = run_cli(env, "status")
    assert "mcp server calc (stdio): ready" in human.stdout
    # everything is on the record: the ledger and the episodes
    ledger = _ledger(env)
    by_outcome: dict[str, list[dict[str, Any]]] = {}
    for entry in ledger:
        by_outcome.setdefault(entry["detail"]["outcome"], []).append(entry["detail"])
    assert {"ok", "error", "denied", "stopped", "unavailable"} <= set(by_outcome)
    edit = next(d for d in by_outcome["ok"] if d["tool"] == "edit_file")
    assert edit["approval"]["decision"] == "approved" and edit["approval"]["by"] == "cli"
    assert edit["changes"][0]["path"] == "src/app.py" and edit["server"] == "workspace"
    timeouts = [d for d in by_outcome["denied"] if d["approval"]["by"] == "timeout"]
    assert [d["tool"] for d in timeouts] == ["write_file"]
    calc = next(d for d in by_outcome["ok"] if d["tool"] == "calc__add")
    assert calc["server"] == "calc" and calc["approval"]["rule"] == "AETHER_TOOLS__ALLOW 'calc__*'"
    episodes = _json(env, "memory", "episodes", "work")
    tools = [e["tool"] for e in episodes]
    assert {"read_file", "edit_file", "bash", "calc__add", "glob"} <= set(tools)
    assert any(not e["success"] and "denied" in e["output"] for e in episodes)
    registry = {t["name"] for t in _json(env, "tools", "list")}
    assert {"calc__add", "read_file", "bash", "memory_search"} <= registry


def test_a_turn_parked_on_an_approval_asks_once_across_a_daemon_crash(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    """SIGKILL the daemon while a turn waits for the operator: the restarted daemon runs
    the turn again and waits on the same request (no orphan beside a second one), and the
    operator's one approval lets the edit run once and the message be answered once."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 'hello'\n")
    with ScriptedOpenAI(responder=agent_model) as server:
        env = {**llm_env(cli_env, server), "AETHER_ARCHETYPE": "coding"}
        env |= {"AETHER_WORKSPACE": str(ws), "AETHER_TOOLS__APPROVAL_TIMEOUT_S": "300"}
        first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
        daemon = start_daemon(env, first_log)
        try:
            wait_up(env, daemon, first_log)
            asked_before = len(server.chat_requests())
            sending = subprocess.Popen(
                [sys.executable, "-m", "aether", "send", "EDIT the greeting", "--timeout", "120"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                stdin=subprocess.DEVNULL,
            )
            [request] = _until(lambda: _pending(env))
            daemon.send_signal(signal.SIGKILL)
            daemon.wait(10)
            daemon = start_daemon(env, second_log)
            wait_up(env, daemon, second_log)
            # the turn ran again (the model asked again) and waits on the same request
            _until(lambda: request["id"] in second_log.read_text())
            assert len(server.chat_requests()) > asked_before + 1
            assert [r["id"] for r in _pending(env)] == [request["id"]]
            assert "'hello'" in (ws / "src" / "app.py").read_text()  # not run unapproved
            approved = run_cli(env, "approvals", "approve", request["id"][:10])
            assert approved.returncode == 0, approved.stderr
            out, err = sending.communicate(timeout=120)
            assert sending.returncode == 0, err
            assert "replaced 1" in out and "'bye'" in (ws / "src" / "app.py").read_text()
            requests = _json(env, "approvals", "list", "--status", "approved")
            assert [r["id"] for r in requests] == [request["id"]] and not _pending(env)
        finally:
            stop_daemon(daemon)


# ---------------------------------------------------------------- in-process, over days


def heartbeat_model(body: dict[str, Any]) -> dict[str, Any]:
    """Check the disk usage with bash, then note it, then say so."""
    last = _last(body)
    if last.get("role") == "user":
        return _calls(("bash", {"command": "du -sk . | cut -f1"}))
    results = _tool_results(body)
    if len(results) == 1:
        usage = results[0].splitlines()[-1]
        return _calls(("memory_note", {"content": f"workspace disk usage {usage} KB"}))
    return completion("checked the disk usage and noted it")


async def test_a_heartbeat_uses_its_tools_over_simulated_days(
    settings: Settings, client: Redis, tmp_path: Path
) -> None:
    day = [datetime(2026, 3, 2, 9, tzinfo=UTC)]
    s = settings.model_copy(
        update={
            "embedding": {"provider": "none"},
            "archetype": "coding",
            "workspace": tmp_path / "ws",
            "tools": {"allow": "bash"},
        }
    )
    with ScriptedOpenAI(responder=heartbeat_model) as server:
        breaker = CircuitBreaker(server.base_url, failures=100)
        llm = LLMClient(server.base_url, "scripted", max_retries=0, breaker=breaker)
        parts = Parts(s, client)
        await parts.search.ensure_index()
        await parts.identity.ensure(default_identity_dir())
        daemon = Daemon(parts, llm, clock=lambda: day[0].timestamp())
        (tmp_path / "ws").mkdir()
        for n in range(3):
            (tmp_path / "ws" / f"data{n}.bin").write_bytes(b"x" * 200_000 * (n + 1))
            server.failing = n == 1  # the model is down on the second day
            await daemon.heartbeat()
            day[0] += timedelta(days=1)
        await llm.aclose()
    episodes = await Episodes(parts.memory).list(HEARTBEAT_SESSION)
    assert [e["tool"] for e in episodes] == ["bash", "memory_note"] * 2
    assert all(e["success"] for e in episodes)
    stamps = [datetime.fromtimestamp(e["timestamp"], UTC).day for e in episodes]
    assert stamps == [2, 2, 4, 4]
    found = await parts.search.search("workspace disk usage", limit=5)
    notes = sorted(h.content for h in found if "disk usage" in h.content)
    assert len(notes) == 2 and all(n.split()[3].isdigit() for n in notes)
    assert len({n.split()[3] for n in notes}) == 2  # day 3's workspace is larger than day 1's
    tool_calls = await daemon.services.ledger.entries(LedgerQuery(kind="tool_call"))
    assert [e.detail["tool"] for e in reversed(tool_calls)] == ["bash", "memory_note"] * 2
    assert all(e.session == HEARTBEAT_SESSION for e in tool_calls)
    state = await daemon.heartbeat_state.get()
    assert any("heartbeat failed" in a["message"] for a in state.alerts)


async def test_the_daily_budget_pauses_the_agent(
    settings: Settings, client: Redis, tmp_path: Path
) -> None:
    s = settings.model_copy(
        update={
            "embedding": {"provider": "none"},
            "workspace": tmp_path / "ws",
            "llm": {"price_in_per_mtok": 10_000.0, "daily_budget_usd": 0.05},
        }
    )
    with ScriptedOpenAI(responder=lambda body: completion("hello")) as server:
        llm = LLMClient(server.base_url, "scripted", max_retries=0)
        parts = Parts(s, client)
        await parts.search.ensure_index()
        await parts.identity.ensure(default_identity_dir())
        daemon = Daemon(parts, llm)
        await daemon.inbox.ensure_group()
        await daemon.inbox.send("first")  # 10 prompt tokens at $10k/M: $0.10, over the cap
        await daemon.inbox.send("second")
        first, second = await daemon.inbox.read(block_ms=100, count=2)
        await daemon.handle(first)
        asked = len(server.chat_requests())
        await daemon.handle(second)
        await daemon.heartbeat()
        assert len(server.chat_requests()) == asked  # neither the message nor the beat
        await llm.aclose()
    raw: Any = await client.xrange(parts.keys.outbox())
    replies = [{k.decode(): v.decode() for k, v in f.items()} for _, f in raw]
    assert replies[0]["content"] == "hello"
    assert "daily LLM budget spent" in replies[1]["error"]
    assert daemon.health.state == "degraded"
    assert any("daily LLM budget spent" in r for r in daemon.health.reasons())

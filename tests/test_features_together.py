"""Features met together the way they meet in a real agent's life (issue 53).

Each test here drives the real daemon (a subprocess) and the CLI as an operator would,
and crosses two or more features that passed alone: an erasure on a namespace whose
daemon ran and runs, an erasure cut short while the daemon is down, then started again.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from aether.config import Settings
from aether.operations import Parts
from aether.store.client import connect
from aether.store.redaction import Needle
from aether.testing.model import ScriptedOpenAI
from tests.conftest import free_port
from tests.test_daemon import SlowModel, _cli, _env, _redis_cli, _start


@pytest.fixture
def model() -> Iterator[ScriptedOpenAI]:
    slow = SlowModel()
    with ScriptedOpenAI(responder=slow) as server:
        yield server
        slow.release.set()


async def _cut_short_erasure(settings: Settings, text: str, lose_key: bool) -> str:
    """An erasure that set its hold, then its process died (its lock expires)."""
    client = await connect(settings)
    try:
        eraser = Parts(settings, client, actor="operator").eraser()
        async with eraser._lock() as lock:
            hold, _ = await eraser._begin(lock, Needle(text), None, "c0ffee")
        if lose_key:
            (eraser.key_dir / f"{settings.namespace}.{hold['id']}.key").unlink()
        return hold["id"]
    finally:
        await client.aclose()


def test_erasure_with_the_daemon_running_then_cut_short_while_it_is_down(
    cli_env: dict[str, str], namespace: str, redis_home: Path, tmp_path: Path, model: ScriptedOpenAI
) -> None:
    env = _env(cli_env, model)
    log = tmp_path / "daemon.log"
    proc = _start(env, log)
    try:
        assert _cli(env, "send", "hello there").returncode == 0  # the inbox has its group
        logged = _cli(env, "memory", "log", "the gate code is 4711-ALPHA")
        assert logged.returncode == 0, logged.stderr
        # a message in progress while the erasure runs stays pending to its consumer
        _redis_cli(env, "XGROUP", "CREATECONSUMER", f"{namespace}:inbox", "aether", "other")
        erased = _cli(env, "erase", "4711-ALPHA", "--yes", "--json")
        assert erased.returncode == 0, erased.stderr + erased.stdout
        assert json.loads(erased.stdout)["files"] == "clean"
        clean = _cli(env, "erase", "--verify", "4711-ALPHA")
        assert clean.returncode == 0, clean.stdout
        groups = json.loads(_redis_cli(env, "--json", "XINFO", "GROUPS", f"{namespace}:inbox"))
        assert groups, "the inbox's consumer group survives the rebuild"
        # the daemon still answers after its inbox was rebuilt under it
        again = _cli(env, "send", "still there?")
        assert again.returncode == 0 and again.stdout.startswith("echo: "), again.stderr
        status = json.loads(_cli(env, "status", "--json").stdout)
        assert status["state"] == "up" and status["erasure"] is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0

        # cut short while the daemon is down, and its key is lost: the agent still starts
        settings = Settings(home=redis_home, namespace=namespace)
        assert _cli(env, "memory", "log", "the safe code is Zanzibar-7781").returncode == 0
        erasure_id = asyncio.run(_cut_short_erasure(settings, "Zanzibar-7781", lose_key=True))
        held = _redis_cli(env, "HGETALL", f"{namespace}:lock:writes")
        assert "zanzibar" not in held.lower()
        pending = _cli(env, "erase", "--log")
        assert f"erasure {erasure_id} is pending" in pending.stdout
        proc = _start(env, log)
        status = json.loads(_cli(env, "status", "--json").stdout)
        assert status["state"] == "degraded", status
        assert status["erasure"]["id"] == erasure_id
        assert any("aether erase resume" in r for r in status["reasons"])
        human = _cli(env, "status")
        assert "erase resume" in human.stdout
        stuck = _cli(env, "erase", "--resume")
        assert stuck.returncode != 0 and "aether erase resume 'THE ERASED TEXT'" in stuck.stderr
        done = _cli(env, "erase", "--resume", "Zanzibar-7781", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["resumed"]
        assert _cli(env, "erase", "--verify", "Zanzibar-7781").returncode == 0
        status = json.loads(_cli(env, "status", "--json").stdout)
        assert status["erasure"] is None
        assert not any("erasure" in r and "pending" in r for r in status["reasons"])
        assert _cli(env, "memory", "log", "writes flow again").returncode == 0

        # cut short with its key kept: the next start finishes it by itself
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        assert _cli(env, "memory", "log", "a locker holds Quokka-5150").returncode == 0
        asyncio.run(_cut_short_erasure(settings, "Quokka-5150", lose_key=False))
        proc = _start(env, log)
        status = json.loads(_cli(env, "status", "--json").stdout)
        assert status["state"] == "up" and status["erasure"] is None, status
        assert _cli(env, "erase", "--verify", "Quokka-5150").returncode == 0
        assert json.loads(_cli(env, "erase", "--log", "--json").stdout)[0]["files"] != "pending"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_the_readme_scripted_model_exercises_tools_approvals_and_learning(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    """The README's way to try the whole loop: the program, then `aether up`, as written."""
    import subprocess
    import sys
    import time

    port = free_port()
    program = subprocess.Popen(
        [sys.executable, "-m", "aether.testing.model", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the boiler is serviced every March\n")
    env = {
        **cli_env,
        "AETHER_EMBEDDING__PROVIDER": "none",
        "AETHER_LLM__BASE_URL": f"http://127.0.0.1:{port}/v1",
        "AETHER_LLM__MODEL": "scripted",
        "AETHER_WORKSPACE": str(ws),
        "AETHER_DAEMON__HEARTBEAT_INTERVAL_S": "3600",
        "AETHER_DAEMON__MAINTENANCE_INTERVAL_S": "3600",
        "AETHER_TOOLS__APPROVAL_TIMEOUT_S": "60",
    }
    proc = None
    try:
        assert program.stdout is not None and "scripted model at" in program.stdout.readline()
        proc = _start(env, tmp_path / "daemon.log")
        read = _cli(env, "send", 'CALL read_file {"path": "notes.txt"}')
        assert read.returncode == 0, read.stderr
        assert "the tools said" in read.stdout and "serviced every March" in read.stdout
        # a write asks the operator (supervised): approved by prefix, it runs
        sending = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aether",
                "send",
                'CALL write_file {"path": "out.txt", "content": "done"}',
                "--timeout",
                "60",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        waiting: list[dict[str, str]] = []
        while not waiting and time.monotonic() < deadline:
            waiting = json.loads(_cli(env, "--json", "approvals", "list").stdout or "[]")
            time.sleep(0.3)
        assert waiting and waiting[0]["tool"] == "write_file"
        assert _cli(env, "approvals", "approve", waiting[0]["id"][:8]).returncode == 0
        out, err = sending.communicate(timeout=60)
        assert "the tools said" in out
        assert sending.returncode == 0, err
        assert (ws / "out.txt").read_text() == "done"
        # a second write after the first approval: send's --timeout holds while it
        # waits, naming the approval; the list's id column is the prefix to type
        started = time.monotonic()
        late = _cli(
            env, "send", 'CALL write_file {"path": "two.txt", "content": "2"}', "--timeout", "3"
        )
        assert late.returncode == 1 and time.monotonic() - started < 20
        assert "no reply within 3 s" in late.stderr and "waits for approval" in late.stderr
        listed = _cli(env, "approvals", "list").stdout.splitlines()
        prefix = listed[1].split()[0]  # under the header row
        assert 4 <= len(prefix) < 26 and f"aether approvals approve {prefix}" in late.stderr
        approved = _cli(env, "approvals", "approve", prefix)
        assert approved.returncode == 0, approved.stderr
        deadline = time.monotonic() + 30
        while not (ws / "two.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert (ws / "two.txt").read_text() == "2"
        # a message from stdin ('-'), larger than a command line could carry
        import subprocess
        import sys

        long = "please read this: " + "the harbour report line. " * 6000  # ~150 KB
        piped = subprocess.run(
            [sys.executable, "-m", "aether", "send", "-", "--timeout", "60"],
            input=long,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert piped.returncode == 0, piped.stderr
        assert "I heard" in piped.stdout or "harbour" in piped.stdout, piped.stdout[:300]
        # what it is told, it learns (the program's extraction is aether's own)
        told = _cli(env, "send", "I live in Lisbon and my cat is called Miso.")
        assert told.returncode == 0, told.stderr
        deadline = time.monotonic() + 30
        beliefs: list[dict[str, str]] = []
        while time.monotonic() < deadline:
            beliefs = json.loads(_cli(env, "--json", "belief", "list").stdout or "[]")
            if any("Lisbon" in b["content"] for b in beliefs):
                break
            time.sleep(0.5)
        assert any("Lisbon" in b["content"] for b in beliefs), beliefs
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)
        program.terminate()
        program.wait(10)

"""The daemon under the faults an operator meets, with real processes.

Each test has its own embedded redis-server (in its own home) so that killing it harms
no other test: the daemon (``aether up`` as a subprocess) must survive Redis being
SIGKILLed and restarted, refuse to run twice on one namespace (or stand by and take over),
and ``aether status`` must tell the truth without ever starting Redis.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aether.config import Settings
from aether.server.embedded import EmbeddedRedis
from aether.testing.model import ScriptedOpenAI, completion
from tests.test_daemon import _cli


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A home with its own embedded server (appendfsync always), stopped after the test."""
    server = EmbeddedRedis(Settings(home=tmp_path / "home", redis_appendfsync="always"))
    server.start()
    yield tmp_path / "home"
    server.stop()


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    def answer(body: dict[str, object]) -> dict[str, object]:
        messages = body["messages"]
        assert isinstance(messages, list)
        return completion(f"echo: {str(messages[-1].get('content'))[-40:]}")

    with ScriptedOpenAI(responder=answer) as server:
        yield server


def _env(home: Path, llm: ScriptedOpenAI | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AETHER_")}
    env.update(
        {
            "AETHER_HOME": str(home),
            "AETHER_NAMESPACE": f"faults{uuid.uuid4().hex[:6]}",
            "AETHER_EMBEDDING__PROVIDER": "none",
            "AETHER_CONFIG_FILE": str(home / "none.toml"),
            "AETHER_DAEMON__HEARTBEAT_INTERVAL_S": "3600",
            "AETHER_DAEMON__MAINTENANCE_INTERVAL_S": "3600",
            "AETHER_REDIS_APPENDFSYNC": "always",
        }
    )
    if llm is not None:
        env.update(
            {
                "AETHER_LLM__BASE_URL": llm.base_url,
                "AETHER_LLM__MODEL": "scripted",
                "AETHER_LLM__MAX_RETRIES": "0",
            }
        )
    return env


def _status(env: dict[str, str]) -> dict[str, object]:
    out = _cli(env, "status", "--json")
    data = json.loads(out.stdout)
    assert isinstance(data, dict)
    return data


def _up(env: dict[str, str], log: Path, *flags: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "aether", "up", *flags],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def _wait_up(env: dict[str, str], proc: subprocess.Popen[bytes], log: Path) -> dict[str, object]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = _status(env)
        daemon = status.get("daemon")
        if status.get("state") == "up" and isinstance(daemon, dict) and daemon["pid"] == proc.pid:
            return status
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.3)
    raise AssertionError("the daemon did not come up: " + log.read_text()[-3000:])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _redis_pid(home: Path) -> int:
    status = EmbeddedRedis(Settings(home=home)).status()
    assert status.pid is not None
    return status.pid


def test_status_never_starts_redis_and_says_it_is_unavailable(tmp_path: Path) -> None:
    home = tmp_path / "quiet"
    env = _env(home)
    out = _cli(env, "status")
    assert out.returncode == 1
    assert "redis: unavailable" in out.stdout and "daemon: unknown" in out.stdout
    assert json.loads(_cli(env, "status", "--json").stdout)["state"] == "unknown"
    assert not EmbeddedRedis(Settings(home=home)).status().running  # still not started


def test_the_daemon_answers_again_after_redis_is_killed_and_restarted(
    home: Path, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    env = _env(home, llm)
    log = tmp_path / "daemon.log"
    proc = _up(env, log)
    try:
        _wait_up(env, proc, log)
        assert _cli(env, "send", "before the outage").stdout.startswith("echo: ")
        os.kill(_redis_pid(home), signal.SIGKILL)
        unknown = _cli(env, "status")
        assert unknown.returncode == 1 and "redis: unavailable" in unknown.stdout
        # longer than redis-py's own retries (~7 s): the daemon's supervisor takes over
        time.sleep(9)
        assert _cli(env, "redis", "start").returncode == 0
        sent = _cli(env, "send", "after the outage", "--timeout", "60")
        assert sent.returncode == 0, sent.stderr + log.read_text()[-3000:]
        assert sent.stdout.startswith("echo: ") and "after the outage" in sent.stdout
        assert proc.poll() is None
        text = log.read_text()
        assert text.count("redis unavailable; waiting for it to come back") == 1, text[-3000:]
        assert "redis is back; resuming" in text
        assert "Traceback" not in text
        assert _status(env)["state"] == "up"
    finally:
        _stop(proc)
    assert proc.returncode == 0, log.read_text()[-3000:]


def test_one_daemon_per_namespace_and_a_standby_takes_over(
    home: Path, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    env = _env(home, llm)
    first_log, standby_log = tmp_path / "first.log", tmp_path / "standby.log"
    first = _up(env, first_log)
    standby: subprocess.Popen[bytes] | None = None
    try:
        _wait_up(env, first, first_log)
        second = _cli(env, "up", timeout=60)
        assert second.returncode == 1
        assert f"pid {first.pid}" in second.stderr and "--standby" in second.stderr
        standby = _up(env, standby_log, "--standby")
        time.sleep(2)
        assert standby.poll() is None  # waiting, not answering
        status = _status(env)
        daemon = status["daemon"]
        assert isinstance(daemon, dict) and daemon["pid"] == first.pid
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        started = time.monotonic()
        _wait_up(env, standby, standby_log)
        assert time.monotonic() - started < 15 + 10  # within a lease period (+ start-up)
        sent = _cli(env, "send", "who answers now?")
        assert sent.returncode == 0 and sent.stdout.startswith("echo: "), sent.stderr
        # a crash, then a plain restart on the same host: the dead holder's lease is stale
        standby.send_signal(signal.SIGKILL)
        standby.wait(10)
        restarted = _up(env, tmp_path / "restarted.log")
        try:
            _wait_up(env, restarted, tmp_path / "restarted.log")
            assert (
                "took over the lease of a daemon that died"
                in (tmp_path / "restarted.log").read_text()
            )
        finally:
            _stop(restarted)
    finally:
        _stop(first)
        if standby is not None:
            _stop(standby)


def test_status_says_starting_until_the_daemon_can_answer(home: Path) -> None:
    """The lease held without a published health is a daemon still starting."""
    import asyncio

    from aether.keys import Keyspace
    from aether.runtime.health import Health
    from aether.runtime.lease import DaemonLease, Holder, publish
    from aether.store.client import connect

    env = _env(home)
    settings = Settings(home=home, namespace=env["AETHER_NAMESPACE"])

    async def hold() -> tuple[DaemonLease, Health]:
        client = await connect(settings, start=False)
        lease = DaemonLease(client, Keyspace(settings.namespace), Holder.this_process())
        await lease.acquire()
        return lease, Health()

    async def ready(lease: DaemonLease, health: Health) -> None:
        health.ready = True
        await publish(lease, health)

    async def degrade(lease: DaemonLease, health: Health) -> None:
        from aether.runtime.llm import CircuitBreaker

        health.llm = CircuitBreaker("http://127.0.0.1:9/v1")
        health.llm.failed("unreachable: Connection refused")
        await publish(lease, health)

    async def release(lease: DaemonLease) -> None:
        await lease.release()
        await lease.client.delete(lease.keys.daemon_health())
        await lease.client.aclose()

    loop = asyncio.new_event_loop()
    try:
        lease, health = loop.run_until_complete(hold())
        starting = _cli(env, "status")
        assert starting.returncode == 1 and "daemon: starting" in starting.stdout
        loop.run_until_complete(ready(lease, health))
        assert _cli(env, "status").returncode == 0 and _status(env)["state"] == "up"
        loop.run_until_complete(degrade(lease, health))
        degraded = _cli(env, "status")
        assert degraded.returncode == 0 and "daemon: degraded" in degraded.stdout
        assert "llm failing since" in degraded.stdout and "127.0.0.1:9" in degraded.stdout
        reason = next(line for line in degraded.stdout.splitlines() if "failing since" in line)
        assert not re.search(r"\d{4}-\d{2}-\d{2}T\d{2}", reason), reason  # local, not ISO
        loop.run_until_complete(release(lease))
        down = _cli(env, "status")
        assert down.returncode == 1 and "daemon: DOWN" in down.stdout
    finally:
        loop.close()


def test_the_daemon_finishes_a_rollback_that_a_crash_interrupted(
    home: Path, tmp_path: Path
) -> None:
    """A rollback cut short holds every write; the daemon finishes it when it starts."""
    import asyncio

    from aether.checkpoints.manager import Checkpoints
    from aether.keys import Keyspace
    from aether.store.client import connect
    from aether.store.state import Mutation, Store

    env = _env(home)
    settings = Settings(home=home, namespace=env["AETHER_NAMESPACE"])
    keys = Keyspace(settings.namespace)

    async def interrupt() -> None:
        client = await connect(settings, start=False)
        store, cps = Store(client, keys, "test"), Checkpoints(client, keys, budget_ms=1)
        target = await cps.create(label="start")
        for i in range(200):
            await store.apply(Mutation().hset(keys.longterm(f"m{i}"), {"v": i}), "t")
        lock = cps._admin_lock()
        assert await lock.acquire()
        pre = await cps.create(label="pre", prune=False)
        assert await cps._begin(lock, target, pre, "cli", "rollback")
        await cps._step(lock, 0)
        await lock.release()  # as if its process died and the lock expired
        await client.aclose()

    async def state() -> tuple[int, int]:
        client = await connect(settings, start=False)
        try:
            found = [k async for k in client.scan_iter(f"{keys.longterm('')}*")]
            return await client.exists(keys.write_hold()), len(found)
        finally:
            await client.aclose()

    asyncio.run(interrupt())
    assert asyncio.run(state())[0] == 1
    log = tmp_path / "daemon.log"
    proc = _up(env, log)
    try:
        _wait_up(env, proc, log)
        assert asyncio.run(state()) == (0, 0)  # finished: back at the checkpoint
        assert "finished an interrupted rollback" in log.read_text()
        assert _cli(env, "remember", "the hold is gone").returncode == 0
    finally:
        _stop(proc)
    assert proc.returncode == 0
    # a clean stop leaves the inbox group, so a send is refused at once, not after a wait
    began = time.monotonic()
    refused = _cli(env, "send", "anyone there?")
    assert refused.returncode == 1 and "the daemon is not running" in refused.stderr
    assert time.monotonic() - began < 10


def test_send_to_a_refused_llm_gets_the_error_quickly(home: Path, tmp_path: Path) -> None:
    """Nothing listens at the model's address: the reply is the error within seconds."""
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    env = _env(home)
    env.update({"AETHER_LLM__BASE_URL": dead, "AETHER_LLM__MODEL": "m"})  # default retries
    log = tmp_path / "daemon.log"
    proc = _up(env, log)
    try:
        _wait_up(env, proc, log)
        started = time.monotonic()
        sent = _cli(env, "send", "hello?", "--timeout", "60")
        took = time.monotonic() - started
        assert dead.split("/v1")[0] in sent.stdout + sent.stderr, sent
        assert took < 20, took  # was ~50 s: each redelivery waited out its own retries
    finally:
        _stop(proc)


def test_an_erasure_killed_in_the_middle_is_finished_when_the_daemon_starts(
    home: Path, tmp_path: Path
) -> None:
    """SIGKILL ``aether erase`` mid-run: writes stay held, and ``aether up`` finishes it."""
    import asyncio

    from aether.keys import Keyspace
    from aether.memory.tiers.daily import DailyLog
    from aether.operations import Parts
    from aether.store.client import connect
    from aether.store.state import Mutation, Store

    env = _env(home)
    settings = Settings(home=home, namespace=env["AETHER_NAMESPACE"]).model_copy(
        update={"embedding": {"provider": "none"}}
    )
    keys = Keyspace(settings.namespace)
    subject = f"Vexholm-{uuid.uuid4().hex[:8]}"

    async def fill() -> None:
        client = await connect(settings, start=False)
        daily = DailyLog(Parts(settings, client).memory)
        for i in range(2500):
            await daily.log(f"entry {i} " + (f"about {subject}" if i % 2 else "about tea"))
        await client.aclose()

    async def phase() -> bytes | None:
        client = await connect(settings, start=False)
        try:
            return await client.hget(keys.write_hold(), "phase")
        finally:
            await client.aclose()

    async def write_refused() -> str:
        client = await connect(settings, start=False)
        try:
            await Store(client, keys, write_wait_s=0.2).apply(
                Mutation().hset(keys.user_profile(), {"n": "1"}), "t"
            )
            return ""
        except Exception as e:  # noqa: BLE001 - the refusal's text is what is checked
            return str(e)
        finally:
            await client.aclose()

    async def holding() -> tuple[int, int]:
        client = await connect(settings, start=False)
        try:
            found = 0
            async for key in client.scan_iter(match=keys.every_key):
                dump = await client.dump(key)
                found += dump is not None and subject.lower().encode() in dump.lower()
            return found, await client.exists(keys.write_hold())
        finally:
            await client.aclose()

    asyncio.run(fill())
    eraser = subprocess.Popen(
        [sys.executable, "-m", "aether", "erase", subject, "--yes"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seen = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and eraser.poll() is None:
        seen = asyncio.run(phase())
        if seen in (b"state", b"journal"):
            eraser.send_signal(signal.SIGKILL)
            break
    eraser.wait(10)
    assert eraser.returncode == -signal.SIGKILL, "the erasure ended before it could be killed"
    assert "erasure is in progress" in asyncio.run(write_refused())
    assert asyncio.run(holding())[1] == 1
    log = tmp_path / "daemon.log"
    proc = _up(env, log)
    try:
        _wait_up(env, proc, log)
        assert asyncio.run(holding()) == (0, 0), log.read_text()[-2000:]
        assert "finished an interrupted erasure" in log.read_text()
        assert _cli(env, "remember", "the hold is gone").returncode == 0
        verified = _cli(env, "erase", "--verify", subject)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        _stop(proc)

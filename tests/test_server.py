"""The embedded Redis Stack: lifecycle, modules, security, durability, refusing old Redis."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
import redis

from aether.config import Settings
from aether.errors import IncompatibleServerError, ServerError
from aether.keys import Keyspace
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.store.state import Mutation, Store
from tests.conftest import free_port, run_cli


def _aether(
    env: dict[str, str], *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return run_cli(env, *args, timeout=timeout)


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A server of this test's own (started and killed by the test)."""
    server = EmbeddedRedis(Settings(home=tmp_path / "home", redis_appendfsync="always"))
    yield server
    with contextlib.suppress(Exception):
        server.stop()


def test_start_is_idempotent_and_private(own_server: EmbeddedRedis) -> None:
    first = own_server.start()
    second = own_server.start()
    assert first.running and second.running and first.pid == second.pid
    sock = first.endpoint.unix_socket
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(own_server.password_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(own_server.conf_path.stat().st_mode) == 0o600
    c = first.endpoint.client()
    try:
        assert c.config_get("appendonly")["appendonly"] == "yes"
        assert c.config_get("appendfsync")["appendfsync"] == "always"
        assert c.config_get("port")["port"] == "0"  # no TCP unless asked for
    finally:
        c.close()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(unix_socket_path=str(sock)).ping()  # password required
    assert own_server.stop() is True
    assert own_server.status().running is False
    assert own_server.stop() is False


def test_a_launcher_runs_the_server_and_a_failing_one_is_reported(
    own_server: EmbeddedRedis, tmp_path: Path
) -> None:
    """The server runs under the command given (as valgrind for the instruction counts)."""
    ran = tmp_path / "launcher-ran"
    launcher = tmp_path / "launcher.sh"
    launcher.write_text(f'#!/bin/sh\necho "$@" > {ran}\nexec "$@"\n')
    launcher.chmod(0o700)
    status = own_server.start(launcher=[str(launcher)], timeout=30)
    assert status.running
    assert ran.read_text().split()[-1] == str(own_server.conf_path)
    assert own_server.stop(timeout=30) is True

    failing = tmp_path / "failing.sh"
    failing.write_text("#!/bin/sh\necho 'no such tool' >&2\nexit 3\n")
    failing.chmod(0o700)
    with pytest.raises(ServerError, match=r"exit 3.*no such tool"):
        own_server.start(launcher=[str(failing)])
    assert own_server.status().running is False


def test_optional_tcp_port(tmp_path: Path) -> None:
    port = free_port()
    server = EmbeddedRedis(Settings(home=tmp_path / "h", redis_port=port))
    try:
        ep = server.start().endpoint
        c = redis.Redis(host="127.0.0.1", port=port, password=ep.password)
        assert c.ping()
        c.close()
    finally:
        server.stop()


async def test_acknowledged_writes_survive_sigkill(own_server: EmbeddedRedis) -> None:
    status = own_server.start()
    settings = Settings(home=own_server.data_dir.parent, namespace="dur")
    keys = Keyspace("dur")
    client = await connect(settings)
    store = Store(client, keys)
    day = keys.daily(date(2026, 5, 1))
    for i in range(200):
        await store.apply(
            Mutation().json_set(keys.daily_entry(str(i)), {"n": i}).rpush(day, str(i)), "log"
        )
    await client.aclose()
    assert status.pid is not None
    os.kill(status.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while own_server.status().pid is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    own_server.start()
    client = await connect(settings)
    try:
        assert await client.llen(day) == 200
        assert await client.xlen(keys.journal()) == 200
        for i in (0, 99, 199):
            assert json.loads(
                await client.execute_command("JSON.GET", keys.daily_entry(str(i)))
            ) == {"n": i}
    finally:
        await client.aclose()


@pytest.fixture(scope="module")
def old_redis() -> Iterator[str]:
    """The system's redis-server 7.0 (no modules) on a spare port."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no system redis-server to test the refusal against")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        with contextlib.suppress(redis.ConnectionError):
            if redis.Redis.from_url(url).ping():
                break
        time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(10)


async def test_server_without_modules_is_refused(old_redis: str, tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, redis_url=old_redis)  # type: ignore[arg-type]
    with pytest.raises(IncompatibleServerError) as info:
        await connect(settings)
    message = str(info.value)
    assert "search" in message and "JSON" in message and "AETHER_REDIS_URL" in message
    assert "\n" not in message


def test_cli_refuses_server_without_modules(old_redis: str, cli_env: dict[str, str]) -> None:
    env = {**cli_env, "AETHER_REDIS_URL": old_redis}
    for args in (("checkpoint", "list"), ("redis", "cli", "--builtin", "PING")):
        out = _aether(env, *args)
        assert out.returncode == 1, out
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "needs Redis >= 7.4 with the search and JSON modules" in lines[0]
    # nothing was written to the old server
    assert redis.Redis.from_url(old_redis).dbsize() == 0


def test_cli_module_list_and_commands(cli_env: dict[str, str], namespace: str) -> None:
    for extra in ((), ("--builtin",)):
        out = _aether(cli_env, "redis", "cli", *extra, "MODULE", "LIST")
        assert out.returncode == 0, out.stderr
        names = out.stdout.split()
        assert "search" in names and "ReJSON" in names
    key = f"{namespace}:scratchpad:cli"
    assert _aether(cli_env, "redis", "cli", "--builtin", "SET", key, "v w").returncode == 0
    got = _aether(cli_env, "redis", "cli", "GET", key)
    assert got.stdout.strip() == "v w"
    bad = _aether(cli_env, "redis", "cli", "--builtin", "HGETALL", key)
    assert bad.returncode == 1 and "WRONGTYPE" in bad.stdout


def test_cli_url_status_and_on_demand_start(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "AETHER_HOME": str(tmp_path / "h")}
    assert _aether(env, "redis", "status").returncode == 1  # not running yet
    listed = _aether(env, "checkpoint", "list")  # needs Redis: starts it on demand
    assert listed.returncode == 2, listed.stderr  # ... and finds no checkpoints
    try:
        st = json.loads(_aether(env, "redis", "status", "--json").stdout)
        assert st["running"] is True
        assert st["journal_chain"] == "module"  # built under this HOME's cache, then loaded
        assert "journal chain in the C module" in _aether(env, "redis", "status").stdout
        url = json.loads(_aether(env, "--json", "redis", "url").stdout)
        c = redis.Redis(unix_socket_path=url["socket"], password=url["password"])
        assert c.ping()
        c.close()
        assert url["redis_cli"].startswith("redis-cli -s ")
    finally:
        assert _aether(env, "redis", "stop").returncode == 0
    assert _aether(env, "redis", "status").returncode == 1


def test_builtin_cli_escapes_binary_values_on_a_terminal(
    cli_env: dict[str, str], namespace: str
) -> None:
    import pty

    key = f"{namespace}:scratchpad:bin"
    home = Path(cli_env["AETHER_HOME"])
    password = (home / "redis" / "password").read_text().strip()
    c = redis.Redis(unix_socket_path=str(home / "run" / "redis.sock"), password=password)
    c.set(key, b"\x91\x92\xa3DEL\x01 ok")
    c.close()
    main, child = pty.openpty()  # stdout a terminal, as for a person
    proc = subprocess.run(
        [sys.executable, "-m", "aether", "redis", "cli", "--builtin", "GET", key],
        env=cli_env,
        stdout=child,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    os.close(child)
    shown = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(main, 4096):
            shown += chunk
    os.close(main)
    assert proc.returncode == 0, proc.stderr
    assert shown.strip() == b'"\\x91\\x92\\xa3DEL\\x01 ok"'  # as redis-cli shows it, no raw bytes


def test_up_leaves_redis_running_unless_asked_to_stop_it(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "AETHER_HOME": str(tmp_path / "h")}
    env["AETHER_EMBEDDING__PROVIDER"] = "none"
    try:
        for flags, running_after in (((), True), (("--stop-redis",), False)):
            proc = subprocess.Popen(
                [sys.executable, "-m", "aether", "up", *flags],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 60
            while _aether(env, "status").returncode != 0:  # 0: the daemon is up
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(15) == 0
            status = _aether(env, "redis", "status")
            assert (status.returncode == 0) is running_after, (flags, status.stdout)
    finally:
        _aether(env, "redis", "stop")

"""Private by default: what aether writes is owner-only, whatever the umask, and says so.

The home sits in a world-traversable folder, so only aether's own modes stand between
another local user and the memory. Where the machine allows it (root, ``runuser``),
the check runs as the unprivileged user ``nobody``, with a control file proving that
user could read a file that was not private.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from aether.config import Settings
from aether.server.embedded import EmbeddedRedis
from aether.server.security import is_loopback, security_report
from aether.store.client import connect
from tests.adversarial.conftest import Agent, new_agent

CAN_SWITCH_USER = os.geteuid() == 0 and shutil.which("runuser") is not None


@pytest.fixture(scope="module")
def open_parent() -> Iterator[Path]:
    parent = Path(tempfile.mkdtemp(prefix="aether-perm-", dir="/tmp"))
    os.chmod(parent, 0o755)
    yield parent
    shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture(scope="module")
def private_home(open_parent: Path) -> Iterator[Path]:
    """A home created and written under umask 022 (the usual one)."""
    home = open_parent / "home"
    old = os.umask(0o022)
    server = EmbeddedRedis(Settings(home=home, redis_appendfsync="always"))
    try:
        server.start()
        agent = Agent(home, "perm")
        assert agent("memory", "log", "the vault code is 4711").code == 0
        assert agent("memory", "export", str(home / "export.jsonl")).code == 0
    finally:
        os.umask(old)
    yield home
    server.stop()


def _entries(home: Path) -> list[tuple[Path, int]]:
    out = [(home, home.lstat().st_mode)]
    for folder, dirs, files in os.walk(home):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            out.append((path, path.lstat().st_mode))
    return out


def test_everything_aether_writes_is_owner_only(private_home: Path) -> None:
    entries = _entries(private_home)
    aof = [p for p, _ in entries if ".aof" in p.name or p.name.endswith(".rdb")]
    assert aof, "the AOF files exist"
    assert (private_home / "logs" / "aether.log").exists()
    for path, mode in entries:
        if stat.S_ISDIR(mode):
            assert stat.S_IMODE(mode) == 0o700, path
        elif stat.S_ISREG(mode):
            assert stat.S_IMODE(mode) == 0o600, path
        elif stat.S_ISSOCK(mode):
            assert stat.S_IMODE(mode) & 0o077 == 0, path


@pytest.mark.skipif(not CAN_SWITCH_USER, reason="needs root and runuser to act as nobody")
def test_another_user_cannot_read_the_memory(private_home: Path, open_parent: Path) -> None:
    control = open_parent / "control.txt"
    control.write_text("readable")
    os.chmod(control, 0o644)

    def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["runuser", "-u", "nobody", "--", *argv],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    assert as_nobody("cat", str(control)).returncode == 0  # the check can fail
    aof_dir = private_home / "redis" / "appendonlydir"
    for target in [
        private_home,
        aof_dir,
        private_home / "logs" / "aether.log",
        private_home / "export.jsonl",
        private_home / "redis" / "password",
    ]:
        denied = as_nobody("cat" if target.is_file() else "ls", str(target))
        assert denied.returncode != 0 and "Permission denied" in denied.stderr, target
    grep = as_nobody("grep", "-r", "4711", str(private_home))
    assert "4711" not in grep.stdout


def test_the_mode_check_without_a_second_user(private_home: Path) -> None:
    for path in (private_home, private_home / "redis", private_home / "redis" / "appendonlydir"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_an_existing_wide_home_is_tightened_at_start_with_a_notice(open_parent: Path) -> None:
    home = open_parent / "old-home"
    server = EmbeddedRedis(Settings(home=home))
    server.start()
    server.stop()
    (home / "keep-me.txt").write_text("a user's own file")
    for path, mode in _entries(home):
        os.chmod(path, stat.S_IMODE(mode) | (0o755 if stat.S_ISDIR(mode) else 0o644))
    os.chmod(home / "keep-me.txt", 0o644)
    try:
        with capture_logs() as logs:
            server.start()
        notices = [e for e in logs if "tightened permissions" in e["event"]]
        assert notices and notices[0]["count"] >= 4
        for path, mode in _entries(home):
            if path.name != "keep-me.txt" and not stat.S_ISSOCK(mode):
                assert stat.S_IMODE(mode) & 0o077 == 0, path
        assert stat.S_IMODE((home / "keep-me.txt").stat().st_mode) == 0o644  # not aether's
    finally:
        server.stop()


def test_status_reports_the_security_block(private_home: Path) -> None:
    out = Agent(private_home, "perm")("status", "--json")
    assert out.code == 1  # the daemon is down, the report is still whole
    security = json.loads(out.stdout)["security"]
    assert security["home_mode"] == "0700"
    assert security["data_files_mode"] == "0600"
    assert security["socket_mode"] == "0700"
    assert security["auth"] is True
    assert security["mcp"] == {"port": None, "host": "127.0.0.1", "token_set": False}
    assert security["warnings"] == []
    human = Agent(private_home, "perm")("status")
    assert "security: home 0700, data files 0600, socket 0700, auth on, MCP off" in human.stdout


def test_status_warns_about_wide_files_and_exposed_mcp(private_home: Path) -> None:
    log_file = private_home / "logs" / "aether.log"
    settings = Settings(home=private_home, namespace="perm", embedding={"provider": "none"})
    exposed = {"port": 8765, "host": "0.0.0.0", "auth": True}  # what a daemon serves

    async def report() -> dict[str, object]:
        client = await connect(settings)
        try:
            return await security_report(settings, client, mcp=exposed)
        finally:
            await client.aclose()

    os.chmod(log_file, 0o644)
    try:
        warnings = asyncio.run(report())["warnings"]
    finally:
        os.chmod(log_file, 0o600)
    assert isinstance(warnings, list)
    assert any("readable by other users" in w and "aether.log" in w for w in warnings)
    assert any("MCP over HTTP is bound to 0.0.0.0" in w for w in warnings)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("example.com", False),
        ("", False),
    ],
)
def test_loopback_is_judged_by_address(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("token", ["", "   "])
def test_an_empty_mcp_token_is_refused_at_start(redis_home: Path, token: str) -> None:
    agent = new_agent(redis_home)
    env = {**agent.env, "AETHER_MCP__PORT": "8799", "AETHER_MCP__TOKEN": token}
    done = subprocess.run(
        [sys.executable, "-m", "aether", "up"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert "AETHER_MCP__TOKEN" in done.stderr and "Traceback" not in done.stderr

"""The console entry point, bad configuration, unexpected errors and concurrent admin actions."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from aether.interfaces.cli import AetherGroup
from aether.interfaces.mcp import _guarded
from tests.adversarial.conftest import Agent


def _aether(agent: Agent, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aether", *args],
        env={**agent.env, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_the_real_entry_point_never_prints_a_traceback(seeded: Agent, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "longterm", "content": "x", "timestamp": 1e300}\n')
    usage = _aether(seeded, "frobnicate")
    assert usage.returncode == 64 and "No such command" in usage.stderr
    imported = _aether(seeded, "memory", "import", str(bad))
    assert imported.returncode == 1 and "line 1: timestamp" in imported.stderr
    for done in (usage, imported):
        assert "Traceback" not in done.stdout + done.stderr


BAD_CONFIG = [
    {"AETHER_NAMESPACE": "a:b"},
    {"AETHER_NAMESPACE": ""},
    {"AETHER_NAMESPACE": "x" * 100},
    {"AETHER_CHECKPOINTS__KEEP": "-1"},
    {"AETHER_CHECKPOINTS__KEEP": "many"},
    {"AETHER_REDIS_APPENDFSYNC": "sometimes"},
    {"AETHER_LOG__LEVEL": "LOUD"},
    {"AETHER_MEMORY__MAX_CONTENT_BYTES": "0"},
    {"AETHER_CONTEXT__PROACTIVE_AT": "0.99"},
    {"AETHER_REDIS_URL": "redis://127.0.0.1:1"},
    {"AETHER_REDIS_URL": "not a url"},
]


@pytest.mark.parametrize(
    "env", BAD_CONFIG, ids=lambda e: ",".join(f"{k}={v[:12]}" for k, v in e.items())
)
def test_bad_configuration_is_one_line(seeded: Agent, env: dict[str, str]) -> None:
    before = seeded.image()
    out = seeded("memory", "day", **env)
    assert out.code == 1, out.text
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert seeded.image() == before


def test_a_malformed_config_file_is_one_line(seeded: Agent, tmp_path: Path) -> None:
    config = tmp_path / "aether.toml"
    config.write_text("namespace = [\n")
    out = seeded.refuses("memory", "day", codes=(1,), AETHER_CONFIG_FILE=str(config))
    assert "cannot read the configuration file" in out.text


def _boom_app() -> typer.Typer:
    app = typer.Typer(cls=AetherGroup)

    @app.callback()
    def root(
        json_: bool = typer.Option(False, "--json"), debug: bool = typer.Option(False, "--debug")
    ) -> None:
        """Root."""

    @app.command()
    def boom() -> None:
        """A command with a bug."""
        raise RuntimeError("something broke\nacross lines")

    return app


@pytest.mark.parametrize("flags", [(), ("--json",), ("--debug",)])
def test_a_bug_becomes_one_line_and_debug_shows_the_traceback(flags: tuple[str, ...]) -> None:
    result = CliRunner().invoke(_boom_app(), [*flags, "boom"])
    assert result.exit_code == 1
    if "--json" in flags:
        assert json.loads(result.stdout) == {
            "error": {
                "code": "error",
                "message": "unexpected RuntimeError: something broke across lines "
                "(the traceback is in the log; --debug shows it)",
            }
        }
    elif "--debug" in flags:
        assert "Traceback" in result.stderr and "RuntimeError" in result.stderr
    else:
        assert result.stderr.strip().startswith("error: unexpected RuntimeError")
        assert "Traceback" not in result.stderr


def test_an_mcp_tool_bug_is_a_contract_error() -> None:
    async def buggy() -> dict[str, object]:
        raise KeyError("oops")

    result = asyncio.run(_guarded(buggy)())
    assert result.is_error
    payload = json.loads(result.content[0].text)
    assert payload["code"] == "error" and "KeyError" in payload["message"]
    assert payload["retryable"] is False


def test_concurrent_cli_rollbacks_leave_one_clear_winner(fresh: Agent) -> None:
    assert fresh("memory", "log", "before").code == 0
    created = fresh("checkpoint", "create", "--label", "target", "--json")
    target = json.loads(created.stdout)["id"]
    for i in range(30):
        assert fresh("memory", "log", f"after {i}").code == 0
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "aether", *args],
            env=fresh.env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        for args in (
            ("checkpoint", "rollback", target, "--yes"),
            ("checkpoint", "rollback", target, "--yes"),
            ("checkpoint", "undo"),
        )
    ]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    for code, out, err in results:
        assert "Traceback" not in out + err
        assert code in (0, 1), (code, out, err)
        if code == 1:
            assert len(err.strip().splitlines()) == 1, err
    assert any(code == 0 for code, _, _ in results[:2])
    day = json.loads(fresh("memory", "day", "--json").stdout)
    contents = {doc["content"] for doc in day}
    assert contents in ({"before"}, {"before", *(f"after {i}" for i in range(30))})
    fresh.counters_match()

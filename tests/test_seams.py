"""The smaller seams met on the way (issue 53): each through the CLI, as a person meets it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from aether.identity.bootstrap import default_identity_dir, load_directory
from aether.identity.profile import Identity
from aether.identity.prompt import build_system_prompt
from aether.testing.model import ScriptedOpenAI, echo
from tests.conftest import invoke_cli, run_cli
from tests.test_daemon import _cli, _start
from tests.test_daemon import _env as llm_env


def _plain(cli_env: dict[str, str]) -> dict[str, str]:
    return {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}


def test_usage_errors_exit_64_and_say_it_once(cli_env: dict[str, str]) -> None:
    env = _plain(cli_env)
    for args, said in [
        (("ledger", "list", "--since", "3q"), "--since '3q': use 7d"),
        (("ledger", "totals", "--since", "3q"), "--since '3q': use 7d"),
        (("memory", "search", "x", "--since", "7x"), "error: --since '7x': use 7d"),
        (("task", "add", "x", "--due", "2026-13-45"), "'2026-13-45' is not a date"),
        (("context", "preview", "  "), "the query is empty"),
        (("memory", "search", ""), "the query is empty"),
    ]:
        done = invoke_cli(env, *args)
        assert done.returncode == 64, (args, done.returncode, done.stderr)
        assert said in done.stderr and "Value error" not in done.stderr, (args, done.stderr)
        assert done.stderr.count("--since") <= 1, done.stderr
    assert (
        json.loads(invoke_cli(env, "--json", "task", "list", "--status", "all").stdout or "[]")
        == []
    )


def test_memory_log_reads_stdin_past_the_argument_limit(cli_env: dict[str, str]) -> None:
    env = _plain(cli_env)
    big = "kestrel " * 40_000  # 320 KB: more than an argument may carry
    done = subprocess.run(
        [sys.executable, "-m", "aether", "--json", "memory", "log", "-"],
        env=env,
        input=big,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)
    assert entry["content"] == big.strip() or entry["content"] == big
    over = subprocess.run(
        [sys.executable, "-m", "aether", "memory", "log", "-"],
        env={**env, "AETHER_MEMORY__MAX_CONTENT_BYTES": "1000"},
        input="x" * 2000,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert over.returncode == 64 and "content limit" in over.stderr
    days = json.loads(run_cli(env, "--json", "memory", "day").stdout)
    assert [e["id"] for e in days] == [entry["id"]]  # the refused one is not there


def test_memory_day_lists_entries_by_time(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = _plain(cli_env)
    day = 1_795_700_000.0 - (1_795_700_000.0 % 86400)
    lines = [  # written late first, early second
        {"kind": "daily", "content": "late in the day", "timestamp": day + 80_000},
        {"kind": "daily", "content": "early in the day", "timestamp": day + 3_600},
    ]
    path = tmp_path / "day.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert run_cli(env, "memory", "import", str(path)).returncode == 0
    listed = json.loads(run_cli(env, "--json", "memory", "day", "2026-11-26").stdout)
    assert [e["content"] for e in listed] == ["early in the day", "late in the day"]


def test_the_default_user_file_sends_no_template_text_to_the_model() -> None:
    source = load_directory(default_identity_dir())
    identity = Identity(source.agent, source.user, {d.name: d.text for d in source.docs})
    prompt = build_system_prompt(identity)
    assert "Edit this file" not in prompt.text and "operator notes" not in prompt.sections
    assert "Name: Operator" in prompt.text  # the front matter still is
    written = identity.files["USER.md"] + "\nI am on call every second weekend.\n"
    told = Identity(source.agent, source.user, {**identity.files, "USER.md": written})
    assert "on call every second weekend" in build_system_prompt(told).text


def test_up_honours_the_console_level_and_logs_no_http_lines(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    with ScriptedOpenAI(responder=echo) as server:
        env = {**llm_env(cli_env, server), "AETHER_LOG__CONSOLE_LEVEL": "WARNING"}
        log = tmp_path / "up.log"
        proc = _start(env, log)
        try:
            assert _cli(env, "send", "hello").returncode == 0
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)
        assert server.chat_requests()  # the model was called over HTTP
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert not [line for line in lines if '"info"' in line or " [info " in line], lines[:5]
    assert not [line for line in lines if "HTTP Request" in line]

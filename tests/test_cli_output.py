"""CLI output for people and for programs: tables, value-level diffs, pinned JSON shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import Agent, new_agent


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, redis_home: Path) -> tuple[Agent, str]:
    """One agent with a memory of each kind, and a checkpoint taken half-way."""
    agent = new_agent(redis_home)
    assert agent("identity", "bootstrap").code == 0
    assert agent("memory", "log", "the NAS has four disks", "--tags", "infra").code == 0
    assert agent("memory", "longterm", "add", "Ada prefers tea").code == 0
    checkpoint = json.loads(agent("checkpoint", "create", "--json").stdout)["id"]
    assert agent("remember", "The NAS runs ZFS").code == 0
    goal = agent("goal", "add", "a quieter [i]NAS[/i]")
    assert goal.code == 0, goal.text
    added = agent(
        "task",
        "add",
        "replace a [bold]disk[/]",
        "--due",
        "2026-12-01",
        "--goal",
        goal.stdout.strip(),
    )
    assert added.code == 0, added.text
    assert agent("identity", "set", "agent", "name", "Bea").code == 0
    return agent, checkpoint


def _keys(value: Any) -> list[str]:
    """The sorted keys of an object, or of a list's first row."""
    row = value[0] if isinstance(value, list) else value
    return sorted(row)


MEMORY = ["content", "id", "kind", "score", "source", "tags", "timestamp"]
CHECKPOINT = ["actor", "chain", "created_at", "id", "journal_pos", "label", "reason"]
TASK = ["created_at", "done_at", "due", "goal", "id", "notes", "priority", "status", "title"]
BELIEF = [
    "confidence",
    "content",
    "effective_confidence",
    "evidence",
    "id",
    "reinforced_at",
    "slots",
    "status",
    "superseded_by",
    "supersedes",
    "tags",
    "timestamp",
    "type",
]
# the documented --json shape of each command (docs/guides/cli.md, "JSON output"): a change here is
# a change of the public interface, to be made on purpose
SHAPES: list[tuple[tuple[str, ...], list[str]]] = [
    (("memory", "day"), sorted([*MEMORY, "day", "hash", "session"])),
    (("memory", "search", "NAS"), sorted([*MEMORY, "relevance", "session", "signals"])),
    (("memory", "longterm", "list"), sorted([*MEMORY, "hash", "sources"])),
    (("belief", "list"), BELIEF),
    (("task", "list"), TASK),
    (("checkpoint", "list"), CHECKPOINT),
    (("checkpoint", "show", "CP"), sorted([*CHECKPOINT, "entries_since"])),
    (("checkpoint", "diff", "CP"), ["changes", "checkpoint", "entries", "tiers"]),
    (
        ("belief", "stats"),
        [
            "active_by_type",
            "by_status",
            "in_context",
            "mean_effective_confidence",
            "open_questions",
            "total",
            "uncertain",
        ],
    ),
    (("belief", "reflect"), ["active", "duplicates", "stale"]),
    (
        ("ledger", "totals"),
        ["actions", "completion_tokens", "cost_usd", "llm_calls", "prompt_tokens"],
    ),
    (("identity", "show"), ["agent", "files", "user"]),
    (
        ("journal", "verify"),
        ["breaks", "entries", "head", "keys", "legacy", "ok", "redactions", "signed", "start"],
    ),
]


@pytest.mark.parametrize(("args", "shape"), SHAPES, ids=lambda a: " ".join(a)[:30])
def test_each_commands_json_shape_is_pinned(
    seeded: tuple[Agent, str], args: tuple[str, ...], shape: list[str]
) -> None:
    agent, checkpoint = seeded
    out = agent(*(checkpoint if a == "CP" else a for a in args), "--json")
    assert out.code == 0, out.text
    assert _keys(json.loads(out.stdout)) == shape
    assert out.stdout.count("\n") == 1  # one JSON document on one line


def test_every_json_time_is_epoch_seconds(agent_factory: Agent) -> None:
    """One format for every time a program reads: a number of seconds since the epoch."""
    import time

    agent = agent_factory
    now = time.time()
    assert agent("checkpoint", "create", "--json").code == 0
    created = json.loads(agent("checkpoint", "list", "--json").stdout)[0]["created_at"]
    assert isinstance(created, float) and abs(created - now) < 120  # seconds, not ms
    ran = json.loads(agent("maintenance", "run", "--json").stdout)
    assert isinstance(ran["started_at"], float) and abs(ran["started_at"] - now) < 120
    status = json.loads(agent("status", "--json").stdout)
    assert isinstance(status["last_maintenance"], float)
    assert abs(status["last_maintenance"] - ran["started_at"]) < 1
    assert status["last_beat"] is None  # no daemon has beaten: null, never a string
    human = agent("status").stdout
    assert "last maintenance: never" not in human


DIFF_CHANGES = ["added", "change", "fields", "key", "removed", "tier", "type"]


def test_checkpoint_diff_json_names_each_value_that_changed(seeded: tuple[Agent, str]) -> None:
    agent, checkpoint = seeded
    diff = json.loads(agent("checkpoint", "diff", checkpoint, "--json").stdout)
    by_key = {c["key"].split(":", 1)[1]: c for c in diff["changes"]}
    assert all(sorted(c) == DIFF_CHANGES for c in diff["changes"])
    profile = by_key["identity:profile"]
    assert profile["change"] == "modified" and profile["type"] == "hash"
    assert {"field": "name", "before": "Aether", "after": "Bea"} in profile["fields"]
    tasks = by_key["tasks"]
    assert tasks["change"] == "created" and tasks["type"] == "hash"
    (task,) = tasks["fields"]  # one field: the new task, by its id
    assert task["before"] is None and "replace a [bold]disk[/]" in task["after"]
    belief = next(c for c in diff["changes"] if c["tier"] == "beliefs" and c["type"] == "json")
    fields = {f["field"]: f for f in belief["fields"]}
    assert fields["content"] == {"field": "content", "before": None, "after": "The NAS runs ZFS"}
    day = next(c for k, c in by_key.items() if k.startswith("daily:") and c["type"] == "list")
    assert day["change"] == "modified" and len(day["added"]) == 1 and day["removed"] == []
    assert sorted(diff["tiers"]) == sorted({c["tier"] for c in diff["changes"]})


def test_checkpoint_diff_for_people_shows_before_and_after(seeded: tuple[Agent, str]) -> None:
    agent, checkpoint = seeded
    out = agent("checkpoint", "diff", checkpoint)
    assert out.code == 0
    assert "name: Aether → Bea" in out.stdout
    assert "content: (none) → The NAS runs ZFS" in out.stdout
    assert "replace a [bold]disk[/]" in out.stdout  # user text is never read as markup
    keys_only = agent("checkpoint", "diff", checkpoint, "--keys-only")
    assert "identity:profile (hash)" in keys_only.stdout and "→" not in keys_only.stdout
    assert json.loads(agent("checkpoint", "diff", checkpoint, "--keys-only", "--json").stdout)


def test_a_value_changed_and_changed_back_is_not_a_change(agent_factory: Agent) -> None:
    agent = agent_factory
    assert agent("identity", "bootstrap").code == 0
    checkpoint = json.loads(agent("checkpoint", "create", "--json").stdout)["id"]
    assert agent("identity", "set", "agent", "name", "Bea").code == 0
    assert agent("identity", "set", "agent", "name", "Aether").code == 0
    diff = json.loads(agent("checkpoint", "diff", checkpoint, "--json").stdout)
    assert diff["entries"] == 2
    fields = [f["field"] for c in diff["changes"] for f in c["fields"]]
    assert "name" not in fields and set(fields) <= {"updated_at"}  # only the time moved


@pytest.fixture
def agent_factory(redis_home: Path) -> Agent:
    return new_agent(redis_home)


LISTS: list[tuple[tuple[str, ...], list[str]]] = [
    (("memory", "day"), ["id", "when", "source", "tags", "content"]),
    (("memory", "search", "NAS"), ["relevance", "kind", "id", "when", "source", "tags", "content"]),
    (("memory", "longterm", "list"), ["id", "when", "source", "tags", "content"]),
    (("belief", "list"), ["id", "confidence", "status", "type", "statement"]),
    (("task", "list"), ["id", "priority", "status", "due", "goal", "title"]),
    (("goal", "list"), ["id", "status", "title", "tasks"]),
    (("checkpoint", "list"), ["id", "created", "reason", "label", "actor"]),
    (("belief", "history", "BELIEF"), ["when", "change", "details"]),
]


@pytest.mark.parametrize(("args", "header"), LISTS, ids=lambda a: " ".join(a)[:30])
def test_lists_are_tables_with_a_header_and_whole_ids(
    seeded: tuple[Agent, str], args: tuple[str, ...], header: list[str]
) -> None:
    agent, _ = seeded
    belief = json.loads(agent("belief", "list", "--json").stdout)[0]["id"]
    args = tuple(belief if a == "BELIEF" else a for a in args)
    rows = json.loads(agent(*args, "--json").stdout)
    out = agent(*args, COLUMNS="60")  # piped: plain columns, however narrow the terminal
    assert out.code == 0, out.text
    lines = out.stdout.splitlines()
    assert lines[0].split() == header
    assert len(lines) == 1 + len(rows)
    assert not any(ch in out.stdout for ch in "│─┃━")  # no borders in a pipe
    assert all(line == line.rstrip() for line in lines)
    for row, line in zip(rows, lines[1:], strict=True):
        if "id" in row and "id" in header:
            assert row["id"] in line  # never cut: people copy ids


def test_a_table_on_a_terminal_has_borders_and_keeps_ids_whole() -> None:
    import io

    from rich.console import Console

    from aether.interfaces import tables
    from aether.interfaces.tables import Column, build_table

    rows = [{"id": "01M84XWET1CRAD2AX973PFH6ZN", "text": "word " * 40}]
    columns: list[Column[dict[str, str]]] = [
        Column("id", lambda r: r["id"], whole=True),
        Column("text", lambda r: r["text"]),
    ]
    buffer = io.StringIO()
    Console(file=buffer, width=50, force_terminal=True, color_system=None).print(
        build_table(columns, rows, plain=False)
    )
    shown = buffer.getvalue()
    assert "01M84XWET1CRAD2AX973PFH6ZN" in shown and "─" in shown
    assert max(len(line) for line in shown.splitlines()) <= 50  # text wraps, the id does not
    assert tables.Column is Column


@pytest.mark.parametrize("chosen", ["console", "json", "auto", "env-json"])
def test_log_lines_on_stderr_follow_the_log_format(tmp_path: Path, chosen: str) -> None:
    """A wide home is tightened with a warning: console lines for people, JSON for machines."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    home.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AETHER_")}
    env.update({"AETHER_HOME": str(home), "AETHER_CONFIG_FILE": str(tmp_path / "none.toml")})
    flag = ["--log-format", chosen] if chosen in ("console", "json") else []
    if chosen == "env-json":
        env["AETHER_LOG__FORMAT"] = "json"
    out = subprocess.run(
        [sys.executable, "-m", "aether", *flag, "config", "show", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["home"] == str(home)  # stdout stays for the program
    (line,) = [x for x in out.stderr.splitlines() if "tightened permissions" in x]
    if chosen == "console":
        assert not line.startswith("{") and "[warning" in line and "home=" in line
    else:  # json, and auto off a terminal
        event = json.loads(line)
        assert event["level"] == "warning" and event["home"] == str(home)


def test_an_unknown_log_format_is_a_usage_error(agent_factory: Agent) -> None:
    out = agent_factory("--log-format", "xml", "config", "show")
    assert out.code == 64 and "console" in out.stderr and "json" in out.stderr


def _stderr_on_a_terminal(env: dict[str, str], *args: str) -> tuple[int, str]:
    """Run ``aether ARGS`` with stderr on a pseudo-terminal: what a person would see."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "aether", *args],
        env={**env, "COLUMNS": "100"},
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return proc.wait(timeout=60), seen.decode(errors="replace")


@pytest.mark.parametrize("as_json", [False, True])
def test_long_work_draws_a_progress_bar_on_a_terminal_only(
    seeded: tuple[Agent, str], tmp_path: Path, as_json: bool
) -> None:
    agent, _ = seeded
    flags = ["--json"] if as_json else []
    code, seen = _stderr_on_a_terminal(agent.env, "memory", "reindex", *flags)
    assert code == 0
    assert ("recounting memories" in seen) is not as_json, seen
    code, seen = _stderr_on_a_terminal(
        agent.env, "memory", "export", str(tmp_path / "out.jsonl"), *flags
    )
    assert code == 0 and ("exporting" in seen) is not as_json, seen
    piped = agent("memory", "export", str(tmp_path / "again.jsonl"))
    assert piped.code == 0 and "exporting" not in piped.stderr  # not a terminal: no bar

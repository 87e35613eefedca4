"""CLI conventions: errors, exit codes, help and choices behave like the tools people know."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from aether.interfaces.cli import app
from tests.adversarial.conftest import Agent, new_agent


@pytest.fixture
def agent(redis_home: Path) -> Agent:
    return new_agent(redis_home)


FAILING = [
    (("send", "x"), "config"),
    (("checkpoint", "show", "01ZZZZZZ"), "not_found"),
    (("task", "done", "ZZZZ"), "not_found"),
    (("belief", "show", "ZZZZZZ"), "not_found"),
    (("identity", "set", "user", "timezone", "Mars/Olympus"), "identity"),
]


@pytest.mark.parametrize(("args", "code"), FAILING, ids=lambda a: str(a)[:40])
def test_both_json_flags_give_one_error_object_on_stdout(
    agent: Agent, args: tuple[str, ...], code: str
) -> None:
    if args[0] == "identity":
        assert agent("identity", "bootstrap").code == 0
    own = agent(*args, "--json")
    root = agent("--json", *args)
    for out in (own, root):
        assert out.code == 1, out.text
        error = json.loads(out.stdout)["error"]
        assert list(error) == ["code", "message"] and error["code"] == code
        assert out.stderr.strip() == ""
    assert json.loads(own.stdout) == json.loads(root.stdout)
    human = agent(*args)
    assert human.code == 1 and human.stdout == ""
    assert human.stderr.startswith("error: ") and len(human.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "search", "foo", "--since", "banana"),
        ("memory", "search", "foo", "--kind", "bogus"),
        ("memory", "search", ""),
        ("memory", "search", "   "),
    ],
    ids=lambda a: " ".join(a) or "empty",
)
def test_bad_search_input_is_a_usage_error_like_a_bad_option(
    agent: Agent, args: tuple[str, ...]
) -> None:
    out = agent(*args)
    assert out.code == 64, out.text  # EX_USAGE; 2 stays "the query ran and found nothing"
    assert "nothing found" not in out.text
    if "--kind" not in args:  # click's own usage errors print no JSON object
        error = json.loads(agent(*args, "--json").stdout)["error"]
        assert error["code"] == "invalid"


EMPTY = [
    ("questions",),
    ("ledger", "list"),
    ("graph", "find", "NAS"),
    ("memory", "scratch", "get", "nothere"),
    ("checkpoint", "list"),
    ("memory", "search", "kettle"),
    ("memory", "longterm", "list"),
    ("task", "list"),
]


@pytest.mark.parametrize("args", EMPTY, ids=" ".join)
def test_exit_2_means_found_nothing_and_says_so(agent: Agent, args: tuple[str, ...]) -> None:
    out = agent(*args)
    assert out.code == 2, out.text
    assert out.stdout.strip() in ("", "[]")
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


@pytest.mark.parametrize(
    "args", [("frobnicate",), ("memory", "search"), ("--limit", "0"), ("memory", "day", "--x")]
)
def test_usage_errors_are_64(agent: Agent, args: tuple[str, ...]) -> None:
    assert agent(*args).code == 64


GROUPS = [
    (),
    ("memory",),
    ("config",),
    ("checkpoint",),
    ("memory", "longterm"),
    ("belief",),
    ("repo",),
    ("graph",),
    ("identity",),
]


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: " ".join(g) or "aether")
def test_a_bare_group_shows_its_help(agent: Agent, group: tuple[str, ...]) -> None:
    out = agent(*group)
    assert out.code == 0, out.text
    assert "Usage: " in out.stdout and "Commands:" in out.stdout
    assert "Missing command" not in out.text


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name in group.list_commands(None) if hasattr(group, "list_commands") else []:
        found += _commands(group.get_command(None, name), (*path, name))
    return found


def test_every_help_page_is_plain_text(agent: Agent) -> None:
    from typer.main import get_command

    pages = _commands(get_command(app))
    assert len(pages) > 60
    for path in pages:
        out = agent(*path, "--help")
        assert out.code == 0, (path, out.text)
        for leak in ("``", "<bool>", "<str>", "<int>", "<float>", "<path>", "[bold", "[/", "╭"):
            assert leak not in out.stdout, (path, leak, out.stdout)
        listed = out.stdout.split("Commands:", 1)[1] if "Commands:" in out.stdout else ""
        assert not re.search(r"\.\.\.$", listed, re.M), (path, listed)  # never cut short
        usage = out.stdout.splitlines()[0]
        assert not re.search(r"\{[A-Z_]+\}", usage), (path, usage)  # CONTENT, not {CONTENT}
        options = out.stdout.split("Options:", 1)[-1]
        assert not re.search(r"--[a-z-]+ <[\w\[\]]+>", options), (path, options)


@pytest.mark.parametrize(
    ("args", "choices"),
    [
        (("memory", "search"), "[daily|longterm|belief|event|decision|failure]"),
        (("memory", "log"), "[user|agent|system]"),
        (("belief", "list"), "[active|superseded|forgotten|pruned|all]"),
        (("task", "list"), "[open|done|all]"),
        (("ledger", "list"), "[action|llm_call|tool_call]"),
        (("memory", "import"), "[refuse|keep-first|keep-last]"),
    ],
)
def test_choices_are_the_same_in_help_and_errors(
    agent: Agent, args: tuple[str, ...], choices: str
) -> None:
    assert choices in agent(*args, "--help").stdout
    option = {"memory": "--kind", "belief": "--status", "task": "--status", "ledger": "--kind"}
    flag = "--source" if args == ("memory", "log") else option[args[0]]
    if args == ("memory", "import"):
        flag = "--on-duplicate"
    extra = {"memory search": ["q"], "memory log": ["x"], "memory import": ["f"]}
    out = agent(*args, *extra.get(" ".join(args), []), flag, "bogus")
    assert out.code == 64
    listed = re.findall(r"'([\w-]+)'", out.stderr.split("is not one of", 1)[-1])
    if listed:
        assert "|".join(listed) == choices.strip("[]")


def test_identity_fields_follow_the_profile_schema(agent: Agent) -> None:
    assert agent("identity", "bootstrap").code == 0
    unknown = agent("identity", "set", "agent", "favourite_color", "blue")
    assert unknown.code == 1 and "known fields are name, emoji" in unknown.stderr
    assert agent("identity", "set", "agent", "extra.favourite_color", "blue").code == 0
    zone = agent("identity", "set", "user", "timezone", "Mars/Olympus")
    assert zone.code == 1 and "IANA" in zone.stderr
    assert agent("identity", "set", "user", "timezone", "Europe/Berlin").code == 0
    shown = json.loads(agent("identity", "show", "--json").stdout)
    assert shown["user"]["timezone"] == "Europe/Berlin"
    assert shown["agent"]["extra.favourite_color"] == "blue"


def test_a_second_undo_says_there_is_nothing_to_undo(agent: Agent) -> None:
    assert agent("memory", "log", "before").code == 0
    target = json.loads(agent("checkpoint", "create", "--json").stdout)["id"]
    assert agent("memory", "log", "after").code == 0
    assert agent("checkpoint", "rollback", target, "--yes").code == 0
    assert agent("checkpoint", "undo").code == 0
    before = agent.image()
    again = agent("checkpoint", "undo")
    assert again.code == 1 and "nothing to undo" in again.stderr and "--yes" in again.stderr
    assert agent.image() == before
    assert agent("checkpoint", "undo", "--yes").code == 0  # redo, when asked
    day = json.loads(agent("memory", "day", "--json").stdout)
    assert [d["content"] for d in day] == ["before"]


def test_counts_agree_with_their_nouns(agent: Agent) -> None:
    from aether.interfaces.common import plural

    assert [plural(n, "journal entry") for n in (0, 1, 2)] == [
        "0 journal entries",
        "1 journal entry",
        "2 journal entries",
    ]
    assert plural(1200, "message") == "1,200 messages" and plural(2, "day") == "2 days"
    target = json.loads(agent("checkpoint", "create", "--json").stdout)["id"]
    assert agent("memory", "log", "one change").code == 0
    shown = agent("checkpoint", "show", target).stdout
    assert "1 journal entry" in shown and "1 journal entries" not in shown
    diff = agent("checkpoint", "diff", target).stdout
    assert "1 journal entry" in diff and "1 entries" not in diff


def test_checkpoint_ids_are_whole_in_a_narrow_terminal(agent: Agent) -> None:
    ids = [json.loads(agent("checkpoint", "create", "--json").stdout)["id"] for _ in range(2)]
    listed = agent("checkpoint", "list", COLUMNS="80")
    assert listed.code == 0
    assert all(cid in listed.stdout for cid in ids), listed.stdout


def test_an_ambiguous_prefix_names_the_candidates_it_shows(agent: Agent) -> None:
    ids = [json.loads(agent("checkpoint", "create", "--json").stdout)["id"] for _ in range(7)]
    common = ids[0][:6]
    if not all(i.startswith(common) for i in ids):  # created within the same ~minute
        pytest.skip("the checkpoints straddle a prefix boundary; nothing ambiguous to show")
    out = agent("checkpoint", "show", common)
    assert out.code == 1
    assert "matches 7 checkpoints, the newest 5: " in out.stderr
    assert all(i in out.stderr for i in ids[-5:]) and ids[0] not in out.stderr


def test_times_for_people_are_in_the_operators_zone(agent: Agent) -> None:
    assert agent("identity", "bootstrap").code == 0
    assert agent("memory", "log", "zoned").code == 0
    entry = json.loads(agent("memory", "day", "--json").stdout)[0]
    header, row = agent("memory", "day").stdout.splitlines()
    assert header.split() == ["id", "when", "source", "tags", "content"]
    assert row.startswith(entry["id"] + "  ") and " UTC  " in row, row
    assert agent("identity", "set", "user", "timezone", "Asia/Kolkata").code == 0
    from datetime import datetime
    from zoneinfo import ZoneInfo

    local = datetime.fromtimestamp(entry["timestamp"], tz=ZoneInfo("Asia/Kolkata"))
    shown = agent("memory", "day").stdout
    assert f"{local:%Y-%m-%d %H:%M} IST" in shown, shown
    assert json.loads(agent("memory", "day", "--json").stdout)[0] == entry  # JSON unchanged


def test_ctrl_c_during_an_import_says_what_was_done_and_how_to_finish(
    agent: Agent, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import sys
    import threading

    from aether.testing.model import ScriptedOpenAI

    writing = threading.Event()
    interrupted = threading.Event()
    batches: list[int] = []

    def slowly(texts: list[str]) -> None:  # from the second batch on, held until Ctrl-C
        batches.append(len(texts))
        if len(batches) >= 2:  # a batch written, the next under way: a few batches in
            writing.set()
            interrupted.wait(30)  # the import cannot finish before it is interrupted

    lines = 3_000
    path = tmp_path / "notes.jsonl"
    with path.open("w") as out:
        for n in range(lines):
            note = {"kind": "longterm", "content": f"harbour note {n}", "tags": ["bulk"]}
            out.write(json.dumps(note) + "\n")
    with ScriptedOpenAI(dims=16, on_embed=slowly) as server:
        env = {
            **agent.env,
            "AETHER_EMBEDDING__PROVIDER": "openai",
            "AETHER_EMBEDDING__BASE_URL": server.base_url,
            "AETHER_EMBEDDING__API_KEY": "test",
            "AETHER_EMBEDDING__MODEL": "scripted",
            "AETHER_EMBEDDING__DIMS": "16",
        }
        importing = subprocess.Popen(
            [sys.executable, "-m", "aether", "memory", "import", str(path)],
            env=env,
            # as from a shell: a test worker may ignore SIGINT, and a child inherits that
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert writing.wait(60), "the import never reached its writes"
        importing.send_signal(signal.SIGINT)  # timed by the batches, not by the clock
        interrupted.set()
        out, err = importing.communicate(timeout=60)
        assert importing.returncode == 130, (out, err)
        assert err.startswith("error: interrupted (Ctrl-C)") and len(err.splitlines()) == 1
        assert "run the same `aether memory import` again to finish" in err
        server.on_embed = None
        again = subprocess.run(
            [sys.executable, "-m", "aether", "--json", "memory", "import", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["imported"] + report["duplicates"] == lines and report["duplicates"] > 0
    assert report["checkpoint"]  # a records import takes a checkpoint first, too


def test_every_error_is_one_lowercase_error_line(agent: Agent) -> None:
    import socket

    usage = agent("erase", "--no-such-option")
    assert usage.code == 64 and "error: No such option" in usage.stderr
    assert "Error:" not in usage.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        taken = agent("console", "--port", str(port))
    assert taken.code == 1 and taken.stderr.startswith("error: port")
    assert "is in use" in taken.stderr and "console at" not in taken.stderr
    assert len(taken.stderr.strip().splitlines()) == 1


def test_an_erasure_is_counted_alike_in_its_dry_run_run_and_log(agent: Agent) -> None:
    for text in ("Olga Ivanova called about INV-7731", "Olga Ivanova prefers email"):
        assert agent("memory", "log", text).code == 0
    assert agent("remember", "Olga Ivanova lives in Riga").code == 0
    planned = agent("erase", "Olga Ivanova", "--dry-run")
    said = planned.stdout.strip().splitlines()[-1].removeprefix("would erase: ")
    assert said.startswith("5 items removed, 0 collections redacted"), planned.stdout
    done = agent("erase", "Olga Ivanova", "--yes")
    run_line = done.stdout.strip().splitlines()[-1]
    assert done.code == 0 and f": {said}, " in run_line and "journal entries redacted" in run_line
    run_said = run_line.split(": ", 1)[1].split("; files")[0]
    log = agent("erase", "--log").stdout.strip().splitlines()
    assert len(log) == 1 and run_said in log[0]
    assert re.match(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} \w+  ", log[0]), log[0]  # its time first


def test_search_explains_itself_for_people_and_programs(agent: Agent) -> None:
    assert agent("memory", "log", "deployed v2 to the NAS in the attic").code == 0
    shown = agent("memory", "search", "what did we deploy to the NAS?", "--explain")
    header = shown.stdout.splitlines()[0].split()
    assert shown.code == 0 and header[2:6] == ["text#", "vector#", "similarity", "coverage"]
    assert "passes" in shown.stdout
    found = json.loads(agent("memory", "search", "deploy NAS", "--json").stdout)
    assert found[0]["signals"]["text_rank"] == 1 and found[0]["signals"]["floor"] == "passes"


def test_send_reads_stdin_up_to_the_inbox_limit(agent: Agent) -> None:
    import subprocess
    import sys

    too_big = subprocess.run(
        [sys.executable, "-m", "aether", "send", "-"],
        input="x" * (1024 * 1024 + 1),
        env=agent.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert too_big.returncode == 1 and "over 1048576 bytes" in too_big.stderr
    assert "nothing was sent" in too_big.stderr
    empty = subprocess.run(
        [sys.executable, "-m", "aether", "send", "-"],
        input="  \n",
        env=agent.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert empty.returncode == 1 and "the message is empty" in empty.stderr

"""Every command's ``--help`` keeps every option and argument it listed before the CLI was
built from the operations' models (issue 66): a snapshot taken before the change.

A command may gain options; losing one breaks a user's script, so this fails. The
snapshot is regenerated only on purpose: ``python -m tests.test_cli_help_snapshot``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from aether.interfaces.cli import app
from aether.interfaces.cli_erase import FLAGS_FORM
from tests.test_cli_faces import _commands

SNAPSHOT = Path(__file__).parent / "snapshots" / "cli_options.json"


def listed() -> dict[str, list[str]]:
    """``aether memory log`` -> its arguments (upper case) and every spelling of its options.

    A group that still reads an earlier one-command form (``aether erase TEXT --yes``)
    lists that form's options under its own path, as its help does.
    """
    root = typer.main.get_command(app)
    found: dict[str, list[str]] = {}
    for path, command in _commands(root, "aether"):
        group_path, _, name = path.rpartition(" ")
        if name == FLAGS_FORM and command.hidden:
            path = group_path
        names: set[str] = set()
        for param in command.params:
            if param.param_type_name == "argument":
                names.add(str(param.name).upper())
            else:
                names.update([*param.opts, *param.secondary_opts])
        found[path] = sorted(names)
    return found


def test_every_command_keeps_every_option_it_listed() -> None:
    before: dict[str, list[str]] = json.loads(SNAPSHOT.read_text())
    now = listed()
    lost = {
        path: sorted(set(options) - set(now.get(path, [])))
        for path, options in before.items()
        if set(options) - set(now.get(path, []))
    }
    assert lost == {}, f"options (or whole commands) gone from the CLI: {lost}"


def test_help_prints_every_listed_option() -> None:
    """The snapshot is of what ``--help`` prints, not only of what the parser accepts."""
    runner = CliRunner()
    before: dict[str, Any] = json.loads(SNAPSHOT.read_text())
    for path in ("aether memory search", "aether erase", "aether checkpoint create"):
        out = runner.invoke(app, [*path.split()[1:], "--help"], terminal_width=200)
        assert out.exit_code == 0, out.output
        for option in before[path]:
            if option.startswith("-"):
                assert option in out.output, (path, option)


if __name__ == "__main__":
    SNAPSHOT.parent.mkdir(exist_ok=True)
    SNAPSHOT.write_text(json.dumps(listed(), indent=1, sort_keys=True) + "\n")

"""Every CLI command is a face over an operation, as MCP's tools and the console's pages are.

A command's body (or a helper of its own module that it calls) runs its operation
through ``aether.interfaces.common.call`` (or ``call_in_zone``): none talks to Redis or
builds a part itself. The few that are faces of something else are named here, each
with why; a new command that talks to the parts directly fails this test.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import typer

from aether.interfaces.cli import app
from aether.interfaces.commands import DECLARED, offered_parameters
from aether.operations import registry

CALLS = re.compile(r"\b(call|call_in_zone)\(")
NAMES = re.compile(r"\b(_?[a-z][a-z0-9_]*)\(")

FACES_OF_SOMETHING_ELSE = {
    "aether up": "the daemon itself: it serves the operations",
    "aether mcp": "the MCP server: it serves the operations",
    "aether console": "the console: it serves the operations",
    "aether status": "reads the health the daemon publishes; never starts Redis",
    "aether send": "a message to the running daemon, through its inbox",
    "aether config show": "the settings of this process; no Redis",
    "aether redis start": "the embedded Redis server process",
    "aether redis stop": "the embedded Redis server process",
    "aether redis status": "the embedded Redis server process",
    "aether redis cli": "runs redis-cli against the server",
    "aether redis url": "prints how to reach the server",
}


def _commands(group: Any, path: str) -> Iterator[tuple[str, Any]]:
    for name in group.list_commands(None):
        command = group.get_command(None, name)
        if hasattr(command, "list_commands"):
            yield from _commands(command, f"{path} {name}")
        elif command is not None:
            yield f"{path} {name}", command


def every_command() -> dict[str, Callable[..., Any]]:
    """``aether memory log`` -> the function typer calls, for every command."""
    root = typer.main.get_command(app)
    return {path: inspect.unwrap(command.callback) for path, command in _commands(root, "aether")}


def calls_an_operation(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``, or a function of its own module that it calls, runs ``call``."""
    source = inspect.getsource(fn)
    if CALLS.search(source):
        return True
    module = inspect.getmodule(fn)
    for name in set(NAMES.findall(source)):
        helper = getattr(module, name, None)
        own = inspect.isfunction(helper) and helper.__module__ == fn.__module__
        if own and helper is not fn and CALLS.search(inspect.getsource(helper)):
            return True
    return False


def test_every_command_runs_an_operation() -> None:
    commands = every_command()
    assert len(commands) > 70
    direct = sorted(
        path
        for path, fn in commands.items()
        if path not in FACES_OF_SOMETHING_ELSE and not calls_an_operation(fn)
    )
    assert direct == []


def test_the_exceptions_are_real_commands_that_run_no_operation() -> None:
    commands = every_command()
    for path in FACES_OF_SOMETHING_ELSE:
        assert path in commands, f"{path} is no longer a command: drop it from the list"
        assert not calls_an_operation(commands[path]), f"{path} now runs an operation"


def test_the_check_sees_a_command_that_talks_to_redis_itself() -> None:
    def sneaky(ctx: Any) -> None:
        client: Any = None
        client.delete("aether:longterm:x")

    def honest(ctx: Any) -> None:
        call(ctx, None, None)

    def call(*args: Any) -> None:
        return None

    assert not calls_an_operation(sneaky)
    assert calls_an_operation(honest)


def test_every_operation_is_reachable_from_the_cli_or_mcp() -> None:
    """No operation is orphaned: each is a CLI command's, an MCP tool, or both."""
    commands = every_command().values()
    declared = {DECLARED[fn].operation.name for fn in commands if fn in DECLARED}
    modules = {inspect.getmodule(fn) for fn in commands if fn not in DECLARED}
    sources = "\n".join(inspect.getsource(m) for m in modules if m is not None)
    for name, op in registry().items():
        assert op.mcp or name in declared or re.search(rf"\b{name}\b", sources), name


def test_a_declared_command_offers_exactly_its_models_fields() -> None:
    """Options, their help and their bounds come from the arguments model, never restated."""
    root = typer.main.get_command(app)
    checked = 0
    for path, command in _commands(root, "aether"):
        declaration = DECLARED.get(inspect.unwrap(command.callback))
        if declaration is None:
            continue
        checked += 1
        fields = {p.name: p for p in offered_parameters(declaration.operation.arguments)}
        offered = set(fields) - set(declaration.fixed)
        by_name = {v: k for k, v in declaration.positional.items()}
        seen: dict[str, Any] = {}
        for param in command.params:
            if param.name == "json_":
                continue
            field = by_name.get(param.name) or next(
                (f for f, p in fields.items() if p.cli.argument == param.name), param.name
            )
            seen[field] = param
        assert set(seen) == offered, path
        for field, param in seen.items():
            if param.param_type_name == "option" and fields[field].cli.parser is None:
                assert param.help == fields[field].description, (path, field)
                bounds = (param.min, param.max)
                assert bounds == (fields[field].low, fields[field].high), (path, field)
    assert checked > 30

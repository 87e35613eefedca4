"""The ``aether`` command line (typer).

Exit codes: 0 success, 1 error (one line on stderr, or ``{"error": ...}`` with --json),
2 no results, 64 usage error (EX_USAGE: an unknown command or option, a value out of
range). No traceback reaches a user: :class:`AetherGroup` turns every exception into the
one-line error, logs the traceback to the log file, and prints it only with ``--debug``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from types import UnionType
from typing import Annotated, Any, Literal, NoReturn, Union, get_args, get_origin

import typer
from typer._click.utils import make_default_short_help
from typer.core import TyperArgument, TyperGroup

try:  # typer >= 0.22 vendors click as typer._click; older versions use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors  # type: ignore[no-redef]

from aether.interfaces.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    AppState,
    JsonOpt,
    emit,
    fail,
    group,
    json_requested,
    state,
    wants_json,
)

PRIVATE_UMASK = 0o077  # aether.files.PRIVATE_UMASK, without importing the file helpers


@dataclass(frozen=True)
class Entry:
    """One top-level command, named without importing the module that defines it.

    ``attribute`` is a ``typer.Typer`` group or a command function in ``module``; the
    module is imported only when its command runs (or its own help is asked for), so
    ``aether --help`` and each command load only what they use. ``help`` is the line
    ``aether --help`` lists; a test checks it against the command's own help.
    """

    name: str
    module: str
    attribute: str
    help: str


_CLI = "aether.interfaces.cli"
_P = "aether.interfaces."
COMMANDS: tuple[Entry, ...] = (
    Entry(
        "up", _P + "cli_daemon", "up", "Run the agent until Ctrl-C (inbox, heartbeat, maintenance)."
    ),
    Entry("status", _P + "cli_daemon", "status", "Whether the daemon is up, and how it is doing."),
    Entry(
        "send", _P + "cli_daemon", "send", "Send the running agent a message and print its reply."
    ),
    Entry(
        "mcp",
        _P + "cli_daemon",
        "mcp",
        "Serve the MCP tools over stdio (for an MCP client to launch).",
    ),
    Entry("remember", _P + "cli_beliefs", "remember", "Log TEXT and fold its beliefs into memory."),
    Entry(
        "questions",
        _P + "cli_beliefs",
        "questions",
        "Open questions: beliefs held with confidence under 0.5.",
    ),
    Entry(
        "erase",
        _P + "cli_erase",
        "app",
        "Erase a subject from every store: state, history, caches, archive, Redis's files.",
    ),
    Entry(
        "console",
        _P + "cli_console",
        "console",
        "Serve the operator console on http://127.0.0.1:8765/ (with or without the daemon).",
    ),
    Entry("config", _CLI, "config_app", "The effective configuration."),
    Entry("redis", _P + "cli_redis", "app", "The Redis server (embedded, or AETHER_REDIS_URL)."),
    Entry(
        "checkpoint",
        _P + "cli_checkpoint",
        "app",
        "Checkpoints: create, list, show, diff, rollback, undo, prune, fork.",
    ),
    Entry(
        "archive",
        _P + "cli_checkpoint",
        "archive_app",
        "The PostgreSQL archive (AETHER_POSTGRES_DSN).",
    ),
    Entry(
        "journal",
        _P + "cli_journal",
        "app",
        "The journal: verify its hash chain and the state against it.",
    ),
    Entry(
        "identity",
        _P + "cli_identity",
        "app",
        "Identity: bootstrap from markdown, show, set, prompt.",
    ),
    Entry(
        "memory",
        _P + "cli_memory",
        "app",
        "Memory: daily logs, long-term, search, chat, import, export.",
    ),
    Entry("context", _P + "cli_context", "app", "The context layer: preview an assembled context."),
    Entry("maintenance", _P + "cli_daemon", "maintenance_app", "The maintenance engine."),
    Entry(
        "belief",
        _P + "cli_beliefs",
        "belief_app",
        "Beliefs: confidence, decay, reinforcement, supersession.",
    ),
    Entry(
        "task",
        _P + "cli_tasks",
        "task_app",
        "Tasks, optionally towards goals (open ones feed the heartbeat).",
    ),
    Entry("goal", _P + "cli_tasks", "goal_app", "Goals: larger objectives that tasks roll up to."),
    Entry(
        "repo",
        _P + "cli_repo",
        "repo_app",
        "Repository intelligence: file map, imports, dependents.",
    ),
    Entry(
        "graph",
        _P + "cli_repo",
        "graph_app",
        "The entity graph: find entities, expand around them.",
    ),
    Entry(
        "tools",
        _P + "cli_registry",
        "tools_app",
        "The tool registry: registered tools and their versions.",
    ),
    Entry(
        "ledger",
        _P + "cli_registry",
        "ledger_app",
        "The agent ledger: actions, tool calls, LLM calls and cost.",
    ),
    Entry(
        "approvals",
        _P + "cli_approvals",
        "approvals_app",
        "Tool calls waiting for the operator: list, approve, deny.",
    ),
)
_ENTRIES = {entry.name: entry for entry in COMMANDS}


def load_command(entry: Entry) -> Any:
    """The click command of one table entry, its module imported now."""
    target = getattr(importlib.import_module(entry.module), entry.attribute)
    command: Any
    if isinstance(target, typer.Typer):
        command = typer.main.get_group(target)
    else:
        holder = typer.Typer(rich_markup_mode=None)
        holder.command(entry.name)(target)
        command = typer.main.get_group(holder).commands[entry.name]
    command.name = entry.name
    _name_metavars(command)
    return command


class AetherGroup(TyperGroup):
    """The root group: every way out of the CLI is one line (or one JSON object) + exit code."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> NoReturn:
        """Run the CLI; exit with its code, every error as one line (64: a usage error)."""
        argv = list(sys.argv[1:] if args is None else args)
        as_json = "--json" in argv
        json_requested.set(as_json)
        try:
            _name_metavars(self)
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as e:
            typer.echo(e.ctx.get_help() if e.ctx else e.format_message())
            sys.exit(EXIT_OK)
        except click_errors.UsageError as e:
            _usage_error(e, as_json)
        except click_errors.ClickException as e:
            _error_exit(e.format_message(), as_json)
        except typer.Abort:
            _error_exit("aborted; nothing changed", as_json)
        except Exception as e:  # the one place every bug becomes one line
            from aether.errors import AetherError, describe, error_code

            if isinstance(e, AetherError):  # raised outside a command body (settings, start-up)
                _error_exit(str(e), as_json, error_code(e)[0])
            import structlog

            from aether.logging import routed

            log = structlog.get_logger("aether.cli")
            if routed():  # else it failed before logging was set up
                log.error("unexpected error", exc_info=True, argv=argv[:20], file_only=True)
            if "--debug" in argv:
                traceback.print_exc()
            hint = "" if "--debug" in argv else " (the traceback is in the log; --debug shows it)"
            _error_exit(describe(e) + hint, as_json)
        sys.exit(code if isinstance(code, int) else EXIT_OK)

    def list_commands(self, ctx: Any) -> list[str]:
        """Every top-level command, in the table's order."""
        return [entry.name for entry in COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The named command, its module imported on first use."""
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in _ENTRIES:
            command = self.commands[cmd_name] = load_command(_ENTRIES[cmd_name])
        return command

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """List the commands from the table, without importing a single one."""
        rows = [(entry.name, entry.help) for entry in COMMANDS]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _name_metavars(command: Any) -> None:
    """Give every value a readable placeholder in help: ``--since SINCE``, ``--kind [a|b]``.

    Also lists each command by its first sentence whole, where click cuts it to fit.
    typer shows Python types (``<str>``, ``<list[str]>``, ``<bool>``) by default, and a
    required argument as ``{NAME}`` in the usage line; an argument here reads ``NAME``
    (``[NAME]`` when optional), with its choices when it has a fixed set.
    """
    for param in getattr(command, "params", []):
        if param.metavar is not None or getattr(param, "is_flag", False):
            continue
        choices = _choices(param)
        listed = f"[{'|'.join(map(str, choices))}]" if choices else None
        if isinstance(param, TyperArgument):
            _plain_argument(param, listed)
            continue
        param.metavar = listed or (param.name or "value").upper()
    for sub in dict(getattr(command, "commands", {})).values():
        if sub.help and not sub.short_help:
            # a group lists each command by its whole first sentence, wrapped, never cut
            sub.short_help = make_default_short_help(sub.help, max_length=10_000)
        _name_metavars(sub)


def _plain_argument(argument: TyperArgument, choices: str | None) -> None:
    name = argument.metavar = (argument.name or "value").upper()
    usage = name if argument.required else f"[{name}]"
    suffix = "..." if argument.nargs != 1 else ""
    # per instance: these are typer's display hooks, not click's public API
    argument.display_type_rich = lambda ctx: choices  # type: ignore[method-assign]
    argument._usage_display_name = lambda: usage + suffix  # type: ignore[method-assign]


def _choices(param: Any) -> list[str] | None:
    """The values an option accepts, when they are a fixed set (an Enum or a Choice)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [str(member.value) for member in annotation]
    while get_origin(annotation) in (Union, UnionType):  # Optional[...] around the choices
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is Literal:
        return [str(value) for value in get_args(annotation)]
    choices = getattr(getattr(param, "type", None), "choices", None)
    return [str(c) for c in choices] if choices else None


def _usage_error(error: click_errors.UsageError, as_json: bool) -> NoReturn:
    """The usage line, where to find help, then ``error: ...`` as every other error."""
    if as_json:
        print(json.dumps({"error": {"code": "usage", "message": error.format_message()}}))
        sys.exit(EXIT_USAGE)
    ctx = error.ctx
    if ctx is not None:
        typer.echo(ctx.get_usage(), err=True)
        typer.echo(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.\n", err=True)
    _error_exit(error.format_message(), as_json, "usage", EXIT_USAGE)


def _error_exit(
    message: str, as_json: bool, kind: str = "error", code: int = EXIT_ERROR
) -> NoReturn:
    try:
        fail(message, as_json, code, kind)
    except typer.Exit as done:
        sys.exit(done.exit_code)


app = typer.Typer(
    name="aether",
    cls=AetherGroup,
    help="A Redis Stack-native memory runtime for long-running autonomous agents.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
config_app = group("The effective configuration.")

# aether.config.LogFormat, spelled here so that the table above loads without the settings
LogFormatName = Literal["auto", "console", "json"]


@app.callback()
def root(
    ctx: typer.Context,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON (every command).")] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Print the traceback of an unexpected error.")
    ] = False,
    log_format: Annotated[
        LogFormatName | None,
        typer.Option(
            "--log-format",
            help="Log lines on stderr: console (for people), json, or auto (console on a "
            "terminal, else json; AETHER_LOG__FORMAT).",
        ),
    ] = None,
) -> None:
    """Build the settings once and configure logging."""
    import structlog

    from aether.config import RENAMED_UNTIL, deprecated_in_use, load_settings
    from aether.errors import AetherError
    from aether.logging import configure_logging

    try:
        settings = load_settings()
    except AetherError as e:
        fail(str(e), json_ or json_requested.get(), kind="config")
    # the daemon in the foreground says what it does, unless the operator chose a level
    chosen = "console_level" in settings.log.model_fields_set
    long_running = ctx.invoked_subcommand == "up" and not chosen
    configure_logging(
        settings, console_level="INFO" if long_running else None, log_format=log_format
    )
    for old, new in deprecated_in_use():
        structlog.get_logger("aether.config").warning(
            f"{old} is deprecated: use {new} (the old name is read until aether {RENAMED_UNTIL})"
        )
    ctx.obj = AppState(settings=settings, json=json_ or json_requested.get())


@config_app.command("show")
def config_show(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Print the effective configuration, secrets masked."""
    from aether.errors import IdentityError
    from aether.interfaces import cli_identity

    st = state(ctx)
    data = st.settings.masked()
    with contextlib.suppress(IdentityError):  # no default shipped: leave it unset
        data["identity_dir"] = str(cli_identity.identity_dir(st))  # unset: the default, shown

    def render() -> None:
        for key, value in data.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    print(f"{key}.{sub} = {v}")
            else:
                print(f"{key} = {value}")

    emit(data, wants_json(ctx, json_), render)


def main() -> None:
    """Console-script entry point: everything it writes is owner-only (umask 077)."""
    os.umask(PRIVATE_UMASK)
    app()


if __name__ == "__main__":
    main()

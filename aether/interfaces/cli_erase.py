"""``aether erase ...``: remove a subject from every store, history included, and prove it.

A face over ``aether.operations.erasure``; operator only (never an agent tool). Each mode
is a subcommand: ``run``, ``preview``, ``verify``, ``log``, ``resume``. The one-command
form of earlier releases (``aether erase TEXT --yes``, ``--dry-run``, ``--verify TEXT``,
``--log``, ``--resume``) is read until aether 0.3.0 (:data:`FLAGS_UNTIL`): an invocation
that names no subcommand goes to it.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer
from typer.core import TyperCommand

from aether.interfaces import common as cli
from aether.interfaces.commands import Out, command
from aether.interfaces.common import EXIT_ERROR, EXIT_USAGE, JsonOpt, about, arguments, call
from aether.operations import erasure as ops

FLAGS_UNTIL = "0.3.0"
"""The release that removes the one-command form (``aether erase TEXT --yes`` and its flags)."""
FLAGS_FORM = "flags"
"""The hidden subcommand that reads the one-command form."""
SUBCOMMANDS = ("run", "preview", "verify", "log", "resume")


class EraseGroup(cli.OrderedGroup):
    """``aether erase SUBCOMMAND``, and the one-command form of earlier releases.

    An invocation whose first word is no subcommand (``aether erase "Olga" --yes``,
    ``aether erase --log``) is read by the hidden :data:`FLAGS_FORM` command; its help
    lists those flags under the subcommands, so ``--help`` still shows every option.
    """

    order = SUBCOMMANDS

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Route the one-command form to its hidden command."""
        first = args[0] if args else None
        if first is not None and first not in self.commands and first not in ctx.help_option_names:
            args = [FLAGS_FORM, *args]
        parsed: list[str] = super().parse_args(ctx, args)
        return parsed

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The command, named as the user typed it (the one-command form: no name)."""
        name, command, rest = super().resolve_command(ctx, args)
        return ("" if name == FLAGS_FORM else name), command, rest

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The group's help, then the options of the one-command form."""
        super().format_help(ctx, formatter)
        flags_form = self.commands[FLAGS_FORM]
        records = [
            record
            for param in flags_form.get_params(ctx)
            if (record := param.get_help_record(ctx)) is not None
        ]
        heading = f"Options of the one-command form (read until aether {FLAGS_UNTIL})"
        with formatter.section(heading):
            formatter.write_text(
                "aether erase [TEXT] [--id ID] [--dry-run] [--yes] | --verify TEXT | --log | "
                "--resume [TEXT]: run, preview, verify, log and resume."
            )
            formatter.write_dl(records)


class _InGroupsName(typer.Context):
    """The one-command form's context: its path is the group's (``aether erase``)."""

    @property
    def command_path(self) -> str:
        """``aether erase``, as the user typed it."""
        return self.parent.command_path if self.parent is not None else "aether erase"


class FlagsCommand(TyperCommand):
    """The hidden command of the one-command form (usage lines name ``aether erase``)."""

    context_class = _InGroupsName


app = cli.group(
    "Erase a subject from every store: state, history, caches, archive, Redis's files.",
    cls=EraseGroup,
)


def _print_resolved(result: dict[str, Any]) -> None:
    resolved = result.get("resolved")
    if not resolved:
        return
    if resolved["aliases"]:
        print(f"erasing {resolved['text']!r} and its aliases: {', '.join(resolved['aliases'])}")
    for warning in resolved["warnings"]:
        print(f"warning: {warning}")


def _print_plan(plan: dict[str, Any]) -> None:
    _print_resolved(plan)
    if not plan["total"]:
        print("nothing holds that text; nothing would change")
        return
    for tier, items in sorted(plan["items"].items()):
        print(f"{tier} ({len(items)})")
        for item in items:
            print(f"  {item['key']}  {item['what']}  {item['excerpt']}")
    if plan["history_only"]:
        print(f"history only ({len(plan['history_only'])}): gone now, still in the journal")
        for key in plan["history_only"]:
            print(f"  {key}")
    if plan["elsewhere"]:
        print(f"also rewritten ({len(plan['elsewhere'])}): history, streams, caches, files")
        for place in plan["elsewhere"]:
            print(f"  {place['store']}: {place['place']}  {place['detail']}".rstrip())
    print(f"would erase: {ops.describe_counts(plan['counts'])}")


def _print_report(report: dict[str, Any]) -> None:
    _print_resolved(report)
    print(
        f"erasure {report['id']}: {ops.describe_counts(report['counts'])}; "
        f"files: {report['files']}; checkpoint before it: {report['checkpoint']}"
    )


TextArg = Annotated[
    str | None, typer.Argument(help=about(ops.EraseArgs, "text"), show_default=False)
]
IdOpt = Annotated[str | None, typer.Option("--id", metavar="ID", help=about(ops.EraseArgs, "id"))]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")]


@app.command(FLAGS_FORM, hidden=True, cls=FlagsCommand)
def erase(
    ctx: typer.Context,
    text: TextArg = None,
    item: IdOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would go, by tier; change nothing.")
    ] = False,
    yes: YesOpt = False,
    log: Annotated[bool, typer.Option("--log", help="List past erasures.")] = False,
    verify: Annotated[
        str | None,
        typer.Option(
            "--verify",
            metavar="TEXT",
            help="Report everywhere this text is still found (exit 0: nowhere, 1: somewhere).",
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Finish an erasure a crash cut short (give TEXT too only when asked to).",
        ),
    ] = False,
    json_: JsonOpt = False,
) -> None:
    """Erase a subject (the one-command form: aether erase run, preview, verify, log, resume).

    Operator only. A checkpoint is taken first, and rollbacks to any checkpoint leave the
    erased items gone. The record keeps a salted hash of the text, never the text.
    """
    as_json = cli.wants_json(ctx, json_)
    target = (text is not None or item) and not resume
    modes = sum(bool(m) for m in (log, verify is not None, resume, target))
    if modes != 1 or (resume and item):
        cli.fail(
            "give one of: TEXT, --id ID, --log, --verify TEXT, --resume [TEXT]",
            as_json,
            code=EXIT_USAGE,
            kind="usage",
        )
    out: Out[Any] = Out(as_json, ZoneInfo("UTC"))
    if log:
        found_log, zone = cli.call_in_zone(ctx, ops.erase_log, ops.LogArgs())
        _logged(found_log, Out(as_json, zone))
    elif verify is not None:
        _verified(call(ctx, ops.erase_verify, arguments(ctx, ops.VerifyArgs, text=verify)), out)
    elif resume:
        _resumed(call(ctx, ops.erase_resume, arguments(ctx, ops.ResumeArgs, text=text)), out)
    elif dry_run:
        args = arguments(ctx, ops.EraseArgs, text=text, id=item, dry_run=True)
        _planned(call(ctx, ops.erase, args), out)
    else:
        _erase(ctx, text, item, yes, as_json)


@app.command("run")
def erase_run(
    ctx: typer.Context,
    text: TextArg = None,
    item: IdOpt = None,
    yes: YesOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Erase TEXT (or one item, --id) everywhere, after a checkpoint; asks first.

    Rollbacks to any checkpoint leave the erased items gone. The record keeps a salted
    hash of the text, never the text.
    """
    as_json = cli.wants_json(ctx, json_)
    if (text is None) == (item is None):
        cli.fail("give TEXT or --id ID", as_json, code=EXIT_USAGE, kind="usage")
    _erase(ctx, text, item, yes, as_json)


def _erase(
    ctx: typer.Context, text: str | None, item: str | None, yes: bool, as_json: bool
) -> None:
    if not yes:
        question = "Erase it and every trace of it?"
        if sys.stdin.isatty():  # the plan (a scan of everything) only when someone reads it
            plan = call(
                ctx, ops.erase, arguments(ctx, ops.EraseArgs, text=text, id=item, dry_run=True)
            )
            if not as_json:
                _print_plan(plan)
            question = f"Erase: {ops.describe_counts(plan['counts'])}, and every trace of it?"
        cli.confirm(question, yes, as_json)
    report = call(ctx, ops.erase, arguments(ctx, ops.EraseArgs, text=text, id=item))
    cli.emit(report, as_json, lambda: _print_report(report))


@command(app, "preview", ops.erase, fixed={"dry_run": True}, positional={"text": "text"})
def _planned(plan: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """List what erasing TEXT (or --id ID) would remove, by tier; change nothing."""
    out.emit(plan, lambda: _print_plan(plan))


@command(app, "verify", ops.erase_verify, positional={"text": "text"})
def _verified(found: ops.Verification, out: Out[ops.Verification]) -> None:
    """Report everywhere TEXT is still found (exit 0: nowhere, 1: somewhere)."""
    out.emit(found, lambda: _print_verification(found.found))
    if not found.clean:
        raise typer.Exit(EXIT_ERROR)


@command(app, "log", ops.erase_log, zone=True)
def _logged(found: ops.ErasureLog, out: Out[ops.ErasureLog]) -> None:
    """List past erasures, and the one a crash cut short."""
    records, pending = found.erasures, found.pending
    out.emit(records, lambda: _print_log(records, out.zone, pending))


@command(app, "resume", ops.erase_resume, positional={"text": "text"})
def _resumed(resumed: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """Finish an erasure a crash cut short (give TEXT too only when asked to)."""
    out.emit(
        resumed,
        lambda: (
            _print_report(resumed) if resumed["resumed"] else print("no erasure was interrupted")
        ),
    )


def _print_log(
    records: list[dict[str, Any]], zone: ZoneInfo, pending: dict[str, Any] | None = None
) -> None:
    if pending is not None:
        print(
            f"erasure {pending['id']} is pending (phase {pending['phase']}, writes "
            f"{pending['writes']}); finish it with: {pending['resolve']}"
        )
    if not records:
        print("no erasures")
        return
    for r in records:
        print(
            f"{cli.local_time(r['at'] / 1000, zone)}  {r['id']}  by {r['actor']}  "
            f"sha256 {r['text_hash'][:16]}…  {ops.describe_counts(r['counts'])}  "
            f"files: {r['files']}"
        )


def _print_verification(found: list[dict[str, str]]) -> None:
    if not found:
        print("not found anywhere: keys, journal, Redis files, archive, Qdrant")
        return
    for place in found:
        print(f"{place['store']}: {place['place']}  {place['detail']}".rstrip())

"""``aether erase``: remove a subject from every store, history included, and prove it.

A face over ``aether.operations.erasure``; operator only (never an agent tool).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer

from aether.interfaces.common import (
    EXIT_ERROR,
    EXIT_USAGE,
    JsonOpt,
    about,
    arguments,
    call,
    call_in_zone,
    confirm,
    emit,
    fail,
    local_time,
    wants_json,
)
from aether.operations import erasure as ops


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


def erase(
    ctx: typer.Context,
    text: Annotated[
        str | None,
        typer.Argument(help=about(ops.EraseArgs, "text"), show_default=False),
    ] = None,
    item: Annotated[
        str | None, typer.Option("--id", metavar="ID", help=about(ops.EraseArgs, "id"))
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would go, by tier; change nothing.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
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
    """Erase a subject from every store: state, history, caches, archive, Redis's files.

    Operator only. A checkpoint is taken first, and rollbacks to any checkpoint leave the
    erased items gone. The record keeps a salted hash of the text, never the text.
    """
    as_json = wants_json(ctx, json_)
    target = (text is not None or item) and not resume
    modes = sum(bool(m) for m in (log, verify is not None, resume, target))
    if modes != 1 or (resume and item):
        fail(
            "give one of: TEXT, --id ID, --log, --verify TEXT, --resume [TEXT]",
            as_json,
            code=EXIT_USAGE,
            kind="usage",
        )
    if log:
        found_log, zone = call_in_zone(ctx, ops.erase_log, ops.LogArgs())
        records = found_log.erasures
        pending = found_log.pending
        emit(records, as_json, lambda: _print_log(records, zone, pending))
        return
    if verify is not None:
        found = call(ctx, ops.erase_verify, arguments(ctx, ops.VerifyArgs, text=verify))
        emit(found.model_dump(), as_json, lambda: _print_verification(found.found))
        if not found.clean:
            raise typer.Exit(EXIT_ERROR)
        return
    if resume:
        resumed = call(ctx, ops.erase_resume, arguments(ctx, ops.ResumeArgs, text=text))
        emit(
            resumed,
            as_json,
            lambda: (
                _print_report(resumed)
                if resumed["resumed"]
                else print("no erasure was interrupted")
            ),
        )
        return
    if dry_run:
        plan = call(ctx, ops.erase, arguments(ctx, ops.EraseArgs, text=text, id=item, dry_run=True))
        emit(plan, as_json, lambda: _print_plan(plan))
        return
    if not yes:
        question = "Erase it and every trace of it?"
        if sys.stdin.isatty():  # the plan (a scan of everything) only when someone reads it
            plan = call(
                ctx, ops.erase, arguments(ctx, ops.EraseArgs, text=text, id=item, dry_run=True)
            )
            if not as_json:
                _print_plan(plan)
            question = f"Erase: {ops.describe_counts(plan['counts'])}, and every trace of it?"
        confirm(question, yes, as_json)
    report = call(ctx, ops.erase, arguments(ctx, ops.EraseArgs, text=text, id=item))
    emit(report, as_json, lambda: _print_report(report))


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
            f"{local_time(r['at'] / 1000, zone)}  {r['id']}  by {r['actor']}  "
            f"sha256 {r['text_hash'][:16]}…  {ops.describe_counts(r['counts'])}  "
            f"files: {r['files']}"
        )


def _print_verification(found: list[dict[str, str]]) -> None:
    if not found:
        print("not found anywhere: keys, journal, Redis files, archive, Qdrant")
        return
    for place in found:
        print(f"{place['store']}: {place['place']}  {place['detail']}".rstrip())

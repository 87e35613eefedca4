"""``aether checkpoint ...`` and ``aether archive ...``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aether.interfaces.common import (
    JsonOpt,
    arguments,
    call,
    call_in_zone,
    confirm,
    emit,
    group,
    local_time,
    plural,
    print_fields,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.operations import NoArgs, ranges
from aether.operations import archive as archive_ops
from aether.operations import checkpoints as cp_ops

app = group("Checkpoints: create, list, show, diff, rollback, undo, prune.")
archive_app = group("The PostgreSQL archive (AETHER_POSTGRES_DSN).")

IdArg = Annotated[str, typer.Argument(help="Checkpoint id or a unique prefix (>= 6 chars).")]


@app.command()
def create(
    ctx: typer.Context,
    label: Annotated[str, typer.Option("--label", "-l", help="A name for it.")] = "",
    reason: Annotated[str, typer.Option("--reason", help="Why it is taken.")] = "manual",
    json_: JsonOpt = False,
) -> None:
    """Take a checkpoint of the agent's state (O(1), on disk when it returns)."""
    args = arguments(ctx, cp_ops.CreateArgs, label=label, reason=reason)
    cp = call(ctx, cp_ops.checkpoint_create, args)
    emit(cp, wants_json(ctx, json_), lambda: print(cp["id"]))


@app.command("list")
def list_(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """List kept checkpoints, newest first (exit 2 when there are none)."""
    found, zone = call_in_zone(ctx, cp_ops.checkpoint_list, NoArgs())
    columns: list[Column[dict[str, Any]]] = [
        Column("id", lambda c: c["id"], whole=True),
        Column("created", lambda c: local_time(c["created_at"], zone), whole=True),
        Column("reason", lambda c: c["reason"]),
        Column("label", lambda c: c["label"]),
        Column("actor", lambda c: c["actor"]),
    ]
    cps = found.checkpoints
    emit_table(cps, wants_json(ctx, json_), columns, empty="no checkpoints yet")


@app.command()
def show(ctx: typer.Context, checkpoint_id: IdArg, json_: JsonOpt = False) -> None:
    """Show one checkpoint and how many journal entries follow it."""
    args = arguments(ctx, cp_ops.CheckpointIdArgs, id=checkpoint_id)
    cp, zone = call_in_zone(ctx, cp_ops.checkpoint_show, args)
    shown = {
        "id": cp["id"],
        "label": cp["label"],
        "reason": cp["reason"],
        "actor": cp["actor"],
        "created": local_time(cp["created_at"], zone),
        "journal": cp["journal_pos"],
        "since": plural(cp["entries_since"], "journal entry"),
    }
    emit(cp, wants_json(ctx, json_), lambda: print_fields(shown))


_SIGNS = {"created": "+", "modified": "~", "deleted": "-"}
_SHOWN_CHARS = 120  # a value longer than this is cut for people (--json has it whole)


def _short(value: str | None) -> str:
    if value is None:
        return "(none)"
    one_line = value.replace("\n", "\\n")
    return one_line if len(one_line) <= _SHOWN_CHARS else one_line[: _SHOWN_CHARS - 1] + "…"


def _print_change(change: dict[str, Any]) -> None:
    print(f"  {_SIGNS[change['change']]} {change['key']} ({change['type']})")
    for f in change["fields"]:
        print(f"      {f['field']}: {_short(f['before'])} → {_short(f['after'])}")
    for item in change["added"]:
        print(f"      + {_short(item)}")
    for item in change["removed"]:
        print(f"      - {_short(item)}")


@app.command()
def diff(
    ctx: typer.Context,
    checkpoint_id: IdArg,
    keys_only: Annotated[
        bool, typer.Option("--keys-only", help="Which keys changed, without their values.")
    ] = False,
    json_: JsonOpt = False,
) -> None:
    """What changed since a checkpoint, by tier: each key, field by field."""
    args = arguments(ctx, cp_ops.DiffArgs, id=checkpoint_id, keys_only=keys_only)
    d = call(ctx, cp_ops.checkpoint_diff, args)

    def render() -> None:
        cp = d["checkpoint"]
        print(
            f"since {cp['id']} ({cp['label'] or cp['reason']}): "
            f"{plural(d['entries'], 'journal entry')}"
        )
        for tier, changes in sorted(d["tiers"].items()):
            changed = len(changes["created"]) + len(changes["modified"]) + len(changes["deleted"])
            print(
                f"\n{tier}: {plural(changed, 'key')} changed in "
                f"{plural(changes['entries'], 'entry')}"
            )
            for change in d["changes"]:
                if change["tier"] == tier:
                    _print_change(change)

    emit(d, wants_json(ctx, json_), render)


@app.command()
def rollback(
    ctx: typer.Context,
    checkpoint_id: IdArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Return the agent's state to a checkpoint, all or nothing (undo reverses it)."""
    as_json = wants_json(ctx, json_)
    if not yes:  # the question names what it undoes; with --yes nobody reads it
        args = arguments(ctx, cp_ops.CheckpointIdArgs, id=checkpoint_id)
        target = call(ctx, cp_ops.checkpoint_show, args)
        entries = target["entries_since"]
        confirm(f"Roll back {plural(entries, 'journal entry')} to {target['id']}?", yes, as_json)
        checkpoint_id = target["id"]

    result = call(ctx, cp_ops.checkpoint_rollback, cp_ops.RollbackArgs(id=checkpoint_id))
    emit(
        result,
        as_json,
        lambda: print(
            f"rolled back {plural(result['entries_undone'], 'entry')} to {result['target']}; "
            f"'aether checkpoint undo' returns to {result['pre_checkpoint']}"
        ),
    )


@app.command()
def undo(
    ctx: typer.Context,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="After an undo: reverse it (redo the rollback).")
    ] = False,
    json_: JsonOpt = False,
) -> None:
    """Reverse the last rollback (a second undo in a row needs --yes: it redoes)."""
    result = call(ctx, cp_ops.checkpoint_undo, cp_ops.UndoArgs(redo=yes))
    emit(
        result,
        wants_json(ctx, json_),
        lambda: print(f"undone: state is back at {result['target']}"),
    )


@app.command()
def prune(
    ctx: typer.Context,
    keep: Annotated[int | None, ranges.KEEP.option("--keep", help="Checkpoints to keep.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Apply retention now (default: AETHER_CHECKPOINTS__KEEP) and trim the journal."""
    done = call(ctx, cp_ops.checkpoint_prune, arguments(ctx, cp_ops.PruneArgs, keep=keep))
    emit(done, wants_json(ctx, json_), lambda: print(f"pruned {len(done.pruned)}"))


@archive_app.command()
def sync(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Copy new journal entries and checkpoints to PostgreSQL (snapshot when due)."""
    report = call(ctx, archive_ops.archive_sync, NoArgs(), progress="archiving journal entries")
    emit(
        report,
        wants_json(ctx, json_),
        lambda: print(
            f"archived {plural(report.entries, 'entry')}, "
            f"{plural(report.checkpoints, 'checkpoint')}"
            + (f", snapshot {report.snapshot}" if report.snapshot else "")
        ),
    )


@archive_app.command()
def snapshot(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Take a base snapshot of the namespace's state now."""
    done = call(ctx, archive_ops.archive_snapshot, NoArgs())
    emit(done, wants_json(ctx, json_), lambda: print(done.snapshot))


@archive_app.command()
def restore(
    ctx: typer.Context,
    to: Annotated[str, typer.Option("--to", help="Checkpoint id/prefix or ISO-8601 time.")],
    json_: JsonOpt = False,
) -> None:
    """Rebuild the namespace from PostgreSQL alone, into a Redis that holds none of it."""
    args = arguments(ctx, archive_ops.RestoreArgs, to=to)
    report = call(
        ctx, archive_ops.archive_restore, args, progress="restoring keys and journal entries"
    )
    emit(
        report,
        wants_json(ctx, json_),
        lambda: print(
            f"restored {report.keys_restored} keys from snapshot {report.snapshot}, "
            f"replayed {plural(report.entries_replayed, 'entry')} up to {report.position}"
        ),
    )

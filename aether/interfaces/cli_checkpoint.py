"""``aether checkpoint ...`` and ``aether archive ...``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aether.interfaces.commands import Out, command
from aether.interfaces.common import (
    JsonOpt,
    arguments,
    call,
    confirm,
    emit,
    group,
    local_time,
    plural,
    print_fields,
    wants_json,
)
from aether.interfaces.tables import Column
from aether.operations import archive as archive_ops
from aether.operations import checkpoints as cp_ops

app = group(
    "Checkpoints: create, list, show, diff, rollback, undo, prune, fork.",
    order=("create", "list", "show", "diff", "rollback", "undo", "prune", "fork", "forks"),
)
archive_app = group(
    "The PostgreSQL archive (AETHER_POSTGRES_DSN).", order=("sync", "snapshot", "restore")
)

IdArg = Annotated[str, typer.Argument(help="Checkpoint id or a unique prefix (>= 6 chars).")]


@command(app, "list", cp_ops.checkpoint_list, zone=True)
def _checkpoints(found: cp_ops.CheckpointList, out: Out[cp_ops.CheckpointList]) -> None:
    """List kept checkpoints, newest first (exit 2 when there are none)."""
    columns: list[Column[dict[str, Any]]] = [
        Column("id", lambda c: c["id"], whole=True),
        Column("created", lambda c: local_time(c["created_at"], out.zone), whole=True),
        Column("reason", lambda c: c["reason"]),
        Column("label", lambda c: c["label"]),
        Column("actor", lambda c: c["actor"]),
    ]
    out.table(found.checkpoints, columns, empty="no checkpoints yet")


@command(app, "show", cp_ops.checkpoint_show, zone=True)
def _checkpoint(cp: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """Show one checkpoint and how many journal entries follow it."""
    shown = {
        "id": cp["id"],
        "label": cp["label"],
        "reason": cp["reason"],
        "actor": cp["actor"],
        "created": local_time(cp["created_at"], out.zone),
        "journal": cp["journal_pos"],
        "since": plural(cp["entries_since"], "journal entry"),
    }
    out.emit(cp, lambda: print_fields(shown))


@command(app, "create", cp_ops.checkpoint_create)
def _created(cp: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """Take a checkpoint of the agent's state (O(1), on disk when it returns)."""
    out.emit(cp, cp["id"])


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


@command(app, "diff", cp_ops.checkpoint_diff)
def _diff(d: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """What changed since a checkpoint, by tier: each key, field by field."""

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

    out.emit(d, render)


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


@command(app, "undo", cp_ops.checkpoint_undo)
def _undone(result: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """Reverse the last rollback (a second undo in a row needs --yes: it redoes)."""
    out.emit(result, f"undone: state is back at {result['target']}")


@command(archive_app, "sync", archive_ops.archive_sync, progress="archiving journal entries")
def _synced(report: archive_ops.Synced, out: Out[archive_ops.Synced]) -> None:
    """Copy new journal entries and checkpoints to PostgreSQL (snapshot when due)."""
    snapshot = f", snapshot {report.snapshot}" if report.snapshot else ""
    out.emit(
        report,
        f"archived {plural(report.entries, 'entry')}, "
        f"{plural(report.checkpoints, 'checkpoint')}{snapshot}",
    )


@command(
    archive_app,
    "restore",
    archive_ops.archive_restore,
    progress="restoring keys and journal entries",
)
def _restored(report: archive_ops.Restored, out: Out[archive_ops.Restored]) -> None:
    """Rebuild the namespace from PostgreSQL alone, into a Redis that holds none of it."""
    out.emit(
        report,
        f"restored {report.keys_restored} keys from snapshot {report.snapshot}, "
        f"replayed {plural(report.entries_replayed, 'entry')} up to {report.position}",
    )


@command(app, "prune", cp_ops.checkpoint_prune)
def _checkpoints_pruned(done: cp_ops.CheckpointsPruned, out: Out[cp_ops.CheckpointsPruned]) -> None:
    """Apply retention now (default: AETHER_CHECKPOINTS__KEEP) and trim the journal."""
    out.emit(done, f"pruned {len(done.pruned)}")


@command(archive_app, "snapshot", archive_ops.archive_snapshot)
def _snapshot_taken(done: archive_ops.Snapshot, out: Out[archive_ops.Snapshot]) -> None:
    """Take a base snapshot of the namespace's state now."""
    out.emit(done, done.snapshot)


@command(app, "fork", cp_ops.checkpoint_fork)
def _forked(report: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """Make a new namespace whose state is a checkpoint's; the source is untouched."""
    out.emit(
        report,
        f"forked {report['source']} at {report['checkpoint']} into {report['namespace']}: "
        f"{plural(report['keys'], 'key')} in {report['seconds']} s",
    )


@command(app, "forks", cp_ops.checkpoint_forks, zone=True)
def _forks(found: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """List this namespace's forks, and its source if it is a fork."""

    def show() -> None:
        source = found["source"]
        if source is not None:
            typer.echo(f"a fork of {source['source']} at checkpoint {source['checkpoint']}")
        columns: list[Column[dict[str, Any]]] = [
            Column("namespace", lambda f: f["namespace"], whole=True),
            Column("checkpoint", lambda f: f["checkpoint"], whole=True),
            Column("made", lambda f: local_time(f["at"], out.zone), whole=True),
            Column("keys", lambda f: str(f["keys"])),
        ]
        out.table(found["forks"], columns, empty="no forks")

    out.emit(found, show)

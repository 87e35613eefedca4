"""``aether checkpoint ...`` and ``aether archive ...``."""

from __future__ import annotations

from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer

from aether.checkpoints.diff import KeyChange
from aether.checkpoints.manager import Checkpoints
from aether.checkpoints.model import Checkpoint, Diff
from aether.interfaces.common import (
    AppState,
    JsonOpt,
    arguments,
    call,
    call_in_zone,
    confirm,
    emit,
    fail,
    group,
    local_time,
    plural,
    print_fields,
    progress_bar,
    read_operator_zone,
    redis_client,
    run,
    state,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.operations import NoArgs, ranges
from aether.operations import checkpoints as cp_ops

app = group("Checkpoints: create, list, show, diff, rollback, undo, prune.")
archive_app = group("The PostgreSQL archive (AETHER_POSTGRES_DSN).")

IdArg = Annotated[str, typer.Argument(help="Checkpoint id or a unique prefix (>= 6 chars).")]


def _manager(st: AppState, client: object) -> Checkpoints:
    from redis.asyncio import Redis

    assert isinstance(client, Redis)
    return Checkpoints.from_settings(client, st.keys, st.settings)


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
    st = state(ctx)

    async def body() -> tuple[Checkpoint, int, ZoneInfo]:
        async with redis_client(st.settings) as client:
            checkpoint, entries = await _manager(st, client).show(checkpoint_id)
            return checkpoint, entries, await read_operator_zone(client, st.keys)

    cp, entries, zone = run(ctx, body)
    shown = {
        "id": cp.id,
        "label": cp.label,
        "reason": cp.reason,
        "actor": cp.actor,
        "created": local_time(cp.created.timestamp(), zone),
        "journal": cp.journal_pos,
        "since": plural(entries, "journal entry"),
    }
    emit(
        {**cp.to_dict(), "entries_since": entries},
        wants_json(ctx, json_),
        lambda: print_fields(shown),
    )


_SIGNS = {"created": "+", "modified": "~", "deleted": "-"}
_SHOWN_CHARS = 120  # a value longer than this is cut for people (--json has it whole)


def _short(value: str | None) -> str:
    if value is None:
        return "(none)"
    one_line = value.replace("\n", "\\n")
    return one_line if len(one_line) <= _SHOWN_CHARS else one_line[: _SHOWN_CHARS - 1] + "…"


def _print_change(change: KeyChange) -> None:
    print(f"  {_SIGNS[change.change]} {change.key} ({change.type})")
    for f in change.fields:
        print(f"      {f.field}: {_short(f.before)} → {_short(f.after)}")
    for item in change.added:
        print(f"      + {_short(item)}")
    for item in change.removed:
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
    st = state(ctx)

    async def body() -> Diff:
        async with redis_client(st.settings) as client:
            return await _manager(st, client).diff(checkpoint_id, values=not keys_only)

    d = run(ctx, body)

    def render() -> None:
        print(
            f"since {d.checkpoint.id} ({d.checkpoint.label or d.checkpoint.reason}): "
            f"{plural(d.entries, 'journal entry')}"
        )
        for tier, changes in sorted(d.tiers.items()):
            changed = len(changes.created) + len(changes.modified) + len(changes.deleted)
            print(
                f"\n{tier}: {plural(changed, 'key')} changed in {plural(changes.entries, 'entry')}"
            )
            for change in d.changes:
                if change.tier == tier:
                    _print_change(change)

    emit(d.to_dict(), wants_json(ctx, json_), render)


@app.command()
def rollback(
    ctx: typer.Context,
    checkpoint_id: IdArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Return the agent's state to a checkpoint, all or nothing (undo reverses it)."""
    st = state(ctx)
    as_json = wants_json(ctx, json_)

    async def preview() -> tuple[str, int]:
        async with redis_client(st.settings) as client:
            checkpoint, entries = await _manager(st, client).show(checkpoint_id)
            return checkpoint.id, entries

    if not yes:  # the question names what it undoes; with --yes nobody reads it
        target, entries = run(ctx, preview)
        confirm(f"Roll back {plural(entries, 'journal entry')} to {target}?", yes, as_json)
        checkpoint_id = target

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
    st = state(ctx)

    async def body() -> list[str]:
        async with redis_client(st.settings) as client:
            return await _manager(st, client).prune(keep)

    pruned = run(ctx, body)
    emit({"pruned": pruned}, wants_json(ctx, json_), lambda: print(f"pruned {len(pruned)}"))


def _dsn(ctx: typer.Context) -> str:
    st = state(ctx)
    if st.settings.postgres_dsn is None:
        fail("no archive configured: set AETHER_POSTGRES_DSN", st.json, kind="config")
    return st.settings.postgres_dsn.get_secret_value()


@archive_app.command()
def sync(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Copy new journal entries and checkpoints to PostgreSQL (snapshot when due)."""
    st, dsn = state(ctx), _dsn(ctx)
    as_json = wants_json(ctx, json_)

    async def body() -> dict[str, object]:
        from aether.checkpoints.archive import Archive, open_archive

        async with redis_client(st.settings) as client, open_archive(dsn) as conn:
            arch = Archive.from_settings(conn, client, st.keys, st.settings)
            with progress_bar("archiving journal entries", hidden=as_json) as bar:
                return (await arch.sync(bar.advance)).__dict__

    report = run(ctx, body)
    emit(
        report,
        as_json,
        lambda: print(
            f"archived {plural(report['entries'], 'entry')}, "
            f"{plural(report['checkpoints'], 'checkpoint')}"
            + (f", snapshot {report['snapshot']}" if report["snapshot"] else "")
        ),
    )


@archive_app.command()
def snapshot(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Take a base snapshot of the namespace's state now."""
    st, dsn = state(ctx), _dsn(ctx)

    async def body() -> str:
        from aether.checkpoints.archive import Archive, open_archive

        async with redis_client(st.settings) as client, open_archive(dsn) as conn:
            return await Archive.from_settings(conn, client, st.keys, st.settings).snapshot()

    snap = run(ctx, body)
    emit({"snapshot": snap}, wants_json(ctx, json_), lambda: print(snap))


@archive_app.command()
def restore(
    ctx: typer.Context,
    to: Annotated[str, typer.Option("--to", help="Checkpoint id/prefix or ISO-8601 time.")],
    json_: JsonOpt = False,
) -> None:
    """Rebuild the namespace from PostgreSQL alone, into a Redis that holds none of it."""
    st, dsn = state(ctx), _dsn(ctx)
    as_json = wants_json(ctx, json_)

    async def body() -> dict[str, object]:
        from aether.checkpoints.archive import Archive, open_archive

        def advance(done: int, total: int) -> None:
            bar.expect(total)
            bar.reached(done)

        async with redis_client(st.settings) as client, open_archive(dsn) as conn:
            with progress_bar("restoring keys and journal entries", hidden=as_json) as bar:
                return (
                    await Archive.from_settings(conn, client, st.keys, st.settings).restore(
                        to, advance
                    )
                ).__dict__

    report = run(ctx, body)
    emit(
        report,
        as_json,
        lambda: print(
            f"restored {report['keys_restored']} keys from snapshot {report['snapshot']}, "
            f"replayed {plural(report['entries_replayed'], 'entry')} up to {report['position']}"
        ),
    )

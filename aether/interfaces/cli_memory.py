"""``aether memory ...``: the memory tiers, search, import and export."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer

from aether.errors import InvalidOperationError
from aether.interfaces.commands import Out, command
from aether.interfaces.common import (
    EXIT_USAGE,
    JsonOpt,
    about,
    arguments,
    call,
    call_in_zone,
    confirm,
    emit,
    fail,
    group,
    local_time,
    nothing_found,
    state,
    wants_json,
)
from aether.interfaces.parsers import parse_since
from aether.interfaces.tables import Column, emit_table
from aether.memory.storage.records import (
    Kind,
    Source,
)
from aether.memory.storage.status import belief_status, is_active
from aether.operations import chat as chat_ops
from aether.operations import memory as ops
from aether.operations import ranges
from aether.operations import transfer as transfer_ops

PAD = {"id": "pad_id"}
app = group(
    "Memory: daily logs, long-term, search, chat, import, export.",
    order=(
        "log",
        "forget",
        "replace",
        "day",
        "search",
        "reindex",
        "import",
        "export",
        "episodes",
        "longterm",
        "scratch",
        "chat",
    ),
)
longterm_app = group("Long-term memory.", order=("add", "list", "delete", "flush"))
scratch_app = group("Scratchpads (TTL).", order=("set", "get", "delete"))
chat_app = group("Chat sessions.", order=("list", "show", "delete"))
app.add_typer(longterm_app, name="longterm")
app.add_typer(scratch_app, name="scratch")
app.add_typer(chat_app, name="chat")


class DuplicatePolicy(StrEnum):
    """What import does with lines that share an id."""

    refuse = "refuse"
    keep_first = "keep-first"
    keep_last = "keep-last"


TagsOpt = Annotated[list[str] | None, typer.Option("--tag", "--tags", help="A tag (repeat).")]


def read_stdin(ctx: typer.Context, limit: int) -> str:
    """Standard input as text, refused (usage, 64) past ``limit`` bytes or when not UTF-8."""
    import sys

    raw = sys.stdin.buffer.read(limit + 1)
    if len(raw) > limit:
        fail(f"stdin holds over {limit:,} bytes, the content limit", state(ctx).json, EXIT_USAGE)
    try:
        return raw.decode()
    except UnicodeDecodeError as e:
        fail(f"stdin is not UTF-8 text (byte {e.start})", state(ctx).json, EXIT_USAGE)


def since_option(ctx: typer.Context, value: str | None, flag: str = "--since") -> datetime | None:
    """``--since`` (or ``flag``) read at the command's boundary.

    A bad value is a usage error (64) naming the flag.
    """
    try:
        return parse_since(value, flag)
    except InvalidOperationError as e:
        fail(str(e), state(ctx).json, EXIT_USAGE, "invalid")


def _when(timestamp: object, zone: ZoneInfo) -> str | None:
    return local_time(float(timestamp), zone) if isinstance(timestamp, int | float) else None


def _joined(values: object) -> str:
    return ", ".join(map(str, values)) if isinstance(values, list) else ""


def memory_columns(zone: ZoneInfo) -> list[Column[Mapping[str, object]]]:
    """The columns of a list of memories: id, when (in ``zone``), source, tags, text."""
    return [
        Column("id", lambda d: d["id"], whole=True),
        Column("when", lambda d: _when(d.get("timestamp", 0), zone), whole=True),
        Column("source", lambda d: d.get("source")),
        Column("tags", lambda d: _joined(d.get("tags"))),
        Column("content", _content),
    ]


def _content(doc: Mapping[str, object]) -> str:
    """A memory's text, marked when it no longer holds (``superseded``, ``forgotten``...)."""
    status = doc.get("status")
    text = str(doc["content"])
    return text if is_active(status) else f"({belief_status(status)}) {text}"


@app.command("log")
def log_(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="What happened ('-': read it from stdin).")],
    source: Annotated[Source, typer.Option(help="Who it comes from.")] = "user",
    tags: TagsOpt = None,
    score: Annotated[float, ranges.SCORE.option("--score", help="Importance 0-1.")] = 0.5,
    session: Annotated[str | None, typer.Option(help="Session id.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Write a daily log entry (CONTENT '-' reads it from stdin, up to the content limit)."""
    if content == "-":
        content = read_stdin(ctx, state(ctx).settings.memory.max_content_bytes)
    args = arguments(
        ctx, ops.LogArgs, content=content, source=source, tags=tags, score=score, session=session
    )
    doc = call(ctx, ops.memory_log, args)
    emit(doc, wants_json(ctx, json_), lambda: print(doc["id"]))


@app.command()
def forget(
    ctx: typer.Context,
    memory_id: Annotated[
        str | None,
        typer.Argument(help="The memory's id (or give --about).", show_default=False),
    ] = None,
    about_: Annotated[
        str | None,
        typer.Option("--about", metavar="NAME", help=about(ops.ForgetArgs, "about")),
    ] = None,
    preview: Annotated[
        bool, typer.Option("--preview", help=about(ops.ForgetArgs, "preview"))
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Forget one memory by its id, or everything about a subject (a rollback restores it).

    By id, a belief is kept in its history but never recalled again; a note or an entry
    is deleted. With --about, every belief, note and entry whose subject is NAME (or an
    alias the graph knows) is marked forgotten, after a checkpoint; never one that only
    shares something with it.
    """
    as_json = wants_json(ctx, json_)
    if (memory_id is None) == (about_ is None):
        fail("give a memory id or --about NAME", as_json, code=EXIT_USAGE, kind="usage")
    if about_ is not None and not preview and not yes:
        planned = call(
            ctx, ops.memory_forget, arguments(ctx, ops.ForgetArgs, about=about_, preview=True)
        )
        if not as_json:
            _print_forgotten(planned)
        if not planned.items:
            emit(planned.model_dump(), as_json, lambda: None)
            return
        confirm(f"Forget {len(planned.items)} memories about {about_}?", yes, as_json)
    args = arguments(ctx, ops.ForgetArgs, id=memory_id, about=about_, preview=preview)
    done = call(ctx, ops.memory_forget, args)
    emit(done.model_dump(), as_json, lambda: _print_forgotten(done))


def _print_forgotten(done: ops.Forgotten) -> None:
    if done.kind != "about":
        print(f"{'would forget' if done.preview else 'forgot'} {done.kind} {done.forgotten}")
        return
    if not done.items:
        print(f"no memory is about {done.forgotten!r}; nothing changed")
        return
    verb = "would forget" if done.preview else "forgot"
    names = f" (also known as {', '.join(done.names[1:])})" if len(done.names) > 1 else ""
    print(f"{verb} {len(done.items)} memories about {done.forgotten}{names}:")
    for item in done.items:
        print(f"  [{item['kind']} {item['id']}] {item['content']}")
    if done.checkpoint:
        print(f"checkpoint before it: {done.checkpoint}")


@app.command()
def replace(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help=about(ops.ReplaceArgs, "target"))],
    content: Annotated[str, typer.Argument(help=about(ops.ReplaceArgs, "content"))],
    preview: Annotated[
        bool, typer.Option("--preview", help=about(ops.ReplaceArgs, "preview"))
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    source: Annotated[Source, typer.Option(help="Who it comes from.")] = "user",
    json_: JsonOpt = False,
) -> None:
    """Replace what is known about TARGET ("my employer", an id) with the fact CONTENT.

    Every belief, entry and note that states that attribute of that subject is retired
    (superseded by the new belief), in one journaled change after a checkpoint.
    """
    as_json = wants_json(ctx, json_)
    if not preview and not yes:
        planned = call(
            ctx,
            ops.memory_replace,
            arguments(ctx, ops.ReplaceArgs, target=target, content=content, preview=True),
        )
        if not as_json:
            _print_replaced(planned)
        confirm(f"Replace {len(planned.replaced)} memories with the new fact?", yes, as_json)
    args = arguments(
        ctx, ops.ReplaceArgs, target=target, content=content, preview=preview, source=source
    )
    done = call(ctx, ops.memory_replace, args)
    emit(done.model_dump(), as_json, lambda: _print_replaced(done))


def _print_replaced(done: ops.Replaced) -> None:
    what = f"{done.attribute} of {done.subject}"
    verb = "would retire" if done.preview else "retired"
    print(f"{verb} {len(done.replaced)} memories stating the {what}:")
    for item in done.replaced:
        print(f"  [{item['kind']} {item['id']}] {item['content']}")
    if not done.preview:
        print(f"new belief {done.belief}; checkpoint before it: {done.checkpoint}")


@app.command()
def day(
    ctx: typer.Context,
    when: Annotated[str | None, typer.Argument(help="YYYY-MM-DD (default: today, UTC).")] = None,
    json_: JsonOpt = False,
) -> None:
    """List the entries of a day (exit 2 when there are none)."""
    st = state(ctx)
    try:
        target = date.fromisoformat(when) if when is not None else datetime.now(UTC).date()
    except ValueError:
        from aether.interfaces.common import fail

        fail(f"{when!r} is not a date (YYYY-MM-DD)", st.json, kind="invalid")

    found, zone = call_in_zone(ctx, ops.memory_day, ops.DayArgs(day=target))
    emit_table(
        found.entries, wants_json(ctx, json_), memory_columns(zone), empty=f"no entries on {target}"
    )


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for (any text).")],
    kind: Annotated[Kind | None, typer.Option(help="Only this kind of memory.")] = None,
    source: Annotated[Source | None, typer.Option(help="Only from this source.")] = None,
    tags: TagsOpt = None,
    since: Annotated[str | None, typer.Option(help="7d, 12h, 30m, 90s or ISO-8601.")] = None,
    limit: Annotated[int, ranges.LIMIT.option("--limit", help="At most this many.")] = 10,
    include_inactive: Annotated[
        bool,
        typer.Option("--include-inactive", help="Also superseded, forgotten or pruned memories."),
    ] = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Show why each result is there: its text and vector ranks, similarity, "
            "coverage, match and recency (--json always carries them, as 'signals').",
        ),
    ] = False,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            metavar="TIME",
            help="Search the memory as recorded at this time (7d, 12h, 30m, 90s or ISO-8601), "
            "read from the journal's history: the live state is untouched.",
        ),
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Hybrid search (full text + vectors + recency); exit 2 when nothing relevant is found.

    A result must share a meaningful word with QUERY or be close to it in meaning; beliefs
    that no longer hold are left out unless --include-inactive.
    """
    as_json = wants_json(ctx, json_)
    if not query.strip():  # a usage error, like a bad option (64), not "nothing found" (2)
        fail("the query is empty: say what to look for", as_json, EXIT_USAGE, "invalid")
    since_at = since_option(ctx, since)
    as_of_at = since_option(ctx, as_of, "--as-of")

    args = arguments(
        ctx,
        ops.SearchArgs,
        query=query,
        kind=kind,
        source=source,
        tags=tags or None,
        since=since_at.timestamp() if since_at else None,
        limit=limit,
        include_inactive=include_inactive,
        explain=explain or as_json,
        as_of=as_of_at.timestamp() if as_of_at else None,
    )
    found, zone = call_in_zone(ctx, ops.memory_search, args)
    hits = [{k: v for k, v in hit.items() if k != "key"} for hit in found.results]
    columns: list[Column[Mapping[str, object]]] = [
        Column("relevance", lambda h: f"{h['relevance']:.3f}", justify="right"),
        Column("kind", lambda h: h.get("kind")),
        *(_SIGNAL_COLUMNS if explain else []),
        *memory_columns(zone),
    ]
    emit_table(hits, as_json, columns, empty=f"nothing found for {query!r}")


def _signal(name: str, shown: Callable[[Any], str]) -> Callable[[Mapping[str, object]], str]:
    def cell(hit: Mapping[str, object]) -> str:
        signals = hit.get("signals")
        value = signals.get(name) if isinstance(signals, dict) else None
        return "-" if value is None else shown(value)

    return cell


_SIGNAL_COLUMNS: list[Column[Mapping[str, object]]] = [
    Column("text#", _signal("text_rank", lambda v: str(int(v))), justify="right"),
    Column("vector#", _signal("vector_rank", lambda v: str(int(v))), justify="right"),
    Column("similarity", _signal("similarity", lambda v: f"{float(v):.3f}"), justify="right"),
    Column("coverage", _signal("coverage", lambda v: f"{float(v):.2f}"), justify="right"),
    Column("match", _signal("match", lambda v: f"{float(v):.3f}"), justify="right"),
    Column("recency", _signal("recency", lambda v: f"{float(v):+.3f}"), justify="right"),
    Column("floor", _signal("floor", str)),
]


@app.command("import")
def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="JSONL file (as written by export).")],
    skip_invalid: Annotated[
        bool,
        typer.Option(
            "--skip-invalid", help="Skip (and count) invalid lines (files of records only)."
        ),
    ] = False,
    on_duplicate: Annotated[
        DuplicatePolicy,
        typer.Option(help="Lines sharing an id: refuse the file, or keep the first or last."),
    ] = DuplicatePolicy.refuse,
    json_: JsonOpt = False,
) -> None:
    """Import a whole-memory export, or a file of daily entries and long-term notes.

    Every line is validated before anything is written: a bad line refuses the whole
    file, naming the line. A whole-memory export (aether memory export) restores every
    key this namespace lacks and adds to its collections what they lack; a file of
    records skips exact duplicates. Either takes a checkpoint first. Ctrl-C stops it:
    what was imported stays, and running it again finishes it.
    """
    args = arguments(
        ctx,
        transfer_ops.ImportArgs,
        path=path,
        skip_invalid=skip_invalid,
        on_duplicate=on_duplicate.value,
    )
    report = call(
        ctx,
        transfer_ops.memory_import,
        args,
        progress="importing",
        resume=(
            "what was imported stays; run the same `aether memory import` again to finish "
            "(it skips what is already here)"
        ),
    )
    if report.get("format"):
        summary = (
            f"imported {report['read']} keys: {report['created']} created, "
            f"{report['merged']} completed, {report['unchanged']} already here"
            + (f"; checkpoint before it: {report['checkpoint']}" if report["checkpoint"] else "")
        )
    else:
        summary = (
            f"imported {report['imported']} of {report['read']} ({report['duplicates']} "
            f"duplicates, {report['invalid']} invalid lines skipped, {report['duplicate_ids']} "
            "repeated ids)"
            + (f"; checkpoint before it: {report['checkpoint']}" if report["checkpoint"] else "")
        )
    emit(report, wants_json(ctx, json_), lambda: print(summary))


@longterm_app.command("flush")
def longterm_flush(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm.")] = False,
) -> None:
    """Delete every long-term memory (a checkpoint is taken first)."""
    confirm("Delete every long-term memory?", yes, state(ctx).json)
    done = call(ctx, ops.memory_notes_flush, ops.FlushArgs(confirm=True))
    print(f"flushed {done.flushed} long-term memories")


@command(chat_app, "show", chat_ops.chat_messages, positional={"session": "session"})
def _messages(found: chat_ops.Messages, out: Out[chat_ops.Messages]) -> None:
    """A session's messages in order."""
    if not found.exists:
        fail(f"no chat session {found.session!r}", out.json, kind="not_found")
    rows = found.messages
    out.emit(rows, lambda: [print(f"{r['role']:>9}: {r['content']}") for r in rows])


@chat_app.command("delete")
def chat_delete(
    ctx: typer.Context,
    session: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm.")] = False,
) -> None:
    """Delete a chat session (a rollback restores it)."""
    from aether.operations import chat as chat_ops

    confirm(f"Delete chat session {session}?", yes, state(ctx).json)
    call(ctx, chat_ops.chat_delete, arguments(ctx, chat_ops.SessionArgs, session=session))
    print(f"deleted {session}")


@command(app, "reindex", transfer_ops.memory_reindex, progress="indexing memories")
def _reindexed(done: transfer_ops.Reindexed, out: Out[transfer_ops.Reindexed]) -> None:
    """Create the search index (rebuilt when the schema changed) and recount the memory index."""
    summary = ", ".join(f"{kind} {n:,}" for kind, n in sorted(done.counts.items())) or "none"
    out.emit(done, f"index {done.index} ready; memories counted: {summary}")


@command(app, "indexes", transfer_ops.memory_indexes)
def _indexes(found: transfer_ops.SearchIndexes, out: Out[transfer_ops.SearchIndexes]) -> None:
    """List the search indexes (a large tag's own ones too), as Redis has them now."""
    columns: list[Column[Mapping[str, object]]] = [
        Column("covers", lambda i: i["covers"]),
        Column("documents", lambda i: f"{i['documents']:,}", justify="right"),
        Column("scanned", lambda i: f"{float(str(i['scanned'])):.0%}", justify="right"),
        Column("MB", lambda i: f"{float(str(i['memory_mb'])):,.1f}", justify="right"),
        Column("name", lambda i: i["name"]),
    ]
    rows = [index.model_dump() for index in found.indexes]
    out.table(rows, columns, empty="no search index yet")


@command(longterm_app, "list", ops.memory_notes, zone=True)
def _notes(found: ops.Notes, out: Out[ops.Notes]) -> None:
    """List long-term memories (exit 2 when there are none)."""
    out.table(found.notes, memory_columns(out.zone), empty="no long-term memories")


@command(scratch_app, "get", ops.scratchpad_get, positional=PAD)
def _pad(pad: ops.Pad, out: Out[ops.Pad]) -> None:
    """Print a scratchpad (exit 2 when missing or expired)."""
    if pad.value is None:
        nothing_found(f"no scratchpad {pad.id!r} (missing or expired)", out.json)
    out.emit(pad, pad.value)


@command(scratch_app, "delete", ops.scratchpad_delete, positional=PAD)
def _pad_deleted(done: ops.PadDeleted, out: Out[ops.PadDeleted]) -> None:
    """Delete a scratchpad."""
    if not done.deleted:
        nothing_found(f"no scratchpad {out.args.id!r} (missing or expired)", out.json)
    out.emit(done, lambda: None)


@command(app, "episodes", ops.memory_episodes, positional={"session": "session"})
def _episodes(found: ops.EpisodeList, out: Out[ops.EpisodeList]) -> None:
    """The tool calls of a session (exit 2 when none)."""
    columns: list[Column[dict[str, Any]]] = [
        Column("result", lambda r: "ok" if r["success"] else "error"),
        Column("tool", lambda r: r["tool"]),
        Column("took", lambda r: f"{r['duration_ms']} ms", justify="right"),
        Column("output", lambda r: r["output"][:200]),
    ]
    out.table(found.episodes, columns, empty=f"no tool calls in {out.args.session}")


@command(chat_app, "list", chat_ops.chat_list, zone=True)
def _sessions(listed: chat_ops.Sessions, out: Out[chat_ops.Sessions]) -> None:
    """Chat sessions, most recent first (exit 2 when none)."""
    columns: list[Column[dict[str, Any]]] = [
        Column("session", lambda r: r["id"], whole=True),
        Column("last message", lambda r: _when(r.get("last_message_at"), out.zone), whole=True),
        Column("messages", lambda r: r["messages"], justify="right"),
        Column("title", lambda r: r.get("title")),
    ]
    out.table(listed.sessions, columns, empty="no chat sessions")


@command(
    app, "export", transfer_ops.memory_export, positional={"path": "path"}, progress="exporting"
)
def _exported(done: transfer_ops.Exported, out: Out[transfer_ops.Exported]) -> None:
    """Export the agent's whole memory as JSONL (all or nothing): a backup, or a move.

    Every kind of memory (daily, long-term, beliefs and their history, tasks, goals, chat
    sessions, the graph, open questions) and the identity; vectors are recomputed on import.
    """
    out.emit(done, f"exported {done.exported} keys of memory to {out.args.path}")


@command(
    longterm_app,
    "add",
    ops.memory_note,
    positional={"content": "content"},
    fixed={"source": "user"},
)
def _note_added(doc: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """Store a long-term memory."""
    out.emit(doc, doc["id"])


@command(longterm_app, "delete", ops.memory_note_delete, positional={"id": "memory_id"})
def _note_deleted(done: ops.Deleted, out: Out[ops.Deleted]) -> None:
    """Delete one long-term memory (a rollback restores it)."""
    out.emit(done, f"deleted {done.deleted}")


@command(scratch_app, "set", ops.scratchpad_set, positional={"id": "pad_id", "value": "value"})
def _pad_set(pad: ops.Pad, out: Out[ops.Pad]) -> None:
    """Write a scratchpad."""
    out.emit(pad, lambda: None)

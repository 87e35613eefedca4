"""``aether memory ...``: the memory tiers, search, import and export."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer
from rich.progress import Progress

from aether.checkpoints.manager import Checkpoints
from aether.errors import InvalidOperationError
from aether.interfaces import ranges
from aether.interfaces.common import (
    AppState,
    confirm,
    emit,
    emit_rows,
    err_console,
    group,
    local_time,
    nothing_found,
    plural,
    read_operator_zone,
    redis_client,
    run,
    state,
    wants_json,
)
from aether.memory.chat import ChatSessions
from aether.memory.daily import DailyLog
from aether.memory.episodes import Episodes
from aether.memory.layer import MemoryLayer
from aether.memory.longterm import LongTermMemory
from aether.memory.records import Kind, Source, public
from aether.memory.scratchpad import Scratchpads
from aether.memory.search import MemorySearch

app = group("Memory: daily logs, long-term, scratchpads, episodes, chat, search.")
longterm_app = group("Long-term memory.")
scratch_app = group("Scratchpads (TTL).")
chat_app = group("Chat sessions.")
app.add_typer(longterm_app, name="longterm")
app.add_typer(scratch_app, name="scratch")
app.add_typer(chat_app, name="chat")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


class DuplicatePolicy(StrEnum):
    """What import does with lines that share an id."""

    refuse = "refuse"
    keep_first = "keep-first"
    keep_last = "keep-last"


TagsOpt = Annotated[list[str] | None, typer.Option("--tag", "--tags", help="A tag (repeat).")]


@asynccontextmanager
async def memory(st: AppState) -> AsyncIterator[MemoryLayer]:
    """The memory layer of the invocation's namespace (its search index ensured)."""
    async with redis_client(st.settings) as client:
        layer = MemoryLayer.open(st.settings, client, actor="cli", via_daemon=True)
        await MemorySearch(layer).ensure_index()
        yield layer


def parse_since(value: str | None) -> datetime | None:
    """``7d``, ``12h``, ``30m`` ago, or an ISO-8601 date/time (UTC when naive).

    Raises:
        InvalidOperationError: anything else, or more than 100 years back.
    """
    if value is None:
        return None
    match = re.fullmatch(r"(\d{1,12})([dhm])", value.strip())
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        minutes = amount * {"d": 1440, "h": 60, "m": 1}[unit]
        if minutes > ranges.SINCE_MAX_DAYS * 1440:
            raise InvalidOperationError(
                f"--since {value!r} is too far back: at most {ranges.SINCE_MAX_DAYS} days"
            )
        return datetime.now(UTC) - timedelta(minutes=minutes)
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as e:
        raise InvalidOperationError(
            f"--since {value!r}: use 7d, 12h, 30m or an ISO-8601 time"
        ) from e
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _lines(docs: list[dict[str, Any]], zone: ZoneInfo) -> None:
    for doc in docs:
        when = local_time(float(doc.get("timestamp", 0)), zone)
        tags = f" [{', '.join(doc.get('tags', []))}]" if doc.get("tags") else ""
        print(f"{doc['id']}  {when}  {doc.get('source', '')}{tags}  {doc['content']}")


@app.command("log")
def log_(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="What happened.")],
    source: Annotated[Source, typer.Option(help="Who it comes from.")] = "user",
    tags: TagsOpt = None,
    score: Annotated[float, ranges.SCORE.option("--score", help="Importance 0-1.")] = 0.5,
    session: Annotated[str | None, typer.Option(help="Session id.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Write a daily log entry."""
    st = state(ctx)

    async def body() -> dict[str, Any]:
        async with memory(st) as layer:
            return await DailyLog(layer).log(content, source, tags or [], score, session)

    doc = run(ctx, body)
    emit(public(doc), wants_json(ctx, json_), lambda: print(doc["id"]))


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

    async def body() -> tuple[list[dict[str, Any]], ZoneInfo]:
        async with memory(st) as layer:
            zone = await read_operator_zone(layer.client, layer.keys)
            return await DailyLog(layer).list_day(target), zone

    found, zone = run(ctx, body)
    docs = [public(d) for d in found]
    emit(docs, wants_json(ctx, json_), lambda: _lines(docs, zone))
    if not docs:
        nothing_found(f"no entries on {target}", wants_json(ctx, json_))


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for (any text).")],
    kind: Annotated[Kind | None, typer.Option(help="Only this kind of memory.")] = None,
    source: Annotated[Source | None, typer.Option(help="Only from this source.")] = None,
    tags: TagsOpt = None,
    since: Annotated[str | None, typer.Option(help="7d, 12h, 30m or ISO-8601.")] = None,
    limit: Annotated[int, ranges.LIMIT.option("--limit", help="At most this many.")] = 10,
    json_: JsonOpt = False,
) -> None:
    """Hybrid search (full text + vectors + recency); exit 2 when nothing is found."""
    st = state(ctx)

    async def body() -> list[dict[str, Any]]:
        async with memory(st) as layer:
            hits = await MemorySearch(layer).search(
                query, kind=kind, source=source, tags=tags or None, since=parse_since(since),
                limit=limit,
            )  # fmt: skip
            return [{**h.doc, "relevance": h.relevance} for h in hits]

    hits = run(ctx, body)

    def render() -> None:
        for hit in hits:
            print(f"{hit['relevance']:.3f}  {hit['kind']:<8} {hit['id']}  {hit['content']}")

    emit(hits, wants_json(ctx, json_), render)
    if not hits:
        nothing_found(f"nothing found for {query!r}", wants_json(ctx, json_))


@app.command()
def reindex(ctx: typer.Context) -> None:
    """Create the search index (rebuilt when the schema changed) and recount the memory index."""
    st = state(ctx)

    async def body() -> dict[str, int]:
        from aether.memory.topics import MemoryIndex

        async with memory(st) as layer:
            await MemorySearch(layer).ensure_index()
            return await MemoryIndex(layer).rebuild()

    counts = run(ctx, body)
    print(f"index {st.keys.memory_index()} ready; memory index recounted: {counts}")


@app.command("import")
def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="JSONL file (as written by export).")],
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Skip (and count) invalid lines.")
    ] = False,
    on_duplicate: Annotated[
        DuplicatePolicy,
        typer.Option(help="Lines sharing an id: refuse the file, or keep the first or last."),
    ] = DuplicatePolicy.refuse,
    json_: JsonOpt = False,
) -> None:
    """Import daily entries and long-term memories; exact duplicates are skipped.

    Every line is validated before anything is written: a bad line (or one id on several
    lines) refuses the whole file, naming the line.
    """
    st = state(ctx)

    async def body() -> dict[str, Any]:
        from aether.memory.transfer import (
            ImportPolicy,
            import_records,
            read_file,
            with_read_report,
        )

        async with memory(st) as layer:
            policy = ImportPolicy("skip" if skip_invalid else "refuse", on_duplicate.value)
            read = read_file(layer, path, policy)
            with Progress(console=err_console, transient=True) as bar:
                task = bar.add_task("importing", total=len(read.records))
                report = await import_records(layer, read.records, lambda n: bar.advance(task, n))
            return with_read_report(report, read).to_dict()

    report = run(ctx, body)
    summary = (
        f"imported {report['imported']} of {report['read']} ({report['duplicates']} duplicates"
        f", {report['invalid']} invalid lines skipped, {report['duplicate_ids']} repeated ids)"
    )
    emit(report, wants_json(ctx, json_), lambda: print(summary))


@app.command()
def export(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="JSONL file to write (owner-only).")],
    json_: JsonOpt = False,
) -> None:
    """Export every daily entry and long-term memory as JSONL (all or nothing)."""
    st = state(ctx)

    async def body() -> int:
        from aether.memory.transfer import export_file

        async with memory(st) as layer:
            with Progress(console=err_console, transient=True) as bar:
                task = bar.add_task("exporting", total=None)
                return await export_file(layer, path, lambda n: bar.advance(task, n))

    count = run(ctx, body)
    emit(
        {"exported": count, "path": str(path)},
        wants_json(ctx, json_),
        lambda: print(f"exported {count} documents to {path}"),
    )


@longterm_app.command("add")
def longterm_add(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument()],
    tags: TagsOpt = None,
    score: Annotated[float, ranges.SCORE.option("--score", help="Importance 0-1.")] = 0.5,
    json_: JsonOpt = False,
) -> None:
    """Store a long-term memory."""
    st = state(ctx)

    async def body() -> dict[str, Any]:
        async with memory(st) as layer:
            return await LongTermMemory(layer).add(content, "user", tags or [], score)

    doc = run(ctx, body)
    emit(public(doc), wants_json(ctx, json_), lambda: print(doc["id"]))


@longterm_app.command("list")
def longterm_list(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """List long-term memories (exit 2 when there are none)."""
    st = state(ctx)

    async def body() -> tuple[list[dict[str, Any]], ZoneInfo]:
        async with memory(st) as layer:
            lt = LongTermMemory(layer)
            zone = await read_operator_zone(layer.client, layer.keys)
            return [public(await lt.get(i)) for i in await lt.ids()], zone

    docs, zone = run(ctx, body)
    emit(docs, wants_json(ctx, json_), lambda: _lines(docs, zone))
    if not docs:
        nothing_found("no long-term memories", wants_json(ctx, json_))


@longterm_app.command("delete")
def longterm_delete(ctx: typer.Context, memory_id: str) -> None:
    """Delete one long-term memory (a rollback restores it)."""
    st = state(ctx)

    async def body() -> None:
        async with memory(st) as layer:
            await LongTermMemory(layer).delete(memory_id)

    run(ctx, body)
    print(f"deleted {memory_id}")


@longterm_app.command("flush")
def longterm_flush(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm.")] = False,
) -> None:
    """Delete every long-term memory (a checkpoint is taken first)."""
    st = state(ctx)
    confirm("Delete every long-term memory?", yes, st.json)

    async def body() -> int:
        async with memory(st) as layer:
            cps = Checkpoints(layer.client, layer.keys, keep=st.settings.checkpoints.keep)
            return await LongTermMemory(layer).flush(confirm=True, checkpoints=cps)

    print(f"flushed {run(ctx, body)} long-term memories")


@scratch_app.command("set")
def scratch_set(
    ctx: typer.Context,
    pad_id: str,
    value: str,
    ttl: Annotated[int | None, ranges.TTL_S.option("--ttl", help="Seconds (default 3600).")] = None,
) -> None:
    """Write a scratchpad."""
    st = state(ctx)

    async def body() -> None:
        async with memory(st) as layer:
            await Scratchpads(layer).set(pad_id, value, ttl)

    run(ctx, body)


@scratch_app.command("get")
def scratch_get(ctx: typer.Context, pad_id: str) -> None:
    """Print a scratchpad (exit 2 when missing or expired)."""
    st = state(ctx)

    async def body() -> str | None:
        async with memory(st) as layer:
            return await Scratchpads(layer).get(pad_id)

    value = run(ctx, body)
    if value is None:
        nothing_found(f"no scratchpad {pad_id!r} (missing or expired)", st.json)
    print(value)


@scratch_app.command("delete")
def scratch_delete(ctx: typer.Context, pad_id: str) -> None:
    """Delete a scratchpad."""
    st = state(ctx)

    async def body() -> bool:
        async with memory(st) as layer:
            return await Scratchpads(layer).delete(pad_id)

    if not run(ctx, body):
        nothing_found(f"no scratchpad {pad_id!r} (missing or expired)", st.json)


@app.command()
def episodes(ctx: typer.Context, session: str, json_: JsonOpt = False) -> None:
    """The tool calls of a session (exit 2 when none)."""
    st = state(ctx)

    async def body() -> list[dict[str, Any]]:
        async with memory(st) as layer:
            return await Episodes(layer).list(session)

    emit_rows(run(ctx, body), wants_json(ctx, json_), lambda r: (
        f"{'ok ' if r['success'] else 'ERR'} {r['tool']} {r['duration_ms']}ms  {r['output'][:80]}"
    ))  # fmt: skip


@chat_app.command("list")
def chat_list(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Chat sessions, most recent first (exit 2 when none)."""
    st = state(ctx)

    async def body() -> list[dict[str, Any]]:
        async with memory(st) as layer:
            return await ChatSessions(layer).list()

    emit_rows(
        run(ctx, body),
        wants_json(ctx, json_),
        lambda r: "  ".join(
            [
                r["id"],
                str(r.get("updated_at", "")),
                plural(r["messages"], "message"),
                r.get("title", ""),
            ]
        ),
    )


@chat_app.command("show")
def chat_show(ctx: typer.Context, session: str, json_: JsonOpt = False) -> None:
    """A session's messages in order."""
    st = state(ctx)

    async def body() -> list[dict[str, Any]]:
        async with memory(st) as layer:
            chats = ChatSessions(layer)
            await chats.get(session)
            return await chats.messages(session)

    rows = run(ctx, body)
    emit(rows, wants_json(ctx, json_),
         lambda: [print(f"{r['role']:>9}: {r['content']}") for r in rows])  # fmt: skip


@chat_app.command("delete")
def chat_delete(
    ctx: typer.Context,
    session: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm.")] = False,
) -> None:
    """Delete a chat session (a rollback restores it)."""
    st = state(ctx)
    confirm(f"Delete chat session {session}?", yes, st.json)

    async def body() -> None:
        async with memory(st) as layer:
            await ChatSessions(layer).delete(session)

    run(ctx, body)
    print(f"deleted {session}")

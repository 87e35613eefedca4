"""Memory operations: search, log, remember, note, forget, and the scratchpads."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from pydantic import BaseModel, Field, model_validator

from aether.errors import NotFoundError
from aether.ids import check_id
from aether.memory.knowledge.beliefs import RememberSummary
from aether.memory.knowledge.revision import Revisions
from aether.memory.storage.records import Kind, Source, public
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.episodes import Episodes
from aether.memory.tiers.longterm import LongTermMemory
from aether.memory.tiers.scratchpad import Scratchpads
from aether.operations.base import AsOf, Caller, NoArgs, for_the_cli, not_for_agent, operation
from aether.operations.parts import Parts
from aether.operations.ranges import LIMIT, SCORE, TTL_S

__all__ = [
    "ContentArgs",
    "ForgetArgs",
    "Forgotten",
    "IdArgs",
    "LogArgs",
    "MemoryItem",
    "NoteArgs",
    "Pad",
    "PadArgs",
    "PadSetArgs",
    "ReplaceArgs",
    "Replaced",
    "SearchArgs",
    "SearchResults",
    "memory_day",
    "memory_episodes",
    "memory_forget",
    "memory_get",
    "memory_log",
    "memory_note",
    "memory_note_delete",
    "memory_notes",
    "memory_notes_flush",
    "memory_remember",
    "memory_replace",
    "memory_search",
    "scratchpad_delete",
    "scratchpad_get",
    "scratchpad_set",
]

Tags = Annotated[
    list[str] | None,
    Field(description="Short labels.", json_schema_extra=for_the_cli(flags=("--tag", "--tags"))),
]
MAX_DESCRIPTION = 500
"""The longest description ``memory_replace`` and ``memory_forget`` take."""


class SearchArgs(BaseModel):
    """Arguments of ``memory_search``."""

    query: str = Field(min_length=1, description="What to look for, in plain words.")
    limit: Annotated[int, LIMIT.field("How many results, most relevant first.")] = 5
    kind: Kind | None = Field(default=None, description="Only this kind of memory.")
    source: Source | None = Field(
        default=None, description="Only from this source.", json_schema_extra=not_for_agent()
    )
    tags: list[str] | None = Field(
        default=None, description="Only with one of these tags.", json_schema_extra=not_for_agent()
    )
    since: float | None = Field(
        default=None,
        ge=0,
        description="Only memories from this time on (epoch seconds).",
        json_schema_extra=not_for_agent() | for_the_cli(parser="since"),
    )
    include_inactive: bool = Field(
        default=False,
        description="Also beliefs that no longer hold (superseded, forgotten).",
        json_schema_extra=not_for_agent(),
    )
    explain: bool = Field(
        default=False,
        description="Add each result's signals: full-text and vector ranks, similarity, "
        "word coverage, the fused match, recency's share and the floor's decision.",
        json_schema_extra=not_for_agent(),
    )
    as_of: AsOf = None


class SearchResults(BaseModel):
    """What a search found, most relevant first; empty when nothing is relevant.

    Each result is the memory as stored (``id``, ``kind``, ``content``, ``source``,
    ``tags``, ``timestamp``...) with its ``key`` and ``relevance``.
    """

    results: list[dict[str, Any]]


def _found_lines(found: SearchResults) -> str:
    if not found.results:
        return "no memories found"
    return "\n".join(f"[{f.get('kind')} {f.get('id')}] {f.get('content')}" for f in found.results)


@operation(read_only=True, brief=_found_lines, memory="search_memory")
async def memory_search(parts: Parts, caller: Caller, args: SearchArgs) -> SearchResults:
    """Find what the agent remembers about something, most relevant first.

    Searches daily log entries, long-term memories, beliefs, events, decisions and failures
    (full text, vectors and recency). Use it before answering from memory; an empty
    ``results`` means nothing relevant is stored.
    """
    hits = await parts.search.search(
        args.query,
        limit=args.limit,
        kind=args.kind,
        source=args.source,
        tags=args.tags,
        since=args.since,
        include_inactive=args.include_inactive,
    )
    results = [{**public(h.doc), "key": h.key, "relevance": h.relevance} for h in hits]
    if args.explain:
        cfg = parts.settings.memory
        for row, hit in zip(results, hits, strict=True):
            row["signals"] = hit.signals(cfg.min_similarity, cfg.min_coverage)
    return SearchResults(results=results)


class LogArgs(BaseModel):
    """Arguments of ``memory_log``."""

    content: str = Field(description="What happened, in a sentence or two.")
    tags: Tags = None
    session: str | None = Field(
        default=None,
        description="The conversation it belongs to (default: the caller's).",
        json_schema_extra=not_for_agent(),
    )
    source: Source = Field(
        default="agent", description="Who it comes from.", json_schema_extra=not_for_agent()
    )
    score: Annotated[float, SCORE.field("How important, 0 to 1.")] = 0.5


@operation(read_only=False, brief=lambda r: f"logged {r['id']}", memory="create_memory")
async def memory_log(parts: Parts, caller: Caller, args: LogArgs) -> dict[str, Any]:
    """Record something that happened today in the daily log.

    An event, a result, what the user said. For a lasting fact or preference use
    memory_remember instead; it is not checked against what is already known.
    """
    doc = await DailyLog(parts.memory).log(
        args.content,
        source=args.source,
        tags=args.tags,
        score=args.score,
        session=args.session or caller.session,
    )
    return public(doc)


class ContentArgs(BaseModel):
    """Arguments of ``memory_remember``."""

    content: str = Field(description="The fact, preference or note, self-contained.")
    tags: Tags = None
    source: Source = Field(
        default="agent", description="Who it comes from.", json_schema_extra=not_for_agent()
    )


class NoteArgs(ContentArgs):
    """Arguments of ``memory_note``."""

    score: Annotated[float, SCORE.field("How important, 0 to 1.")] = 0.5


def _outcomes(summary: RememberSummary) -> str:
    return "; ".join(
        f"{o['action']} belief {o['id']}"
        + (f" (replaces {o['previous']})" if o["previous"] else "")
        for o in summary["beliefs"]
    )


@operation(read_only=False, brief=_outcomes, memory="upsert_memory")
async def memory_remember(parts: Parts, caller: Caller, args: ContentArgs) -> RememberSummary:
    """Learn a lasting fact or preference, checked against what is already believed.

    The same fact again reinforces the belief held; a contradicting one ("the NAS has
    16 TB" after "12 TB") supersedes it, so the old value never reaches a context.
    Returns each belief's ``id`` and ``action`` (created, reinforced, superseded).
    """
    report = await parts.beliefs(caller.llm).remember(
        args.content,
        source=args.source,
        tags=args.tags,
        session=caller.session,
        now=caller.clock(),
    )
    return report.summary()


@operation(read_only=False, brief=lambda r: f"noted {r['id']}", memory="create_memory")
async def memory_note(parts: Parts, caller: Caller, args: NoteArgs) -> dict[str, Any]:
    """Keep a plain long-term note as written, with no belief checks.

    For a reference, a procedure or a summary. A fact that can change belongs in
    memory_remember. Returns its ``id``, which memory_forget takes.
    """
    doc = await LongTermMemory(parts.memory).add(
        args.content, source=args.source, tags=args.tags, score=args.score
    )
    return public(doc)


class IdArgs(BaseModel):
    """Arguments of ``memory_get``."""

    id: str = Field(description="The memory's id, as memory_search returns it.")


class ForgetArgs(BaseModel):
    """Arguments of ``memory_forget``: one memory by ``id``, or all ``about`` a subject."""

    id: str | None = Field(
        default=None, description="The memory's id, as memory_search returns it."
    )
    about: str | None = Field(
        default=None,
        max_length=MAX_DESCRIPTION,
        description="Forget every memory whose subject is this person or thing (or one of "
        "its aliases); not those that only share something with it.",
    )
    preview: bool = Field(
        default=False, description="List what would be forgotten; change nothing."
    )

    @model_validator(mode="after")
    def _one_target(self) -> ForgetArgs:
        if (self.id is None) == (self.about is None):
            raise ValueError("give either id or about")
        return self


class Forgotten(BaseModel):
    """What was forgotten: one memory (``forgotten`` its id), or all about a subject.

    With ``about``, ``forgotten`` is the subject, ``kind`` is ``about`` and ``items`` the
    memories (each ``id``, ``kind``, ``content``); ``checkpoint`` the one taken before.
    """

    forgotten: str
    kind: str
    items: list[dict[str, str]] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list)
    preview: bool = False
    checkpoint: str | None = None


def _forgotten_text(done: Forgotten) -> str:
    if done.kind != "about":
        return f"forgot {done.kind} {done.forgotten}"
    verb = "would forget" if done.preview else "forgot"
    return f"{verb} {len(done.items)} memories about {done.forgotten}"


@operation(read_only=False, brief=_forgotten_text, memory="delete_memory")
async def memory_forget(parts: Parts, caller: Caller, args: ForgetArgs) -> Forgotten:
    """Forget a memory that is wrong or unwanted, by id, or everything about a subject.

    ``about`` forgets every belief, note and entry whose subject is that person or thing
    (or an alias the graph knows), never one that merely shares something with it. A
    belief is kept in its history but never recalled again; a note or an entry is
    deleted (by id) or marked forgotten (about). Journaled: a rollback brings it back.
    """
    if args.about is not None:
        return await _forget_about(parts, caller, args.about, args.preview)
    memory, id_ = parts.memory, check_id(args.id or "", "memory id")
    if args.preview:
        item = await memory_get(parts, caller, IdArgs(id=id_))
        content = str(item.memory.get("content", ""))
        return Forgotten(
            forgotten=id_,
            kind=item.kind,
            items=[{"id": id_, "kind": item.kind, "content": content}],
            preview=True,
        )
    if await memory.client.exists(memory.keys.belief(id_)):
        await parts.beliefs().forget(id_)
        return Forgotten(forgotten=id_, kind="belief")
    if await memory.client.exists(memory.keys.longterm(id_)):
        await LongTermMemory(memory).delete(id_)
        return Forgotten(forgotten=id_, kind="longterm")
    doc = (await memory.get_docs([memory.keys.daily_entry(id_)]))[0]
    if doc is None:
        raise NotFoundError(f"no memory {id_!r}")
    removal = DailyLog(memory).removal(date.fromisoformat(doc["day"]), [doc], whole_day=False)
    await memory.store.apply(removal, "memory.forget")
    return Forgotten(forgotten=id_, kind="daily")


async def _forget_about(parts: Parts, caller: Caller, about: str, preview: bool) -> Forgotten:
    revisions = Revisions(parts.beliefs(caller.llm))
    planned = await revisions.forget_about(about, preview=True, now=caller.clock())
    checkpoint = None
    if not preview and planned.touched:
        taken = await parts.checkpoints.create(
            label=f"before forgetting {about.strip()[:60]}", reason="pre-forget", actor=caller.actor
        )
        checkpoint = taken.id
        planned = await revisions.forget_about(about, now=caller.clock())
    return Forgotten(
        forgotten=about.strip(),
        kind="about",
        items=[t.to_dict() for t in planned.touched],
        names=planned.names,
        preview=preview,
        checkpoint=checkpoint,
    )


class ReplaceArgs(BaseModel):
    """Arguments of ``memory_replace``."""

    target: str = Field(
        min_length=1,
        max_length=MAX_DESCRIPTION,
        description="What to replace: a memory's id, or a description of the fact "
        '("my employer", "Marta\'s phone number", "where I live").',
    )
    content: str = Field(min_length=1, description="The new fact, self-contained.")
    preview: bool = Field(default=False, description="List what would be replaced; change nothing.")
    source: Source = Field(
        default="agent", description="Who it comes from.", json_schema_extra=not_for_agent()
    )


class Replaced(BaseModel):
    """What ``memory_replace`` retired (each ``id``, ``kind``, ``content``) and the new belief.

    ``subject`` and ``attribute`` say what it read the target as; ``belief`` and ``entry``
    are the new fact's belief and daily entry (``None`` in a preview).
    """

    replaced: list[dict[str, str]]
    subject: str
    attribute: str
    belief: str | None = None
    entry: str | None = None
    preview: bool = False
    checkpoint: str | None = None


def _replaced_text(done: Replaced) -> str:
    ids = ", ".join(r["id"] for r in done.replaced) or "nothing"
    if done.preview:
        return f"would replace {ids} ({done.subject}: {done.attribute})"
    return f"replaced {ids} with belief {done.belief}"


@operation(read_only=False, brief=_replaced_text, memory="update_memory")
async def memory_replace(parts: Parts, caller: Caller, args: ReplaceArgs) -> Replaced:
    """Replace what is known about one thing with a new fact ("my employer" -> this).

    Retires every belief, log entry and note that states the described attribute of that
    subject (not what is said about other things), links them to the new belief in
    history, and records the new fact: one journaled change that a rollback undoes whole.
    """
    revisions = Revisions(parts.beliefs(caller.llm))
    checkpoint = None
    if not args.preview:  # a target that names nothing is refused before any write
        await revisions.replace(args.target, args.content, preview=True, now=caller.clock())
        taken = await parts.checkpoints.create(
            label=f"before replacing {args.target.strip()[:60]}",
            reason="pre-replace",
            actor=caller.actor,
        )
        checkpoint = taken.id
    done = await revisions.replace(
        args.target,
        args.content,
        preview=args.preview,
        source=args.source,
        session=caller.session,
        now=caller.clock(),
    )
    return Replaced(
        replaced=[t.to_dict() for t in done.touched],
        subject=done.subject,
        attribute=done.attribute,
        belief=done.belief,
        entry=done.entry,
        preview=args.preview,
        checkpoint=checkpoint,
    )


class MemoryItem(BaseModel):
    """One memory document as stored (its vector left out)."""

    id: str
    kind: str
    memory: dict[str, Any]


@operation(read_only=True, agent=False, memory="search_memory")
async def memory_get(parts: Parts, caller: Caller, args: IdArgs) -> MemoryItem:
    """One memory by id: a daily entry, a long-term note or a belief, with every field."""
    memory, id_ = parts.memory, check_id(args.id, "memory id")
    keys = memory.keys
    candidates = [
        ("belief", keys.belief(id_)),
        ("longterm", keys.longterm(id_)),
        ("daily", keys.daily_entry(id_)),
    ]
    docs = await memory.get_docs([key for _, key in candidates])
    for (kind, _), doc in zip(candidates, docs, strict=True):
        if doc is not None:
            return MemoryItem(id=id_, kind=kind, memory=public(doc))
    raise NotFoundError(f"no memory {id_!r}")


class PadArgs(BaseModel):
    """Arguments of ``scratchpad_get``."""

    id: str = Field(description="The scratchpad's name.")


class Pad(BaseModel):
    """A scratchpad's value (``None``: never set, or expired) and seconds left."""

    id: str
    value: str | None = None
    ttl_s: int | None = None


def _pad_text(pad: Pad) -> str:
    if pad.value is None:
        return f"scratchpad {pad.id} is empty or expired"
    return pad.value


@operation(read_only=True, brief=_pad_text)
async def scratchpad_get(parts: Parts, caller: Caller, args: PadArgs) -> Pad:
    """Read a scratchpad: short-lived working notes for the task at hand.

    ``value`` is null when it was never set or has expired.
    """
    return Pad(id=args.id, value=await Scratchpads(parts.memory).get(args.id))


class PadSetArgs(BaseModel):
    """Arguments of ``scratchpad_set``."""

    id: str = Field(description="The scratchpad's name.")
    value: str = Field(description="The notes to keep (replaces the old ones).")
    ttl_s: Annotated[
        int | None,
        TTL_S.field(
            "Seconds until it expires (default 3600).", extra=for_the_cli(flags=("--ttl",))
        ),
    ] = None


@operation(read_only=False, brief=lambda r: f"scratchpad {r.id} set")
async def scratchpad_set(parts: Parts, caller: Caller, args: PadSetArgs) -> Pad:
    """Write working notes that expire (default after one hour).

    Not part of memory: never searched, not rolled back.
    """
    memory = parts.memory
    await Scratchpads(memory).set(args.id, args.value, args.ttl_s)
    ttl: Any = await memory.client.ttl(memory.keys.scratchpad(args.id))
    return Pad(id=args.id, value=args.value, ttl_s=int(ttl))


class DayArgs(BaseModel):
    """Arguments of ``memory_day``."""

    day: date = Field(description="The day (YYYY-MM-DD, UTC).")
    offset: int = Field(default=0, ge=0, description="Skip this many of the day's entries.")
    limit: int | None = Field(
        default=None, ge=1, le=1000, description="At most this many (default: the whole day)."
    )


class DayEntries(BaseModel):
    """One day's log entries, in order."""

    day: date
    entries: list[dict[str, Any]]
    total: int = Field(default=0, description="the day's entries in all")


@operation(read_only=True, agent=False)
async def memory_day(parts: Parts, caller: Caller, args: DayArgs) -> DayEntries:
    """One day's daily-log entries in order: the memory's timeline of that day (or a page)."""
    daily = DailyLog(parts.memory)
    if args.limit is None and not args.offset:
        docs = await daily.list_day(args.day)
        total = len(docs)
    else:
        docs, total = await daily.page_day(args.day, args.offset, args.limit or 1000)
    return DayEntries(day=args.day, entries=[public(d) for d in docs], total=total)


class Notes(BaseModel):
    """Long-term notes (public fields), in id order."""

    notes: list[dict[str, Any]]


@operation(read_only=True, agent=False)
async def memory_notes(parts: Parts, caller: Caller, args: NoArgs) -> Notes:
    """Every long-term note, oldest first."""
    notes = LongTermMemory(parts.memory)
    return Notes(notes=[public(await notes.get(i)) for i in await notes.ids()])


class NoteIdArgs(BaseModel):
    """Arguments of ``memory_note_delete``."""

    id: str = Field(description="The long-term note's id.")


class Deleted(BaseModel):
    """What was deleted."""

    deleted: str


@operation(read_only=False, agent=False, memory="delete_memory")
async def memory_note_delete(parts: Parts, caller: Caller, args: NoteIdArgs) -> Deleted:
    """Delete one long-term note (journaled: a rollback restores it)."""
    await LongTermMemory(parts.memory).delete(check_id(args.id, "memory id"))
    return Deleted(deleted=args.id)


class FlushArgs(BaseModel):
    """Arguments of ``memory_notes_flush``."""

    confirm: bool = Field(description="Must be true: every long-term note is deleted.")


class Flushed(BaseModel):
    """How many long-term notes were deleted."""

    flushed: int


@operation(read_only=False, agent=False, memory="delete_memory")
async def memory_notes_flush(parts: Parts, caller: Caller, args: FlushArgs) -> Flushed:
    """Delete every long-term note, after a checkpoint (a rollback to it restores them)."""
    flushed = await LongTermMemory(parts.memory).flush(
        confirm=args.confirm, checkpoints=parts.checkpoints, actor=caller.actor
    )
    return Flushed(flushed=flushed)


class SessionArgs(BaseModel):
    """Arguments of ``memory_episodes``."""

    session: str = Field(min_length=1, max_length=128, description="The chat session.")


class EpisodeList(BaseModel):
    """A session's tool calls, in order (``tool``, ``success``, ``duration_ms``...)."""

    episodes: list[dict[str, Any]]


@operation(read_only=True, agent=False)
async def memory_episodes(parts: Parts, caller: Caller, args: SessionArgs) -> EpisodeList:
    """The tool calls of a chat session, in order, with their outcome and duration."""
    found = await Episodes(parts.memory).list(args.session)
    return EpisodeList(episodes=[dict(e) for e in found])


class PadDeleted(BaseModel):
    """Whether the scratchpad existed."""

    id: str
    deleted: bool


@operation(read_only=False, agent=False)
async def scratchpad_delete(parts: Parts, caller: Caller, args: PadArgs) -> PadDeleted:
    """Delete a scratchpad (``deleted`` false: it was missing or expired)."""
    return PadDeleted(id=args.id, deleted=await Scratchpads(parts.memory).delete(args.id))

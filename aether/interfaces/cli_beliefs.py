"""``aether remember``, ``belief ...`` and ``questions``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

import typer

from aether.interfaces.cli_memory import memory
from aether.interfaces.common import (
    AppState,
    JsonOpt,
    arguments,
    call,
    emit,
    group,
    human,
    local_time,
    plural,
    print_fields,
    read_operator_zone,
    run,
    state,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.memory.knowledge.beliefs import Beliefs, Reflection
from aether.memory.storage.records import MemoryDoc
from aether.memory.storage.status import BeliefStatus
from aether.operations import memory as memory_ops
from aether.operations import ranges

belief_app = group("Beliefs: confidence, decay, reinforcement, supersession.")
STATUS_HELP = "active, superseded, forgotten, pruned or all."
THRESHOLD_HELP = "Effective confidence under which to prune (default 0.1)."


@asynccontextmanager
async def beliefs(st: AppState) -> AsyncIterator[Beliefs]:
    """The beliefs of the invocation's namespace (with the LLM when one is configured)."""
    from aether.runtime.llm import LLMClient

    llm = LLMClient.from_settings(st.settings)
    async with memory(st) as layer:
        try:
            yield Beliefs(layer, st.settings.beliefs, llm)
        finally:
            if llm is not None:
                await llm.aclose()


BELIEF_COLUMNS: list[Column[MemoryDoc]] = [
    Column("id", lambda b: b["id"], whole=True),
    Column("confidence", lambda b: f"{b['effective_confidence']:.2f}", justify="right"),
    Column("status", lambda b: b.get("status")),
    Column("type", lambda b: b.get("type")),
    Column("statement", lambda b: b["content"]),
]


def remember(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="What to remember.")],
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeat).")] = None,
    json_: JsonOpt = False,
) -> None:
    """Log TEXT and fold its beliefs into memory.

    Each belief in TEXT is created, or reinforces or supersedes one already held.
    """
    args = arguments(ctx, memory_ops.ContentArgs, content=text, tags=tag, source="user")
    data = call(ctx, memory_ops.memory_remember, args, llm=True)
    emit(
        data,
        wants_json(ctx, json_),
        lambda: [
            print(
                f"{o['action']} {o['id']}"
                + (f" (was {o['previous']})" if o["previous"] else "")
                + f": {o['statement']}"
            )
            for o in data["beliefs"]
        ],
    )


@belief_app.command("list")
def belief_list(
    ctx: typer.Context,
    status: Annotated[
        Literal[BeliefStatus, "all"], typer.Option("--status", help="Which beliefs.")
    ] = "active",
    json_: JsonOpt = False,
) -> None:
    """Beliefs, highest effective confidence first."""
    st = state(ctx)

    async def body() -> list[MemoryDoc]:
        async with beliefs(st) as b:
            return await b.select(None if status == "all" else status)

    emit_table(run(ctx, body), wants_json(ctx, json_), BELIEF_COLUMNS, empty="no beliefs")


@belief_app.command("show")
def belief_show(ctx: typer.Context, belief_id: str, json_: JsonOpt = False) -> None:
    """One belief (by id or unique prefix)."""
    st = state(ctx)

    async def body() -> tuple[dict[str, object], ZoneInfo]:
        async with beliefs(st) as b:
            doc = await b.get(belief_id)
            zone = await read_operator_zone(b.layer.client, b.keys)
            return {**doc, "effective_confidence": round(b.effective(doc), 4)}, zone

    doc, zone = run(ctx, body)
    emit(doc, wants_json(ctx, json_), lambda: print_fields(_shown(doc), zone))


def _shown(doc: Mapping[str, object]) -> dict[str, object]:
    """A belief for people: its vector is for machines."""
    return {k: v for k, v in doc.items() if k != "embedding"}


@belief_app.command("history")
def belief_history(ctx: typer.Context, belief_id: str, json_: JsonOpt = False) -> None:
    """A belief's changes: create, reinforce, contradict, forget, prune."""
    st = state(ctx)

    async def body() -> tuple[list[dict[str, object]], ZoneInfo]:
        async with beliefs(st) as b:
            return await b.history(belief_id), await read_operator_zone(b.layer.client, b.keys)

    changes, zone = run(ctx, body)
    columns: list[Column[dict[str, object]]] = [
        Column("when", lambda e: _when(e.get("at"), zone), whole=True),
        Column("change", lambda e: e["type"]),
        Column("details", lambda e: _details(e, zone)),
    ]
    emit_table(changes, wants_json(ctx, json_), columns, empty="no changes recorded")


def _when(at: object, zone: ZoneInfo) -> str | None:
    return local_time(at, zone) if isinstance(at, int | float) and at else None


def _details(change: Mapping[str, object], zone: ZoneInfo) -> str:
    """A change's other fields as a person reads them (lists joined, nothing left out)."""
    shown = sorted((k, v) for k, v in change.items() if k not in ("type", "at"))
    return "  ".join(f"{k} {human(k, v, zone)}" for k, v in shown if v not in (None, "", []))


@belief_app.command("forget")
def belief_forget(ctx: typer.Context, belief_id: str, json_: JsonOpt = False) -> None:
    """Forget a belief (soft: it stays in history, never reaches a context)."""
    st = state(ctx)

    async def body() -> MemoryDoc:
        async with beliefs(st) as b:
            return await b.forget(belief_id)

    doc = run(ctx, body)
    emit({"forgotten": doc["id"]}, wants_json(ctx, json_), lambda: print(f"forgot {doc['id']}"))


@belief_app.command("prune")
def belief_prune(
    ctx: typer.Context,
    threshold: Annotated[
        float | None,
        ranges.CONFIDENCE.option("--threshold", help="Effective confidence under which to prune."),
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Prune active beliefs whose effective confidence fell under the threshold (0.1)."""
    st = state(ctx)

    async def body() -> list[str]:
        async with beliefs(st) as b:
            return await b.prune(threshold)

    ids = run(ctx, body)
    emit(
        {"pruned": ids},
        wants_json(ctx, json_),
        lambda: print(f"pruned {plural(len(ids), 'belief')}"),
    )


@belief_app.command("reflect")
def belief_reflect(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Near-duplicate clusters and stale beliefs."""
    st = state(ctx)

    async def body() -> Reflection:
        async with beliefs(st) as b:
            return await b.reflect()

    data = run(ctx, body)

    def render() -> None:
        print(f"{data['active']} active beliefs")
        for cluster in data["duplicates"]:
            print("near-duplicates: " + ", ".join(cluster))
        print(f"stale (open questions): {', '.join(data['stale']) or 'none'}")

    emit(data, wants_json(ctx, json_), render)


@belief_app.command("stats")
def belief_stats(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Counts by status and type, mean effective confidence, the confidence tiers."""
    st = state(ctx)

    async def body() -> dict[str, object]:
        async with beliefs(st) as b:
            return await b.stats()

    data = run(ctx, body)
    emit(data, wants_json(ctx, json_), lambda: print_fields(data))


def questions(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Open questions: beliefs held with confidence under 0.5."""
    st = state(ctx)

    async def body() -> list[MemoryDoc]:
        async with beliefs(st) as b:
            return await b.questions()

    columns = [*BELIEF_COLUMNS[:2], Column("open question", lambda b: f"{b['content']}?")]
    emit_table(run(ctx, body), wants_json(ctx, json_), columns, empty="no open questions")

"""``aether remember``, ``belief ...`` and ``questions``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

import typer

from aether.interfaces.common import (
    JsonOpt,
    about,
    arguments,
    call,
    call_in_zone,
    emit,
    group,
    human,
    local_time,
    plural,
    print_fields,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.memory.storage.records import MemoryDoc
from aether.memory.storage.status import BeliefStatus, Status
from aether.operations import beliefs as belief_ops
from aether.operations import memory as memory_ops
from aether.operations import ranges
from aether.operations.base import NoArgs
from aether.operations.beliefs import BeliefIdArgs, BeliefListArgs, PruneArgs

belief_app = group("Beliefs: confidence, decay, reinforcement, supersession.")
STATUS_HELP = "active, superseded, forgotten, pruned or all."
THRESHOLD_HELP = "Effective confidence under which to prune (default 0.1)."


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
    ] = Status.ACTIVE.value,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=2000, help=about(BeliefListArgs, "limit"))
    ] = 200,
    json_: JsonOpt = False,
) -> None:
    """Beliefs, highest effective confidence first."""
    args = arguments(ctx, BeliefListArgs, status=status, limit=limit)
    found = call(ctx, belief_ops.belief_list, args)
    emit_table(found.beliefs, wants_json(ctx, json_), BELIEF_COLUMNS, empty="no beliefs")


@belief_app.command("show")
def belief_show(ctx: typer.Context, belief_id: str, json_: JsonOpt = False) -> None:
    """One belief (by id or unique prefix)."""
    args = arguments(ctx, BeliefIdArgs, id=belief_id)
    detail, zone = call_in_zone(ctx, belief_ops.belief_show, args)
    emit(detail.belief, wants_json(ctx, json_), lambda: print_fields(detail.belief, zone))


@belief_app.command("history")
def belief_history(ctx: typer.Context, belief_id: str, json_: JsonOpt = False) -> None:
    """A belief's changes: create, reinforce, contradict, forget, prune."""
    args = arguments(ctx, BeliefIdArgs, id=belief_id)
    detail, zone = call_in_zone(ctx, belief_ops.belief_show, args)
    columns: list[Column[dict[str, object]]] = [
        Column("when", lambda e: _when(e.get("at"), zone), whole=True),
        Column("change", lambda e: e["type"]),
        Column("details", lambda e: _details(e, zone)),
    ]
    emit_table(detail.history, wants_json(ctx, json_), columns, empty="no changes recorded")


def _when(at: object, zone: ZoneInfo) -> str | None:
    return local_time(at, zone) if isinstance(at, int | float) and at else None


def _details(change: Mapping[str, object], zone: ZoneInfo) -> str:
    """A change's other fields as a person reads them (lists joined, nothing left out)."""
    shown = sorted((k, v) for k, v in change.items() if k not in ("type", "at"))
    return "  ".join(f"{k} {human(k, v, zone)}" for k, v in shown if v not in (None, "", []))


@belief_app.command("forget")
def belief_forget(ctx: typer.Context, belief_id: str, json_: JsonOpt = False) -> None:
    """Forget a belief (soft: it stays in history, never reaches a context)."""
    args = arguments(ctx, BeliefIdArgs, id=belief_id)
    done = call(ctx, belief_ops.belief_forget, args)
    emit(done.model_dump(), wants_json(ctx, json_), lambda: print(f"forgot {done.forgotten}"))


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
    done = call(ctx, belief_ops.belief_prune, arguments(ctx, PruneArgs, threshold=threshold))
    emit(
        done.model_dump(),
        wants_json(ctx, json_),
        lambda: print(f"pruned {plural(len(done.pruned), 'belief')}"),
    )


@belief_app.command("reflect")
def belief_reflect(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Near-duplicate clusters and stale beliefs."""
    data = call(ctx, belief_ops.belief_reflect, NoArgs())

    def render() -> None:
        print(f"{data['active']} active beliefs")
        for cluster in data["duplicates"]:
            print("near-duplicates: " + ", ".join(cluster))
        print(f"stale (open questions): {', '.join(data['stale']) or 'none'}")

    emit(data, wants_json(ctx, json_), render)


@belief_app.command("stats")
def belief_stats(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Counts by status and type, mean effective confidence, the confidence tiers."""
    data = call(ctx, belief_ops.belief_stats, NoArgs())
    emit(data, wants_json(ctx, json_), lambda: print_fields(data))


def questions(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Open questions: beliefs held with confidence under 0.5."""
    found = call(ctx, belief_ops.belief_list, BeliefListArgs(status=Status.ACTIVE.value))
    columns = [*BELIEF_COLUMNS[:2], Column("open question", lambda b: f"{b['content']}?")]
    emit_table(found.questions, wants_json(ctx, json_), columns, empty="no open questions")

"""``aether remember``, ``belief ...`` and ``questions``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo

import typer

from aether.interfaces.commands import Out, build, command
from aether.interfaces.common import (
    JsonOpt,
    call,
    group,
    human,
    local_time,
    plural,
    print_fields,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.memory.knowledge.beliefs import Reflection, RememberSummary
from aether.memory.knowledge.valid_time import window_text
from aether.memory.storage.status import Status
from aether.operations import beliefs as belief_ops
from aether.operations import memory as memory_ops
from aether.operations.beliefs import BeliefListArgs

belief_app = group(
    "Beliefs: confidence, decay, reinforcement, supersession.",
    order=("list", "show", "history", "forget", "prune", "reflect", "stats"),
)
STATUS_HELP = "active, superseded, forgotten, pruned or all."
THRESHOLD_HELP = "Effective confidence under which to prune (default 0.1)."


BELIEF_COLUMNS: list[Column[dict[str, Any]]] = [
    Column("id", lambda b: b["id"], whole=True),
    Column("confidence", lambda b: f"{b['effective_confidence']:.2f}", justify="right"),
    Column("status", lambda b: b.get("status")),
    Column("type", lambda b: b.get("type")),
    Column("valid", window_text),
    Column("statement", lambda b: b["content"]),
]


def _remembered(data: RememberSummary, out: Out[RememberSummary]) -> None:
    def render() -> None:
        for o in data["beliefs"]:
            was = f" (was {o['previous']})" if o["previous"] else ""
            print(f"{o['action']} {o['id']}{was}: {o['statement']}")

    out.emit(data, render)


remember = build(
    memory_ops.memory_remember,
    _remembered,
    positional={"content": "text"},
    fixed={"source": "user"},
    llm=True,
    help="Log TEXT and fold its beliefs into memory.\n\n"
    "Each belief in TEXT is created, or reinforces or supersedes one already held.",
)
ID = {"id": "belief_id"}


@command(belief_app, "list", belief_ops.belief_list)
def _beliefs(found: belief_ops.BeliefList, out: Out[belief_ops.BeliefList]) -> None:
    """Beliefs, highest effective confidence first."""
    stated = any(window_text(b) for b in found.beliefs)  # the valid column only when one says
    columns = [c for c in BELIEF_COLUMNS if stated or c.header != "valid"]
    out.table(found.beliefs, columns, empty="no beliefs")


@command(belief_app, "show", belief_ops.belief_show, positional=ID, zone=True)
def _belief(detail: belief_ops.BeliefDetail, out: Out[belief_ops.BeliefDetail]) -> None:
    """One belief (by id or unique prefix)."""
    out.emit(detail.belief, lambda: print_fields(detail.belief, out.zone))


@command(belief_app, "history", belief_ops.belief_show, positional=ID, zone=True)
def _history(detail: belief_ops.BeliefDetail, out: Out[belief_ops.BeliefDetail]) -> None:
    """A belief's changes: create, reinforce, contradict, forget, prune."""
    columns: list[Column[dict[str, object]]] = [
        Column("when", lambda e: _when(e.get("at"), out.zone), whole=True),
        Column("change", lambda e: e["type"]),
        Column("details", lambda e: _details(e, out.zone)),
    ]
    out.table(detail.history, columns, empty="no changes recorded")


def _when(at: object, zone: ZoneInfo) -> str | None:
    return local_time(at, zone) if isinstance(at, int | float) and at else None


def _details(change: Mapping[str, object], zone: ZoneInfo) -> str:
    """A change's other fields as a person reads them (lists joined, nothing left out)."""
    shown = sorted((k, v) for k, v in change.items() if k not in ("type", "at"))
    return "  ".join(f"{k} {human(k, v, zone)}" for k, v in shown if v not in (None, "", []))


@command(belief_app, "reflect", belief_ops.belief_reflect)
def _reflection(data: Reflection, out: Out[Reflection]) -> None:
    """Near-duplicate clusters and stale beliefs."""

    def render() -> None:
        print(f"{data['active']} active beliefs")
        for cluster in data["duplicates"]:
            print("near-duplicates: " + ", ".join(cluster))
        print(f"stale (open questions): {', '.join(data['stale']) or 'none'}")

    out.emit(data, render)


@command(belief_app, "forget", belief_ops.belief_forget, positional=ID)
def _forgotten(done: belief_ops.BeliefForgotten, out: Out[belief_ops.BeliefForgotten]) -> None:
    """Forget a belief (soft: it stays in history, never reaches a context)."""
    out.emit(done, f"forgot {done.forgotten}")


@command(belief_app, "prune", belief_ops.belief_prune)
def _pruned(done: belief_ops.Pruned, out: Out[belief_ops.Pruned]) -> None:
    """Prune active beliefs whose effective confidence fell under the threshold (0.1)."""
    out.emit(done, f"pruned {plural(len(done.pruned), 'belief')}")


@command(belief_app, "stats", belief_ops.belief_stats)
def _stats(data: dict[str, Any], out: Out[dict[str, Any]]) -> None:
    """Counts by status and type, mean effective confidence, the confidence tiers."""
    out.emit(data, lambda: print_fields(data))


def questions(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Open questions: beliefs held with confidence under 0.5."""
    found = call(ctx, belief_ops.belief_list, BeliefListArgs(status=Status.ACTIVE.value))
    columns = [*BELIEF_COLUMNS[:2], Column("open question", lambda b: f"{b['content']}?")]
    emit_table(found.questions, wants_json(ctx, json_), columns, empty="no open questions")

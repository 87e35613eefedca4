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
from aether.memory.storage.status import Status
from aether.operations import beliefs as belief_ops
from aether.operations import memory as memory_ops
from aether.operations.beliefs import BeliefListArgs

belief_app = group("Beliefs: confidence, decay, reinforcement, supersession.")
STATUS_HELP = "active, superseded, forgotten, pruned or all."
THRESHOLD_HELP = "Effective confidence under which to prune (default 0.1)."


BELIEF_COLUMNS: list[Column[dict[str, Any]]] = [
    Column("id", lambda b: b["id"], whole=True),
    Column("confidence", lambda b: f"{b['effective_confidence']:.2f}", justify="right"),
    Column("status", lambda b: b.get("status")),
    Column("type", lambda b: b.get("type")),
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


def _beliefs(found: belief_ops.BeliefList, out: Out[belief_ops.BeliefList]) -> None:
    out.table(found.beliefs, BELIEF_COLUMNS, empty="no beliefs")


def _belief(detail: belief_ops.BeliefDetail, out: Out[belief_ops.BeliefDetail]) -> None:
    out.emit(detail.belief, lambda: print_fields(detail.belief, out.zone))


def _history(detail: belief_ops.BeliefDetail, out: Out[belief_ops.BeliefDetail]) -> None:
    columns: list[Column[dict[str, object]]] = [
        Column("when", lambda e: _when(e.get("at"), out.zone), whole=True),
        Column("change", lambda e: e["type"]),
        Column("details", lambda e: _details(e, out.zone)),
    ]
    out.table(detail.history, columns, empty="no changes recorded")


command(
    belief_app,
    "list",
    belief_ops.belief_list,
    _beliefs,
    help="Beliefs, highest effective confidence first.",
)
command(
    belief_app,
    "show",
    belief_ops.belief_show,
    _belief,
    positional=ID,
    zone=True,
    help="One belief (by id or unique prefix).",
)
command(
    belief_app,
    "history",
    belief_ops.belief_show,
    _history,
    positional=ID,
    zone=True,
    help="A belief's changes: create, reinforce, contradict, forget, prune.",
)


def _when(at: object, zone: ZoneInfo) -> str | None:
    return local_time(at, zone) if isinstance(at, int | float) and at else None


def _details(change: Mapping[str, object], zone: ZoneInfo) -> str:
    """A change's other fields as a person reads them (lists joined, nothing left out)."""
    shown = sorted((k, v) for k, v in change.items() if k not in ("type", "at"))
    return "  ".join(f"{k} {human(k, v, zone)}" for k, v in shown if v not in (None, "", []))


def _reflection(data: Reflection, out: Out[Reflection]) -> None:
    def render() -> None:
        print(f"{data['active']} active beliefs")
        for cluster in data["duplicates"]:
            print("near-duplicates: " + ", ".join(cluster))
        print(f"stale (open questions): {', '.join(data['stale']) or 'none'}")

    out.emit(data, render)


command(
    belief_app,
    "forget",
    belief_ops.belief_forget,
    lambda done, out: out.emit(done, f"forgot {done.forgotten}"),
    positional=ID,
    help="Forget a belief (soft: it stays in history, never reaches a context).",
)
command(
    belief_app,
    "prune",
    belief_ops.belief_prune,
    lambda done, out: out.emit(done, f"pruned {plural(len(done.pruned), 'belief')}"),
    help="Prune active beliefs whose effective confidence fell under the threshold (0.1).",
)
command(
    belief_app,
    "reflect",
    belief_ops.belief_reflect,
    _reflection,
    help="Near-duplicate clusters and stale beliefs.",
)
command(
    belief_app,
    "stats",
    belief_ops.belief_stats,
    lambda data, out: out.emit(data, lambda: print_fields(data)),
    help="Counts by status and type, mean effective confidence, the confidence tiers.",
)


def questions(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Open questions: beliefs held with confidence under 0.5."""
    found = call(ctx, belief_ops.belief_list, BeliefListArgs(status=Status.ACTIVE.value))
    columns = [*BELIEF_COLUMNS[:2], Column("open question", lambda b: f"{b['content']}?")]
    emit_table(found.questions, wants_json(ctx, json_), columns, empty="no open questions")

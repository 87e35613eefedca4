"""Belief operations for people: list beliefs, and one belief with its history and chain.

The agent holds its beliefs through ``memory_remember`` and ``memory_forget``; these are
how an operator (the console, MCP clients) reads them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from aether.memory.knowledge.beliefs import Reflection
from aether.memory.knowledge.valid_time import holds_at
from aether.memory.storage.records import public
from aether.memory.storage.status import BeliefStatus, Status, is_active, matches
from aether.operations import ranges
from aether.operations.base import AsOf, Caller, NoArgs, ValidAt, operation
from aether.operations.parts import Parts

__all__ = [
    "belief_forget",
    "belief_list",
    "belief_prune",
    "belief_reflect",
    "belief_show",
    "belief_stats",
]


class BeliefListArgs(BaseModel):
    """Arguments of ``belief_list``."""

    status: BeliefStatus | Literal["all"] = Field(
        default=Status.ACTIVE.value, description="Which beliefs."
    )
    limit: int = Field(default=200, ge=1, le=2000, description="At most this many.")
    offset: int = Field(default=0, ge=0, description="Skip this many first (a page).")
    as_of: AsOf = None
    valid_at: ValidAt = None


class BeliefList(BaseModel):
    """Beliefs, highest effective confidence first (with ``effective_confidence``)."""

    beliefs: list[dict[str, Any]]
    questions: list[dict[str, Any]] = Field(description="beliefs too uncertain to rely on")
    total: int = Field(default=0, description="the beliefs of that status in all")


@operation(read_only=True, agent=False, memory="search_memory")
async def belief_list(parts: Parts, caller: Caller, args: BeliefListArgs) -> BeliefList:
    """The beliefs of one status, highest confidence (after its decay) first.

    With the open questions: beliefs too uncertain to rely on. With ``valid_at``, the
    beliefs true at that time, active or superseded since (``status`` other than
    ``active`` or ``all`` narrows them).
    """
    beliefs = parts.beliefs()
    now = caller.clock()
    every = await beliefs.select(None, now)  # one pass over the beliefs for both lists
    if args.valid_at is not None:
        held = [Status.ACTIVE.value, Status.SUPERSEDED.value]
        if args.status not in ("all", Status.ACTIVE.value):
            held = [args.status]
        found = [
            b
            for b in holds_at(every, args.valid_at)  # all: a successor ends a window
            if any(matches(b.get("status"), s) for s in held)
        ]
    else:
        found = [b for b in every if args.status == "all" or b.get("status") == args.status]
    page = found[args.offset : args.offset + args.limit]
    shown = [_shown(b, beliefs.effective(b, now)) for b in page]
    uncertain = parts.settings.beliefs.uncertain_at
    questions = [
        _shown(b, beliefs.effective(b, now))
        for b in every
        if is_active(b.get("status")) and beliefs.effective(b, now) < uncertain
    ]
    return BeliefList(beliefs=shown, questions=questions, total=len(found))


class BeliefIdArgs(BaseModel):
    """Arguments of ``belief_forget``."""

    id: str = Field(description="A belief id or a unique prefix.")


class BeliefShowArgs(BeliefIdArgs):
    """Arguments of ``belief_show``."""

    as_of: AsOf = None


class BeliefDetail(BaseModel):
    """One belief, its recorded changes, and the chain of what superseded what."""

    belief: dict[str, Any]
    history: list[dict[str, Any]]
    chain: list[dict[str, Any]] = Field(description="oldest first, this belief among them")


@operation(read_only=True, agent=False)
async def belief_show(parts: Parts, caller: Caller, args: BeliefShowArgs) -> BeliefDetail:
    """One belief with its confidence after decay, its history and its chain.

    The history: created, reinforced, contradicted, forgotten. The chain: the beliefs it
    superseded or was superseded by, oldest first.
    """
    beliefs = parts.beliefs()
    now = caller.clock()
    doc = await beliefs.get(args.id)
    chain = [doc]
    seen = {str(doc.get("id"))}
    for direction in ("supersedes", "superseded_by"):
        current = doc
        while (next_id := current.get(direction)) and str(next_id) not in seen and len(seen) < 50:
            try:
                current = await beliefs.get(str(next_id))
            except Exception:  # noqa: BLE001 - a link to a belief since removed ends the chain
                break
            seen.add(str(next_id))
            chain.insert(0, current) if direction == "supersedes" else chain.append(current)
    return BeliefDetail(
        belief=_shown(doc, beliefs.effective(doc, now)),
        history=await beliefs.history(str(doc["id"])),
        chain=[_shown(b, beliefs.effective(b, now)) for b in chain],
    )


def _shown(doc: Any, effective: float) -> dict[str, Any]:
    return {**public(doc), "effective_confidence": round(effective, 4)}


class BeliefForgotten(BaseModel):
    """A belief forgotten."""

    forgotten: str


@operation(read_only=False, agent=False, memory="delete_memory")
async def belief_forget(parts: Parts, caller: Caller, args: BeliefIdArgs) -> BeliefForgotten:
    """Forget a belief (soft: it stays in history, never reaches a context).

    Journaled: a checkpoint rollback brings it back.
    """
    doc = await parts.beliefs().forget(args.id, caller.clock())
    return BeliefForgotten(forgotten=str(doc["id"]))


class PruneArgs(BaseModel):
    """Arguments of ``belief_prune``."""

    threshold: float | None = Field(
        default=None,
        ge=ranges.CONFIDENCE.low,
        le=ranges.CONFIDENCE.high,
        description="Effective confidence under which to prune (default: the settings').",
    )


class Pruned(BaseModel):
    """The beliefs pruned."""

    pruned: list[str]


@operation(read_only=False, agent=False)
async def belief_prune(parts: Parts, caller: Caller, args: PruneArgs) -> Pruned:
    """Prune active beliefs whose effective confidence fell under the threshold.

    Journaled: a checkpoint rollback brings them back.
    """
    return Pruned(pruned=await parts.beliefs().prune(args.threshold, caller.clock()))


@operation(read_only=True, agent=False)
async def belief_reflect(parts: Parts, caller: Caller, args: NoArgs) -> Reflection:
    """Near-duplicate clusters of active beliefs, and the stale ones (open questions)."""
    return await parts.beliefs().reflect(caller.clock())


@operation(read_only=True, agent=False)
async def belief_stats(parts: Parts, caller: Caller, args: NoArgs) -> dict[str, Any]:
    """Counts by status and type, mean effective confidence, and the confidence tiers."""
    return dict(await parts.beliefs().stats(caller.clock()))

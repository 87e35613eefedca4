"""Decision operations: the agent (or an operator) records what it chose and why.

A decision is a memory of its own kind (``ns:decision:<id>``, in the memory index): a
later search for the subject finds it, so "why did we pick X?" has its answer in the
context. Its outcome is recorded when known.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from aether.memory.storage.records import Decision
from aether.memory.tiers.decisions import DecisionMemory, DecisionOutcome
from aether.operations.base import Caller, operation
from aether.operations.parts import Parts

__all__ = ["decision_outcome", "decision_record"]


class DecisionArgs(BaseModel):
    """Arguments of ``decision_record``."""

    title: str = Field(min_length=1, max_length=200, description="What was to be decided.")
    choice: str = Field(min_length=1, max_length=2000, description="What was chosen.")
    rationale: str = Field(default="", max_length=4000, description="Why, in a sentence or two.")
    scope: str | None = Field(
        default=None, description="Where it applies, e.g. project:api (default: global)."
    )


@operation(
    read_only=False,
    brief=lambda d: f"decision {d['id']} recorded: {d['content']}",
    memory="create_memory",
)
async def decision_record(parts: Parts, caller: Caller, args: DecisionArgs) -> Decision:
    """Record a decision: what was chosen and why, so that later questions find it."""
    memory = DecisionMemory(parts.memory)
    return await memory.record(args.title, args.choice, args.rationale, scope=args.scope)


class OutcomeArgs(BaseModel):
    """Arguments of ``decision_outcome``."""

    id: str = Field(description="The decision's id.")
    outcome: DecisionOutcome = Field(description="How it turned out.")
    note: str = Field(default="", max_length=2000, description="What happened.")


class OutcomeRecorded(BaseModel):
    """The decision whose outcome was recorded."""

    id: str
    outcome: str


@operation(read_only=False, brief=lambda r: f"decision {r.id}: {r.outcome}", memory="update_memory")
async def decision_outcome(parts: Parts, caller: Caller, args: OutcomeArgs) -> OutcomeRecorded:
    """Record how a decision turned out (success, failure, partial, accepted, rejected)."""
    await DecisionMemory(parts.memory).set_outcome(args.id, args.outcome, args.note)
    return OutcomeRecorded(id=args.id, outcome=args.outcome)

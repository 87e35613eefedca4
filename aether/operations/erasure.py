"""Erasure operations: erase a subject everywhere, list past erasures, verify one.

Operator only: never offered to the agent. The CLI (``aether erase``) and MCP clients are
the faces; the work is :class:`aether.checkpoints.erasure.Eraser`'s.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from aether.checkpoints.erasure import pending_view
from aether.checkpoints.erasure_model import MAX_SUBJECT, describe_counts
from aether.memory.knowledge.revision import Revisions
from aether.operations.base import Caller, operation
from aether.operations.parts import Parts

__all__ = ["describe_counts", "erase", "erase_log", "erase_resume", "erase_verify"]


class EraseArgs(BaseModel):
    """Arguments of ``erase``."""

    text: str | None = Field(
        default=None,
        max_length=MAX_SUBJECT,
        description="Erase every item that names this: a name or identifier as a whole "
        "token in any spelling (case, separators, diacritics) and the aliases the graph "
        'knows it by, or a description ("everything about customer Olga Ivanova"); and '
        "whatever is named after it (a chat session, scratchpad or thread of that name).",
    )
    id: str | None = Field(default=None, max_length=200, description="Erase this one item.")
    dry_run: bool = Field(default=False, description="List what would go; change nothing.")

    @model_validator(mode="after")
    def _one_target(self) -> EraseArgs:
        if (self.text is None) == (self.id is None):
            raise ValueError("give either text or id")
        return self


def _erase_brief(result: dict[str, Any]) -> str:
    if result.get("dry_run"):
        return f"would erase {result['total']} item(s); nothing changed"
    return f"erasure {result['id']} done (files: {result['files']})"


@operation(read_only=False, agent=False, brief=_erase_brief, memory="delete_memory")
async def erase(parts: Parts, caller: Caller, args: EraseArgs) -> dict[str, Any]:
    """Erase a subject from every store, history included (or list it with dry_run).

    The text is matched as a whole token in every spelling, with the graph's aliases; a
    description resolves through the graph to the entity it names (``resolved`` says
    how, and warns of the names it does not erase). A checkpoint is taken first; the
    erased items are gone from the state, the journal (so no rollback brings them back),
    the caches, the archive and Redis's files.
    """
    eraser = parts.eraser(caller.actor)
    text, resolved = args.text, {}
    aliases: list[str] = []
    if args.text is not None:
        target = await Revisions(parts.beliefs()).erasure_target(args.text)
        text, aliases = target.text, target.aliases
        resolved = {"text": target.text, "aliases": aliases, "warnings": target.warnings}
    if args.dry_run:
        plan = await eraser.plan(text, args.id, aliases)
        return {"dry_run": True, **plan.to_dict(), **({"resolved": resolved} if resolved else {})}
    report = await eraser.erase(text, args.id, aliases)
    return {**report.to_dict(), **({"resolved": resolved} if resolved else {})}


class LogArgs(BaseModel):
    """Arguments of ``erase_log``."""

    limit: int = Field(default=50, ge=1, le=1000, description="At most this many, newest first.")


class ErasureLog(BaseModel):
    """Past erasures, newest first: when, who, counts, a salted hash of the text.

    ``pending`` is the erasure running or cut short (its id, phase, start and checkpoint),
    if any: until it finishes, writes may wait and rollbacks are refused.
    """

    erasures: list[dict[str, Any]]
    pending: dict[str, Any] | None = None


@operation(read_only=True, agent=False)
async def erase_log(parts: Parts, caller: Caller, args: LogArgs) -> ErasureLog:
    """The erasure records (never their text: a salted hash of it), and any pending one."""
    eraser = parts.eraser(caller.actor)
    return ErasureLog(
        erasures=await eraser.log(args.limit), pending=pending_view(await eraser.pending())
    )


class VerifyArgs(BaseModel):
    """Arguments of ``erase_verify``."""

    text: str = Field(max_length=MAX_SUBJECT, description="The text to look for.")


class Verification(BaseModel):
    """Where a text is still found (empty: nowhere)."""

    clean: bool
    found: list[dict[str, str]]


@operation(read_only=True, agent=False)
async def erase_verify(parts: Parts, caller: Caller, args: VerifyArgs) -> Verification:
    """Look for a text in every key, the journal, Redis's files, the archive and Qdrant."""
    found = await parts.eraser(caller.actor).verify(args.text)
    return Verification(clean=not found, found=[s.to_dict() for s in found])


class ResumeArgs(BaseModel):
    """Arguments of ``erase_resume``."""

    text: str | None = Field(
        default=None,
        max_length=MAX_SUBJECT,
        description="The erased text: needed only when the erasure's key file is gone.",
    )


@operation(read_only=False, agent=False)
async def erase_resume(parts: Parts, caller: Caller, args: ResumeArgs) -> dict[str, Any]:
    """Finish an erasure that a crash cut short (writes wait until it is finished)."""
    report = await parts.eraser(caller.actor).resume(args.text)
    return {"resumed": report is not None, **(report.to_dict() if report else {})}

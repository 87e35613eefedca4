"""Journal operations: verify the hash chain and the live state against it.

Operator only (never an agent tool): the faces are ``aether journal verify`` and MCP. The
work is :class:`aether.checkpoints.chain.JournalChain`'s.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from aether.errors import CheckpointError
from aether.operations.base import Caller, for_the_cli, operation
from aether.operations.parts import Parts

__all__ = ["ChainVerification", "JournalVerifyArgs", "journal_verify"]


class JournalVerifyArgs(BaseModel):
    """Arguments of ``journal_verify``."""

    from_checkpoint: Annotated[
        str | None,
        Field(
            default=None,
            max_length=64,
            description="Check only the history after this checkpoint (an id or a unique "
            "prefix); the live state is always checked whole.",
            json_schema_extra=for_the_cli(flags=("--from",), metavar="CHECKPOINT"),
        ),
    ] = None


class ChainVerification(BaseModel):
    """What ``journal_verify`` found (``ok``: no break)."""

    ok: bool
    entries: int
    keys: int
    start: str
    head: str | None
    legacy: int
    signed: bool
    redactions: list[dict[str, Any]]
    breaks: list[dict[str, Any]]


def _brief(found: ChainVerification) -> str:
    if found.ok:
        return f"journal verified: {found.entries} entries, {found.keys} keys"
    return f"journal broken: {len(found.breaks)} break(s)"


@operation(read_only=True, agent=False, brief=_brief)
async def journal_verify(
    parts: Parts, caller: Caller, args: JournalVerifyArgs
) -> ChainVerification:
    """Recompute the journal's hash chain and the live state's digests against its head.

    Names each break: a state key edited, planted or deleted out of band; an entry forged,
    deleted, reordered or truncated; with a signing key, a head the key did not sign.
    Erasures that re-chained history are listed as redactions, not breaks.
    """
    chain = parts.journal
    if args.from_checkpoint is None:
        report = await chain.verify()
    else:
        checkpoint = await parts.checkpoints.resolve(args.from_checkpoint)
        if not checkpoint.chain:
            raise CheckpointError(
                f"checkpoint {checkpoint.id} was taken before the journal was chained; "
                "verify from a later one, or from the start"
            )
        report = await chain.verify(checkpoint.journal_pos, checkpoint.chain, checkpoint.id)
    return ChainVerification.model_validate(report.to_dict())

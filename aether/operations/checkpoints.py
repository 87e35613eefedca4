"""Checkpoint operations: create, list, show, diff, roll back, undo, prune."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from aether.operations.base import Caller, NoArgs, for_the_cli, not_for_agent, operation
from aether.operations.parts import Parts
from aether.operations.ranges import KEEP

__all__ = [
    "UndoArgs",
    "checkpoint_create",
    "checkpoint_diff",
    "checkpoint_list",
    "checkpoint_prune",
    "checkpoint_rollback",
    "checkpoint_rollbacks",
    "checkpoint_show",
    "checkpoint_undo",
]


CheckpointId = Annotated[
    str,
    Field(
        description="A checkpoint id or a unique prefix (6+ chars).",
        json_schema_extra=for_the_cli(argument="checkpoint_id"),
    ),
]


class CreateArgs(BaseModel):
    """Arguments of ``checkpoint_create``."""

    label: str = Field(
        default="",
        max_length=200,
        description="A name to find it by later.",
        json_schema_extra=for_the_cli(flags=("--label", "-l")),
    )
    reason: str | None = Field(
        default=None,
        max_length=200,
        description="Why it is taken (default: who takes it).",
        json_schema_extra=not_for_agent() | for_the_cli(default="manual"),
    )


@operation(read_only=False, brief=lambda r: f"checkpoint {r['id']} created")
async def checkpoint_create(parts: Parts, caller: Caller, args: CreateArgs) -> dict[str, Any]:
    """Save the agent's whole state now (O(1)), before a risky change.

    checkpoint_rollback returns to it. Returns its ``id``.
    """
    reason = args.reason or caller.actor
    cp = await parts.checkpoints.create(label=args.label, reason=reason, actor=caller.actor)
    return cp.to_dict()


class CheckpointList(BaseModel):
    """The kept checkpoints, newest first."""

    checkpoints: list[dict[str, Any]]


@operation(read_only=True, agent=False)
async def checkpoint_list(parts: Parts, caller: Caller, args: NoArgs) -> CheckpointList:
    """The kept checkpoints, newest first, with their ids, labels and times."""
    return CheckpointList(checkpoints=[c.to_dict() for c in await parts.checkpoints.list()])


class RollbackArgs(BaseModel):
    """Arguments of ``checkpoint_rollback``."""

    id: CheckpointId


@operation(read_only=False, agent=False)
async def checkpoint_rollback(parts: Parts, caller: Caller, args: RollbackArgs) -> dict[str, Any]:
    """Return the agent's whole state to a checkpoint, atomically.

    Everything after it is undone. A checkpoint of the current state is taken first, so
    it is reversible (``aether checkpoint undo``).
    """
    result = await parts.checkpoints.rollback_to(args.id, actor=caller.actor)
    return result.to_dict()


class DiffArgs(BaseModel):
    """Arguments of ``checkpoint_diff``."""

    id: CheckpointId
    keys_only: bool = Field(default=False, description="Which keys changed, without their values.")


@operation(read_only=True, agent=False)
async def checkpoint_diff(parts: Parts, caller: Caller, args: DiffArgs) -> dict[str, Any]:
    """What changed since a checkpoint, tier by tier and value by value.

    What a rollback to it would undo.
    """
    diff = await parts.checkpoints.diff(args.id, values=not args.keys_only)
    return {**diff.to_dict(), "checkpoint": diff.checkpoint.to_dict()}


class CheckpointIdArgs(BaseModel):
    """Arguments of ``checkpoint_show``."""

    id: CheckpointId


@operation(read_only=True, agent=False)
async def checkpoint_show(parts: Parts, caller: Caller, args: CheckpointIdArgs) -> dict[str, Any]:
    """One checkpoint, and how many journal entries follow it (``entries_since``)."""
    checkpoint, entries = await parts.checkpoints.show(args.id)
    return {**checkpoint.to_dict(), "entries_since": entries}


class PruneArgs(BaseModel):
    """Arguments of ``checkpoint_prune``."""

    keep: Annotated[int | None, KEEP.field("Checkpoints to keep (default: the settings').")] = None


class CheckpointsPruned(BaseModel):
    """The checkpoints pruned."""

    pruned: list[str]


@operation(read_only=False, agent=False)
async def checkpoint_prune(parts: Parts, caller: Caller, args: PruneArgs) -> CheckpointsPruned:
    """Apply checkpoint retention now, and trim the journal behind the oldest kept.

    The journal is never trimmed past what the PostgreSQL archive has copied.
    """
    return CheckpointsPruned(pruned=await parts.checkpoints.prune(args.keep))


class Rollbacks(BaseModel):
    """The latest rollbacks and undos, newest first.

    Each with ``target``, ``pre_checkpoint``, ``reason``, ``actor``...
    """

    rollbacks: list[dict[str, Any]]


@operation(read_only=True, agent=False)
async def checkpoint_rollbacks(parts: Parts, caller: Caller, args: NoArgs) -> Rollbacks:
    """The latest rollbacks and undos, newest first.

    An undo returns to the newest one's ``pre_checkpoint``: ``checkpoint_diff`` of it is
    what an undo would change.
    """
    return Rollbacks(rollbacks=await parts.checkpoints.rollbacks())


class UndoArgs(BaseModel):
    """Arguments of ``checkpoint_undo``."""

    redo: bool = Field(
        default=False,
        json_schema_extra=for_the_cli(flags=("--yes", "-y")),
        description="When the last action was itself an undo, reverse it (redo the rollback); "
        "without it a second undo in a row is refused.",
    )


@operation(read_only=False, agent=False)
async def checkpoint_undo(parts: Parts, caller: Caller, args: UndoArgs) -> dict[str, Any]:
    """Undo the last rollback, atomically; reversible in turn (``redo`` undoes an undo)."""
    return (await parts.checkpoints.undo(caller.actor, redo=args.redo)).to_dict()


class ForkArgs(BaseModel):
    """Arguments of ``checkpoint_fork``."""

    id: CheckpointId
    to: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.{}-]+$",
        description="The new namespace (empty): letters, digits, '_', '-', '.', a {hash tag}.",
    )


@operation(read_only=False, agent=False, memory="create_memory_store")
async def checkpoint_fork(parts: Parts, caller: Caller, args: ForkArgs) -> dict[str, Any]:
    """Make a new namespace whose state is a checkpoint's (identity included).

    The source is only read; the fork has its own journal, its hash chain continuing from
    the checkpoint's head, and its search indexes. Both sides record the fork.
    """
    from aether.checkpoints.fork import fork_namespace

    target = Parts(
        parts.settings.model_copy(update={"namespace": args.to}), parts.client, actor=caller.actor
    )
    report, _ = await fork_namespace(parts.client, parts.checkpoints, args.id, target.keys)
    await target.search.ensure_index()  # its indexes, over the memories it now holds
    return report.to_dict()


@operation(read_only=True, agent=False)
async def checkpoint_forks(parts: Parts, caller: Caller, args: NoArgs) -> dict[str, Any]:
    """This namespace's forks, and its source if it is one."""
    from aether.checkpoints.fork import forks_of

    return await forks_of(parts.client, parts.keys)

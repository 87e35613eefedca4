"""Maintenance, for operators: the run the daemon schedules, on demand."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from aether.operations.base import Caller, operation
from aether.operations.parts import Parts

__all__ = ["MaintenanceArgs", "maintenance_run"]


class MaintenanceArgs(BaseModel):
    """Arguments of ``maintenance_run``."""

    dry_run: bool = Field(default=False, description="Report what it would do; change nothing.")


@operation(read_only=False, agent=False)
async def maintenance_run(parts: Parts, caller: Caller, args: MaintenanceArgs) -> dict[str, Any]:
    """Compress old daily logs, prune checkpoints, check scratchpad TTLs, reflect on beliefs.

    Each destructive step takes a checkpoint first; with the model (when one is
    configured) summaries and distillation are the model's.
    """
    from aether.maintenance.engine import MaintenanceEngine

    engine = MaintenanceEngine(
        parts.memory,
        parts.checkpoints,
        caller.llm,
        actor=caller.actor,
        beliefs=parts.settings.beliefs,
        search=parts.search,
    )
    return (await engine.run(dry_run=args.dry_run)).to_dict()

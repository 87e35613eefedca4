"""Every operation of aether, defined once (``aether.operations.base``).

The agent's tools, the MCP server and the CLI are faces over these: each operation is
an async function with a pydantic arguments model and a typed result, working on the
:class:`Parts` of one namespace. Groups: :mod:`.memory`, :mod:`.checkpoints`,
:mod:`.identity` (identity and context), :mod:`.tasks` (tasks and goals), :mod:`.graph`,
:mod:`.approvals` (the operator's answers to the agent's tool calls).
"""

from __future__ import annotations

from typing import Any

from aether.operations import (
    approvals,
    beliefs,
    chat,
    checkpoints,
    erasure,
    graph,
    identity,
    ledger,
    memory,
    tasks,
)
from aether.operations.base import REGISTRY, Caller, NoArgs, Operation, operation
from aether.operations.parts import Parts

__all__ = [
    "REGISTRY",
    "Caller",
    "NoArgs",
    "Operation",
    "Parts",
    "agent_operations",
    "approvals",
    "beliefs",
    "chat",
    "checkpoints",
    "erasure",
    "graph",
    "identity",
    "ledger",
    "memory",
    "operation",
    "tasks",
]


def agent_operations() -> list[Operation[Any, Any]]:
    """The operations offered to the agent as tools, in definition order."""
    return [op for op in REGISTRY.values() if op.agent]

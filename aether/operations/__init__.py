"""Every operation of aether, defined once (``aether.operations.base``).

The agent's tools, the MCP server and the CLI are faces over these: each operation is
an async function with a pydantic arguments model and a typed result, working on the
:class:`Parts` of one namespace. Groups: :mod:`.memory`, :mod:`.checkpoints`,
:mod:`.identity` (identity and context), :mod:`.tasks` (tasks and goals), :mod:`.graph`,
:mod:`.approvals` (the operator's answers to the agent's tool calls), :mod:`.beliefs`,
:mod:`.chat`, :mod:`.decisions`, :mod:`.ledger` (and the tool registry), :mod:`.erasure`,
:mod:`.journal` (the hash chain's verification),
and the operator's own: :mod:`.transfer` (export, import, reindex), :mod:`.archive`, :mod:`.repo`,
:mod:`.maintenance`. The CLI calls every command's operation through
``aether.interfaces.common.call``.

A group is imported when it is used (PEP 562): a CLI command loads only its own group,
and ``REGISTRY`` (every operation) loads them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from aether.operations.base import Caller, NoArgs, Operation, operation
from aether.operations.parts import Parts

if TYPE_CHECKING:
    from aether.operations import (
        approvals,
        archive,
        beliefs,
        chat,
        checkpoints,
        decisions,
        erasure,
        graph,
        identity,
        journal,
        ledger,
        maintenance,
        memory,
        repo,
        tasks,
        transfer,
    )
    from aether.operations.base import REGISTRY

__all__ = [
    "REGISTRY",
    "Caller",
    "NoArgs",
    "Operation",
    "Parts",
    "agent_operations",
    "approvals",
    "archive",
    "beliefs",
    "chat",
    "checkpoints",
    "decisions",
    "erasure",
    "graph",
    "identity",
    "journal",
    "ledger",
    "maintenance",
    "memory",
    "operation",
    "repo",
    "tasks",
    "transfer",
]

GROUPS = tuple(
    name for name in __all__ if name[0].islower() and name not in ("agent_operations", "operation")
)


def registry() -> dict[str, Operation[Any, Any]]:
    """Every operation, each group imported (in the order the groups are listed)."""
    for name in GROUPS:
        importlib.import_module(f"{__name__}.{name}")
    from aether.operations.base import REGISTRY

    return REGISTRY


def agent_operations() -> list[Operation[Any, Any]]:
    """The operations offered to the agent as tools, in definition order."""
    return [op for op in registry().values() if op.agent]


def __getattr__(name: str) -> Any:
    if name == "REGISTRY":
        return registry()
    if name in GROUPS:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

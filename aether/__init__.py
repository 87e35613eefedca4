"""aether: a Redis Stack-native memory runtime for long-running autonomous AI agents.

The public API::

    from aether import Aether, Settings

    async with Aether.open(Settings()) as parts:
        await parts.search.search("...")

Names are imported on first use (PEP 562), so ``import aether`` stays cheap for the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Aether",
    "AetherError",
    "AgentRuntime",
    "Belief",
    "Checkpoints",
    "DailyEntry",
    "Decision",
    "Event",
    "Failure",
    "LLMClient",
    "LongTermRecord",
    "MemoryDoc",
    "MemorySearch",
    "Settings",
    "__version__",
]

_WHERE = {
    "Aether": "aether.app",
    "AetherError": "aether.errors",
    "AgentRuntime": "aether.runtime.agent",
    "Checkpoints": "aether.checkpoints.manager",
    "LLMClient": "aether.runtime.llm",
    "MemorySearch": "aether.memory.retrieval.search",
    "Settings": "aether.config",
    "Belief": "aether.memory.storage.records",
    "DailyEntry": "aether.memory.storage.records",
    "Decision": "aether.memory.storage.records",
    "Event": "aether.memory.storage.records",
    "Failure": "aether.memory.storage.records",
    "LongTermRecord": "aether.memory.storage.records",
    "MemoryDoc": "aether.memory.storage.records",
}

if TYPE_CHECKING:
    from aether.app import Aether
    from aether.checkpoints.manager import Checkpoints
    from aether.config import Settings
    from aether.errors import AetherError
    from aether.memory.retrieval.search import MemorySearch
    from aether.memory.storage.records import (
        Belief,
        DailyEntry,
        Decision,
        Event,
        Failure,
        LongTermRecord,
        MemoryDoc,
    )
    from aether.runtime.agent import AgentRuntime
    from aether.runtime.llm import LLMClient


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'aether' has no attribute {name!r}")

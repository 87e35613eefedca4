"""LangGraph over aether: a checkpointer and a long-term store (``pip install aether[langgraph]``).

- :class:`AetherCheckpointSaver`: a graph's threads (checkpoints, channel values,
  pending writes) as journaled state of the agent's namespace;
- :class:`AetherStore`: LangGraph's ``BaseStore`` over aether's memory, its semantic
  search through aether's hybrid search.

Both are built over the composition root::

    async with Aether.open(Settings(namespace="support-bot")) as parts:
        graph = builder.compile(checkpointer=AetherCheckpointSaver(parts), store=AetherStore(parts))
"""

from aether.integrations.langgraph.checkpointer import AetherCheckpointSaver
from aether.integrations.langgraph.store import AetherStore

__all__ = ["AetherCheckpointSaver", "AetherStore"]

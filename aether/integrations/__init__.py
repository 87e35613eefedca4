"""aether as the memory of agents built on other runtimes.

- :mod:`aether.integrations.langgraph`: ``AetherCheckpointSaver`` (a LangGraph
  checkpointer) and ``AetherStore`` (LangGraph's long-term store), ``aether[langgraph]``;
- :mod:`aether.integrations.openai_agents`: ``AetherSession`` (an OpenAI Agents SDK
  session), ``aether[openai-agents]``.

Each keeps the framework's state in the agent's own journaled namespace, so a rollback,
an undo, an erasure and an export reach it with the rest of the agent. Nothing of a
framework is imported until its module is.
"""

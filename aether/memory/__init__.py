"""Memory layer: daily logs, long-term memory, scratchpads, episodes, tool cache, chat, search."""

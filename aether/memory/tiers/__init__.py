"""The tiers of memory, each over the storage layer.

The daily log, long-term notes, chat sessions, episodes, scratchpads, the tool cache,
tasks and goals, decisions and failure patterns, and the memory index (:mod:`.memory_index`:
the table of what memory holds, by topic).
"""

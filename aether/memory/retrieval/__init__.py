"""Finding memories.

Hybrid search (:mod:`.search`), newest-first ordering of conflicting results
(:mod:`.newest`), and the word-level helpers both use.
"""

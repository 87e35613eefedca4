"""Finding memories: one pipeline, one module per step.

:mod:`.search` runs it: :mod:`.candidates` (all of a search's Redis I/O) →
:mod:`.fusion` (the pure scoring: scaling, weights, the gate, the own reading) →
:mod:`.neighbours` (context lent by a hit's neighbours and names) → :mod:`.recency` (one
decay, shared with the context, beliefs and the graph) → :mod:`.rerank` (optional, with
:mod:`.llm_judge`) → :mod:`.newest` (conflicting statements, newest first). :mod:`.text`
holds the words every step compares; :mod:`.hit` what a search returns.
"""

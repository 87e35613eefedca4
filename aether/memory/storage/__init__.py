"""How memories are stored and indexed: records, the memory layer, full text, vectors.

The lowest part of memory: typed records (:mod:`.records`), the layer every tier writes
through (:mod:`.layer`), the full-text index (:mod:`.fulltext`), vectors and passages
(:mod:`.vectors`, :mod:`.conversation`), the embedders, the Qdrant mirror and the
migration of vectors to a newer layout (:mod:`.vector_layout`).
"""

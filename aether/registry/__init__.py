"""The tool registry and the agent ledger (in Redis, or in MongoDB when configured).

A Redis backend is the default; ``AETHER_MONGO_URL`` selects the pymongo backend. Both
honour one contract, tested against every backend available.
"""

"""The tool registry and the agent ledger (seed 002 keeps them in MongoDB).

A Redis backend is the default; ``AETHER_MONGO_URL`` selects the pymongo backend. Both
honour one contract, tested against every backend available.
"""

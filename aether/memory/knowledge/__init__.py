"""What memory learns from what it holds.

Beliefs and their lifecycle, extraction of facts, the entity graph, events, the
conversation learner (:mod:`.learner`) and the agent archetypes.
"""

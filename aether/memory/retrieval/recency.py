"""Recency: one decay, used wherever age weighs.

Search blends it into a hit's relevance (``memory.recency_weight``), the context's
scoring into an item's score (``context.recency_weight``), a belief's confidence decays
by it and the archetype's relational sections rank events and entities with it. Each
caller applies its own weight to a match that holds no recency (``SearchHit.match``), so
age never counts twice.
"""

from __future__ import annotations

import math

__all__ = ["DAY_SECONDS", "blend", "decay"]

DAY_SECONDS = 86_400


def decay(age_seconds: float, half_life_days: float) -> float:
    """What is left of something ``age_seconds`` old: 1 when new, halving every half-life.

    A negative age (a clock that moved back, a timestamp from the future) counts as new.
    """
    return math.pow(0.5, max(0.0, age_seconds) / DAY_SECONDS / half_life_days)


def blend(match: float, recency: float, weight: float) -> float:
    """``match`` with ``weight`` of the score given to recency instead."""
    return (1 - weight) * match + weight * recency

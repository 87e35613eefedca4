"""The one percentile every bench reports: nearest rank, so p50/p99 compare across benches.

The q-percentile of n values is the value at rank ceil(q·n) in ascending order (rank 1
the smallest): with 20 runs p99 is the slowest, with 200 the second slowest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float, digits: int = 2) -> float:
    """The nearest-rank ``q``-percentile (``q`` from 0 to 1) of ``values``, rounded.

    Raises:
        ValueError: no values, or ``q`` outside 0..1.
    """
    if not values:
        raise ValueError("a percentile of no values")
    if not 0 <= q <= 1:
        raise ValueError(f"q is a fraction from 0 to 1, not {q}")
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return round(ordered[rank - 1], digits)

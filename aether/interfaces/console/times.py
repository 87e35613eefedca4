"""Times as an operator reads them: how long ago, with the exact time on hover.

A page shows ``3 min ago``; hovering shows ``2026-11-27 19:40:02`` in the operator's
zone (the identity's timezone), and ``datetime`` carries the ISO time for scripts.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from markupsafe import Markup, escape

__all__ = ["ago", "stamp"]


def ago(at: float, now: float) -> str:
    """``at`` relative to ``now``: ``just now``, ``42 s ago``, ``3 min ago``, ``in 2 h``."""
    delta = now - at
    future = delta < 0
    seconds = abs(delta)
    if seconds < 5:
        return "just now"
    for size, unit in ((86_400 * 365, "y"), (86_400, "d"), (3_600, "h"), (60, "min"), (1, "s")):
        if seconds >= size:
            amount = int(seconds // size)
            words = f"{amount} {unit}"
            if unit == "d":
                words = f"{amount} day" + ("" if amount == 1 else "s")
            return f"in {words}" if future else f"{words} ago"
    return "just now"


def stamp(at: object, tz: ZoneInfo, now: float) -> Markup:
    """A ``<time>`` element: relative text, the exact time in ``tz`` as its title."""
    if isinstance(at, bool) or not isinstance(at, int | float) or not at:
        return Markup("-")
    moment = datetime.fromtimestamp(float(at), tz)
    exact = moment.strftime("%Y-%m-%d %H:%M:%S")
    return Markup('<time datetime="{}" title="{} {}">{}</time>').format(
        moment.isoformat(), exact, escape(str(tz)), ago(float(at), now)
    )

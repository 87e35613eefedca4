"""JSON documents as aether writes them, and whether RedisJSON keeps their text as written.

RedisJSON answers ``JSON.GET`` with its own serialization of what it parsed. For the text
:func:`document_text` makes, that serialization differs only in numbers: an exponent
(Python writes ``1e-05`` and ``1e+16``, RedisJSON ``0.00001`` and ``1e16``), an integer past
64 bits (kept as a float), and a float RedisJSON does not parse exactly: it reads the digits
as one integer and divides it by a power of ten, exact when that integer is below 2**53 and
otherwise sometimes an ulp away (``9469028097.760527`` comes back ``…529``).
:func:`redisjson_exact` tells, before the write, that none of these applies, so the journal
can digest a whole document from its text instead of reading it back.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["document_text", "redisjson_exact"]

_INT_RANGE = range(-(2**63), 2**64)  # RedisJSON's i64 and u64; wider integers become floats
_EXACT_DIGITS = 15  # below 2**53: read exactly whatever the power of ten (up to 1e22)
_MAX_DIGITS = 19  # what RedisJSON reads as one 64-bit integer before it divides


def document_text(value: Any) -> str:
    """``value`` as the JSON text a write sends: compact, UTF-8 kept (RedisJSON's form)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _float_kept(number: float) -> bool:
    written = float.__repr__(number)  # what json.dumps writes
    if "e" in written or "n" in written:  # an exponent, nan, inf
        return False
    whole, _, fraction = written.lstrip("-").partition(".")
    digits = whole + fraction
    if len(digits) <= _EXACT_DIGITS:
        return True
    if len(digits) > _MAX_DIGITS:
        return False
    # RedisJSON's reading: the digits as a float, divided once by an exact power of ten
    return float(int(digits)) / 10.0 ** len(fraction) == abs(number)


def redisjson_exact(value: Any) -> bool:
    """Whether ``JSON.GET`` returns exactly :func:`document_text` of ``value`` once it is set.

    Conservative: ``False`` may be said of a value RedisJSON would in fact keep as written,
    never ``True`` of one it would not.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if not all(isinstance(name, str) for name in item):
                return False  # json.dumps turns 1 and "1" into the same name
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
        elif isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        elif isinstance(item, int):
            if item not in _INT_RANGE:
                return False
        elif isinstance(item, float):
            if not _float_kept(item):
                return False
        else:
            return False  # json.dumps refuses it anyway
    return True

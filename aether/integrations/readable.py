"""A readable rendering of a framework's value: what an erasure matches, what a person reads.

A framework serializes its values to bytes aether cannot read (msgpack, pickle). Beside
those bytes aether stores this rendering: JSON where the value is made of JSON's types,
and of the fields of pydantic models and dataclasses (a LangChain message renders as its
fields, content included), ``str()`` of anything else.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

__all__ = ["readable"]

MAX_RENDERING = 1_000_000
"""Characters kept of one rendering (a larger value is still stored whole, as bytes)."""


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump()
        except (TypeError, ValueError):
            return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def readable(value: Any) -> str:
    """``value`` as text (JSON where it can be), at most :data:`MAX_RENDERING` characters."""
    try:
        rendered = json.dumps(value, default=_plain, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        rendered = str(value)
    return rendered[:MAX_RENDERING]

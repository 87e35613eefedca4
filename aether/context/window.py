"""The sliding window over a conversation: units, rendering, the message limit.

A *unit* is what must travel together: one user, system or plain assistant message, or
an assistant message that calls tools together with every one of its results. The
window only ever drops whole units, oldest first, so a tool call is never sent without
its result (the API rejects that) nor a result without its call.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from aether.messages import ChatMessage, ToolCallPart
from aether.tokens import count_message, truncate_to_tokens

Unit = list[ChatMessage]
CLIP_MARK = " …[clipped]"


def units(messages: list[ChatMessage]) -> list[Unit]:
    """Group stored messages into units, in order.

    A tool result is attached to the assistant message that called it wherever it sits
    (results stored in the same change share a time), matched by aether's call id; a
    result whose call is not in
    ``messages``, or a call missing a result, cannot be sent and is left out.
    """
    # by aether's own call id: a model's ids may repeat (``call_0`` every turn); messages
    # stored before aether had its own pair by the model's
    results = {
        m.get("call") or m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"
    }
    out: list[Unit] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            continue
        calls = message.get("tool_calls") or []
        if role == "assistant" and calls:
            found = [results.get(call.get("call") or call.get("id")) for call in calls]
            if any(r is None for r in found):
                continue
            out.append([message, *[r for r in found if r is not None]])
        else:
            out.append([message])
    return out


def size(group: list[Unit]) -> int:
    """Number of messages in ``group``."""
    return sum(len(u) for u in group)


def limit(group: list[Unit], max_messages: int) -> tuple[list[Unit], list[Unit]]:
    """(kept, evicted): the newest units holding at most ``max_messages`` messages.

    The newest unit is always kept, even when it alone is larger.
    """
    kept: list[Unit] = []
    count = 0
    for unit in reversed(group):
        if kept and count + len(unit) > max_messages:
            break
        kept.append(unit)
        count += len(unit)
    kept.reverse()
    return kept, group[: len(group) - len(kept)]


def time_stamp(ts: float, zone: ZoneInfo) -> str:
    """``[Current Time: YYYY-MM-DD HH:MM:SS]`` of ``ts`` in ``zone``."""
    return (
        f"[Current Time: {datetime.fromtimestamp(ts, tz=UTC).astimezone(zone):%Y-%m-%d %H:%M:%S}]"
    )


def render(message: ChatMessage, zone: ZoneInfo, clip_tokens: int | None = None) -> ChatMessage:
    """A stored message as the chat API takes it; user messages are time-stamped."""
    role = message["role"]
    content = str(message.get("content") or "")
    if clip_tokens is not None and role != "system":
        cut = truncate_to_tokens(content, clip_tokens)
        content = cut + CLIP_MARK if cut != content else content
    if role == "user":
        content = f"{time_stamp(float(message.get('timestamp', 0)), zone)} {content}"
    out: ChatMessage = {"role": role, "content": content}
    if role == "assistant" and message.get("tool_calls"):
        out["tool_calls"] = [  # what the API reads: aether's own ``call`` id stays home
            ToolCallPart(id=c["id"], type=c.get("type", "function"), function=c["function"])
            for c in message["tool_calls"]
        ]
        out["content"] = content or None
    if role == "tool":
        out["tool_call_id"] = message["tool_call_id"]
    if message.get("name") and role in ("user", "assistant"):
        out["name"] = message["name"]
    return out


def render_units(
    group: list[Unit], zone: ZoneInfo, clip_tokens: int | None = None
) -> list[ChatMessage]:
    """Every message of ``group``, rendered, in order."""
    return [render(m, zone, clip_tokens) for unit in group for m in unit]


def unit_tokens(unit: Unit, zone: ZoneInfo, clip_tokens: int | None = None) -> int:
    """Tokens the unit costs once rendered."""
    return sum(count_message(render(m, zone, clip_tokens)) for m in unit)

"""``AetherSession``: an OpenAI Agents SDK session over an aether chat session.

``pip install aether[openai-agents]``. The SDK's runner reads a conversation's history
from the session and adds each turn's items to it; with ``AetherSession`` those items
are messages of an aether chat session of the agent's namespace::

    async with Aether.open(Settings(namespace="support-bot")) as parts:
        session = AetherSession("user-42", parts)
        result = await Runner.run(agent, "What did I order last week?", session=session)

It can be used from any event loop or thread (the SDK's runner, a worker's own
``asyncio.run``): its calls run on the loop ``Aether.open`` runs on, as the LangGraph
adapters' do. Vectors come from the namespace's running daemon when there is one.

So the items are the agent's memory: a user or assistant text is also logged to the
daily log, tagged with the session, in the same journaled change (search, the context
and maintenance find it); a tool call is an assistant message with its call and the
tool's output a tool message, as aether's own runtime stores them (the console shows
both). Everything is journaled: ``aether checkpoint rollback`` rewinds the session with
the rest, and ``aether erase`` removes a text from it. Each message keeps the SDK's
item as given, so ``get_items`` returns exactly what was added.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agents.items import TResponseInputItem
from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from aether.errors import InvalidOperationError
from aether.integrations.loop import LoopBound
from aether.integrations.readable import readable
from aether.memory.tiers.chat import ChatSessions
from aether.messages import ChatMessage, FunctionCall, ToolCallPart

if TYPE_CHECKING:
    from aether.operations.parts import Parts

__all__ = ["AetherSession", "item_message", "message_items"]

_CHAT_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def _text_of(content: object) -> str:
    """The text of a message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                for field in ("text", "refusal", "transcript"):
                    value = part.get(field)
                    if isinstance(value, str):
                        parts.append(value)
                        break
        return "\n".join(parts)
    return "" if content is None else readable(content)


def item_message(item: TResponseInputItem) -> ChatMessage:
    """The chat message an SDK input item is stored as (the item kept whole in ``item``).

    Raises:
        InvalidOperationError: the item is not a mapping.
    """
    if not isinstance(item, dict):
        raise InvalidOperationError(f"an Agents SDK item is a mapping, got {type(item).__name__}")
    raw: dict[str, Any] = dict(item)
    kind = raw.get("type")
    if kind == "function_call":
        arguments = raw.get("arguments", "")
        call = ToolCallPart(
            id=str(raw.get("call_id", "")),
            type="function",
            function=FunctionCall(
                name=str(raw.get("name", "")),
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
            ),
        )
        return ChatMessage(role="assistant", content="", tool_calls=[call], item=raw)
    if kind == "function_call_output":
        output = raw.get("output")
        return ChatMessage(
            role="tool",
            content=output if isinstance(output, str) else readable(output),
            tool_call_id=str(raw.get("call_id", "")),
            item=raw,
        )
    role = _CHAT_ROLES.get(str(raw.get("role", "")))
    if role is not None and kind in (None, "message"):
        return ChatMessage(role=role, content=_text_of(raw.get("content")), item=raw)
    # reasoning, hosted tool calls and the rest: kept whole, shown as what they hold
    return ChatMessage(role="assistant", content="", name=str(kind or "item"), item=raw)


def message_items(message: ChatMessage) -> list[TResponseInputItem]:
    """The SDK items a stored chat message stands for (its own item when it has one).

    A message aether's runtime wrote becomes the items the SDK would have made: a text
    message, a function call per tool call, a function call's output.
    """
    if isinstance(message.get("item"), dict):
        return [message["item"]]  # type: ignore[list-item]
    role, content = message.get("role"), message.get("content") or ""
    items: list[dict[str, Any]] = []
    if role == "tool":
        items.append(
            {
                "type": "function_call_output",
                "call_id": message.get("tool_call_id", ""),
                "output": content,
            }
        )
        return items  # type: ignore[return-value]
    if role in ("user", "assistant", "system") and content:
        items.append({"role": role, "content": content})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments", "")
        items.append(
            {
                "type": "function_call",
                "call_id": call.get("id", ""),
                "name": function.get("name", ""),
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            }
        )
    return items  # type: ignore[return-value]


class AetherSession:
    """The Agents SDK's ``Session`` protocol over an aether chat session.

    Args:
        session_id: the chat session (an aether session id: letters, digits, ``-_.:``).
        parts: the namespace's parts (``Aether`` from ``Aether.open``).
        remember: also log user and assistant texts to the daily log (searchable memory).
        session_settings: the SDK's settings (``limit``: how many items to read), as a
            ``SessionSettings`` or a dict, as the SDK's own sessions take them.

    Raises:
        InvalidOperationError: a bad session id or settings, or made outside a running
            event loop.
    """

    def __init__(
        self,
        session_id: str,
        parts: Parts,
        *,
        remember: bool = True,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        from aether.ids import check_id

        self.session_id = check_id(session_id, "session id")
        try:
            self.session_settings = (
                SessionSettings()
                if session_settings is None
                else coerce_session_settings(session_settings)
            )
        except (TypeError, ValueError) as e:
            raise InvalidOperationError(f"invalid session_settings: {e}") from e
        self._bridge = LoopBound("AetherSession")
        self.chats = ChatSessions(parts.memory)
        self.remember = remember

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items in order (the latest ``limit`` when given)."""
        return await self._bridge.call(self._get_items(limit))

    async def _get_items(self, limit: int | None) -> list[TResponseInputItem]:
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted is not None and wanted <= 0:
            return []
        messages = await self.chats.messages(self.session_id, limit=wanted)
        items = [item for message in messages for item in message_items(message)]
        return items[-wanted:] if wanted is not None else items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Add items in order, in one journaled change."""
        drafts = [item_message(item) for item in items]
        await self._bridge.call(
            self.chats.append_messages(self.session_id, drafts, remember=self.remember)
        )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item (and the memory logged from it)."""
        message = await self._bridge.call(self.chats.pop_last(self.session_id))
        if message is None:
            return None
        items = message_items(message)
        return items[-1] if items else None

    async def clear_session(self) -> None:
        """Remove every item of the session (journaled; memories logged from it stay)."""
        await self._bridge.call(self.chats.clear(self.session_id))

"""What the memory and context layers need of a language model (the runtime's client has it).

The chat message types every layer shares, and a Protocol, so that memory and context
never import the runtime: data flows one way.
"""

from __future__ import annotations

from typing import Any, NotRequired, Protocol, Required, runtime_checkable

from typing_extensions import TypedDict


class TextModel(Protocol):
    """A model that answers one prompt with text."""

    async def complete(self, system: str, prompt: str, max_tokens: int | None = None) -> str:
        """The answer; raises ``LLMError`` when the model fails."""
        ...


class FunctionCall(TypedDict):
    """The function a tool call names, with its arguments as JSON text."""

    name: str
    arguments: str


class ToolCallPart(TypedDict):
    """A tool call as it appears in an assistant message.

    ``id`` is the model's (what its result answers, as the chat API wants); ``call`` is
    aether's own, unique per call: a model may repeat its ids (``call_0`` every turn), so
    the console, the ledger and approvals key a call by ``call``. Never sent to a model.
    """

    id: str
    type: str
    function: FunctionCall
    call: NotRequired[str]


class ChatMessage(TypedDict, total=False):
    """One chat message, as stored in a session and as the chat API takes it.

    Stored messages carry ``id`` and ``timestamp`` (and ``ref``, the inbox message they
    answer; ``memory``, the daily entry it was also logged as; ``item``, the framework
    item it was made from, e.g. an OpenAI Agents SDK input item); rendered ones only
    what the API reads.
    """

    role: Required[str]
    content: Required[str | None]
    id: str
    timestamp: float
    name: str
    ref: str
    tool_calls: list[ToolCallPart]
    tool_call_id: str
    call: str
    """A tool result's: aether's id of the call it answers (see :class:`ToolCallPart`)."""
    memory: str
    item: dict[str, Any]


class ToolFunction(TypedDict):
    """A tool as the model sees it: its name, what it does, its JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, object]


class ToolSchema(TypedDict):
    """One entry of a chat request's ``tools``."""

    type: str
    function: ToolFunction


@runtime_checkable
class StructuredModel(Protocol):
    """A model that answers one prompt with JSON following a schema."""

    async def complete_json(
        self, system: str, prompt: str, schema: dict[str, object], max_tokens: int | None = None
    ) -> str:
        """The JSON text; raises ``LLMError`` when the model fails."""
        ...

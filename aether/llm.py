"""What the memory and context layers need of a language model (the runtime's client has it).

A Protocol, so that memory and context never import the runtime: data flows one way.
"""

from __future__ import annotations

from typing import Protocol


class TextModel(Protocol):
    """A model that answers one prompt with text."""

    async def complete(self, system: str, prompt: str, max_tokens: int | None = None) -> str:
        """The answer; raises ``LLMError`` when the model fails."""
        ...

"""Which optional tools a turn is offered when they do not all fit in their share.

Why: docs/design.md, "Tools". Seed 002 gives tool schemas 15 % of the window. When every
tool fits, every tool is offered; when not, the optional ones are ranked by how close
their descriptions are to the turn's message (the memory layer's embedder, the same
model memory search uses; word overlap when embeddings are off) and offered while they
fit. The memory tools are never optional.
"""

from __future__ import annotations

import math
import re

from aether.memory.storage.embeddings import Embedder
from aether.runtime.tools.box import Tool

__all__ = ["ToolRanker"]

_WORD = re.compile(r"[a-z0-9]+")


class ToolRanker:
    """Ranks tools by relevance to a message; description vectors are computed once."""

    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder
        self._vectors: dict[tuple[str, str], list[float]] = {}

    async def rank(self, tools: list[Tool], query: str) -> list[str]:
        """The tools' names, most relevant to ``query`` first."""
        if not tools:
            return []
        if self.embedder is None or not query.strip():
            return _by_words(tools, query)
        missing = [t for t in tools if (t.name, t.description) not in self._vectors]
        if missing:
            texts = [f"{t.name.replace('_', ' ')}: {t.description}" for t in missing]
            for tool, vector in zip(missing, await self.embedder.embed_many(texts), strict=True):
                self._vectors[(tool.name, tool.description)] = vector
        (asked,) = await self.embedder.embed_many([query[:2000]])
        scored = [(_cosine(asked, self._vectors[(t.name, t.description)]), t.name) for t in tools]
        return [name for _, name in sorted(scored, key=lambda s: -s[0])]


def _by_words(tools: list[Tool], query: str) -> list[str]:
    asked = set(_WORD.findall(query.lower()))
    scored = [
        (len(asked & set(_WORD.findall(f"{t.name} {t.description}".lower()))), i, t.name)
        for i, t in enumerate(tools)
    ]
    return [name for _, _, name in sorted(scored, key=lambda s: (-s[0], s[1]))]


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0

"""Compression of evicted history into one summary: LLM when configured, extractive otherwise.

The extractive summary is SumBasic (Nenkova & Vanderwende, 2005): words that recur
across the evicted messages are what they were about, so sentences are picked by the
mean probability of their words, and the words of each pick are down-weighted so the
next pick covers something else. Picks are shown in conversation order.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Protocol

import structlog

from aether.errors import LLMError
from aether.memory.retrieval.text import STOPWORDS
from aether.messages import ChatMessage, TextModel
from aether.tokens import count_tokens, truncate_to_tokens

log = structlog.get_logger(__name__)

HEADER = "Summary of the earlier conversation"
SENTENCE_MAX_TOKENS = 60
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


class Summarizer(Protocol):
    """Folds evicted messages (and the previous summary) into one summary."""

    async def summarize(self, previous: str, messages: list[ChatMessage], max_tokens: int) -> str:
        """The new summary, at most ``max_tokens`` tokens."""
        ...


def speaker(message: ChatMessage) -> str:
    """How a message's author is named in summaries and memory."""
    role = str(message.get("role", ""))
    if role == "tool":
        return f"Tool {message.get('name') or ''}".strip()
    if message.get("name"):
        return str(message["name"])
    return {"user": "User", "assistant": "Assistant"}.get(role, role.title())


def message_text(message: ChatMessage) -> str:
    """The message as one line of text: its content, or the tools it called."""
    content = str(message.get("content") or "").strip()
    calls = message.get("tool_calls") or []
    if calls and not content:
        names = ", ".join(c.get("function", {}).get("name", "?") for c in calls)
        content = f"called {names}"
    return content


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS and len(w) > 1]


class ExtractiveSummarizer:
    """SumBasic over the evicted messages; no model, no network."""

    async def summarize(self, previous: str, messages: list[ChatMessage], max_tokens: int) -> str:
        """The summary (see the module docs)."""
        return self.summarize_now(previous, messages, max_tokens)

    def summarize_now(self, previous: str, messages: list[ChatMessage], max_tokens: int) -> str:
        """Synchronous core of :meth:`summarize`."""
        header = f"{HEADER} ({len(messages)} more messages):" if messages else HEADER + ":"
        budget = max_tokens - count_tokens(header) - 2
        earlier = previous.removeprefix(HEADER).split(":", 1)[-1].strip() if previous else ""
        if earlier:
            earlier = truncate_to_tokens(earlier, max(0, budget * 2 // 5))
            budget -= count_tokens(earlier) + 1
        candidates: list[tuple[int, str, list[str]]] = []
        for order, message in enumerate(messages):
            if message.get("role") == "system":
                continue
            for sentence in _SENTENCE.split(message_text(message)):
                words = _words(sentence)
                if words:
                    line = f"- {speaker(message)}: {sentence.strip()}"
                    candidates.append((order, truncate_to_tokens(line, SENTENCE_MAX_TOKENS), words))
        counts = Counter(w for _, _, words in candidates for w in set(words))
        total = sum(counts.values()) or 1
        prob = {w: n / total for w, n in counts.items()}
        picked: list[tuple[int, int, str]] = []
        remaining = list(enumerate(candidates))
        while remaining and budget > 0:
            best_i, best = max(
                remaining, key=lambda c: sum(prob[w] for w in c[1][2]) / len(c[1][2])
            )
            remaining = [c for c in remaining if c[0] != best_i]
            cost = count_tokens(best[1]) + 1
            if cost > budget:
                continue
            budget -= cost
            picked.append((best[0], best_i, best[1]))
            for w in best[2]:
                prob[w] = prob[w] ** 2
        lines = [header] + ([earlier] if earlier else []) + [t for _, _, t in sorted(picked)]
        return truncate_to_tokens("\n".join(lines), max_tokens)


class LLMSummarizer:
    """A summary written by the model; extractive when the model fails (logged once)."""

    _fell_back = False

    def __init__(self, llm: TextModel, fallback: ExtractiveSummarizer | None = None) -> None:
        self.llm = llm
        self.fallback = fallback or ExtractiveSummarizer()

    async def summarize(self, previous: str, messages: list[ChatMessage], max_tokens: int) -> str:
        """The model's summary, or the extractive one when the model is unavailable."""
        transcript = "\n".join(
            f"{speaker(m)}: {message_text(m)}" for m in messages if m.get("role") != "system"
        )
        prompt = (
            (f"Earlier summary:\n{previous}\n\n" if previous else "")
            + f"Conversation to fold in:\n{transcript}\n\n"
            + f"Write the updated summary in at most {max(40, max_tokens * 3 // 4)} words."
        )
        system = (
            "You compress your own conversation history. Keep facts, names, numbers, dates, "
            "decisions, commitments and open tasks; drop small talk. Plain text only."
        )
        try:
            text = await self.llm.complete(system, prompt, max_tokens=max_tokens)
        except LLMError as e:
            if not LLMSummarizer._fell_back:
                LLMSummarizer._fell_back = True
                log.warning("LLM summary failed; compressing extractively", error=str(e))
            return await self.fallback.summarize(previous, messages, max_tokens)
        header = f"{HEADER} ({len(messages)} more messages):"
        return truncate_to_tokens(f"{header}\n{text.strip()}", max_tokens)

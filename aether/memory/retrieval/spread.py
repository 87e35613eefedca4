"""Conversation-wide questions: a topic's spread over time, not one moment of it.

"Summarise how my budget tracker progressed, including the key features, the security
work and the documentation" asks for several moments of a long conversation. Searched as
one query, its words and its vector meet the moments that repeat the topic's name most
(often ten messages of one afternoon), not the moments where each aspect was worked on.

:func:`conversation_wide` reads from the question alone whether it asks about a topic
over time (a summary, an order of events, how something changed, what happened across
sessions). :func:`aspects` reads the aspects such a question names: each is searched on
its own, with the question's topic, and the answers are interleaved with the plain
answer (:class:`~aether.memory.retrieval.search.MemorySearch`), so every named aspect has
its best moments among the results. The context shows them in time order (its memories
section is a timeline).

Measured and left out (decision 0009): grouping results by session, and maximal marginal
relevance over the candidates' vectors, both lowered recall on BEAM's conversation-wide
questions: their evidence is rarely the candidates that differ most from the best one.
"""

from __future__ import annotations

import re

from aether.memory.retrieval.text import query_tokens

__all__ = ["MAX_ASPECTS", "aspects", "conversation_wide"]

MAX_ASPECTS = 6
"""At most this many aspects are searched apart (the rest ride in the plain query)."""

_WIDE = re.compile(
    r"\b(?:summar(?:y|ies|ise|ize|ised|ized)|overview|recap|timeline|chronolog\w*"
    r"|in (?:what|which) order|(?:the )?order in which|sequence of"
    r"|throughout (?:our|my|the|these|all)\b|across (?:our|my|the|all|these|different)\b"
    r"|over (?:time|the (?:past|last) \w+)|so far"
    r"|how (?:has|have|did|had) [^?.]{0,80}\b(?:chang|develop|evolv|progress|grow|grew|shift)\w*)",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"[,\s]\s*(?:including|such as|like|covering|especially|particularly|from)\s+",
    re.IGNORECASE,
)
_SEPARATORS = re.compile(r"\s*(?:,\s*(?:and|or|then|as well as)?|;|\band\b|\bor\b|\bthen\b)\s*")
_SENTENCE_END = re.compile(r"[?.!](?:\s|$)")
_ASKING = frozenset(
    [
        "give",
        "provide",
        "list",
        "tell",
        "show",
        "walk",
        "summary",
        "summarise",
        "summarize",
        "summaries",
        "overview",
        "recap",
        "comprehensive",
        "clear",
        "brief",
        "detailed",
        "quick",
        "short",
        "order",
        "sequence",
        "timeline",
        "different",
        "aspects",
        "everything",
        "things",
        "discussed",
        "covered",
        "talked",
        "brought",
        "mentioned",
        "conversations",
        "conversation",
        "sessions",
        "session",
        "discussions",
        "throughout",
        "across",
        "far",
        "time",
        "progressed",
        "developed",
        "evolved",
        "changed",
        "grown",
    ]
)
"""Words that ask for the spread rather than name its topic: left out of the topic."""
_MIN_ASPECT_WORDS = 1
_MAX_ASPECT_WORDS = 8


def conversation_wide(query: str) -> bool:
    """Whether a question asks about a topic over time rather than one moment of it."""
    return bool(_WIDE.search(query))


def aspects(query: str) -> list[str]:
    """The aspects a conversation-wide question names, each with the question's topic.

    "A summary of my budget tracker, including the security work and the docs" gives
    "… budget tracker security work" and "… budget tracker docs": the list that follows
    ``including`` / ``such as`` / ``like`` in the question's sentence, split at commas and
    ``and``. Fewer than two aspects (or a question that is not conversation-wide) gives
    none: the plain search already is the one aspect's search.
    """
    if not conversation_wide(query):
        return []
    lead = _LEAD.search(query)
    if lead is None:
        return []
    head = query[: lead.start()]
    tail = query[lead.end() :]
    end = _SENTENCE_END.search(tail)
    listed = tail[: end.start()] if end else tail
    topic = " ".join(w for w in query_tokens(_sentence_of(head)) if w not in _ASKING)
    found: list[str] = []
    for part in _SEPARATORS.split(listed):
        words = [w for w in query_tokens(part) if w not in _ASKING]
        if _MIN_ASPECT_WORDS <= len(words) <= _MAX_ASPECT_WORDS:
            aspect = f"{topic} {' '.join(words)}".strip()
            if aspect not in found:
                found.append(aspect)
    return found[:MAX_ASPECTS] if len(found) >= 2 else []


def _sentence_of(head: str) -> str:
    """The last sentence of ``head`` (the one the list belongs to)."""
    starts = [m.end() for m in _SENTENCE_END.finditer(head)]
    return head[starts[-1] :] if starts else head

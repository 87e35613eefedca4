"""The history a standalone context shows: the newest messages, then those that hold the query.

A standalone context (``aether context preview --session``, the MCP tool) gives a session's
history a small share of its budget (15 %), far less than the session's window holds. The
window's older messages are in no index yet: they reach the daily log, and so search,
only when the window evicts them. Shown newest first and nothing else, a question about
something said forty messages ago found it nowhere.

So the newest messages keep half the budget (the thread of the conversation; the newest
message whenever it fits at all), and the rest goes to the window's older messages that
hold most of the query's meaningful words (the coverage of their best passage, as search
weighs a word match), at least the search floor's ``min_coverage``, best first and newer
first among equals. Whatever budget they leave goes back to the newest messages. What is
chosen is shown in the order it was said, each user message with its time. With no query
words the history is the newest messages alone, as before.

What this was measured to change: docs/decisions/0005-figures-behind-the-rules.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aether.context.window import Unit
from aether.memory.retrieval.text import best_passage, word_count, words_to_cover

RECENT_SHARE = 0.5
"""The share of the history's budget kept for the newest messages when there is a query."""


def unit_text(unit: Unit) -> str:
    """The words of a unit: its messages' contents, tool results included."""
    return "\n".join(str(message.get("content") or "") for message in unit)


def history_units(
    units: Sequence[Unit],
    budget: int,
    cost: Callable[[Unit], int],
    query: Sequence[str] = (),
    min_coverage: float = 0.0,
) -> tuple[list[Unit], int]:
    """The units a standalone history shows within ``budget`` tokens, in their order.

    Args:
        units: the session window's units, oldest first.
        budget: the history's token budget.
        cost: the tokens a unit costs once rendered.
        query: the query's meaningful words (``search.query_tokens``); none: newest only.
        min_coverage: the least share of the query's words an older unit must hold.

    Returns:
        The chosen units, oldest first, and the tokens they cost.
    """
    costs: dict[int, int] = {}

    def tokens(i: int) -> int:  # counted once, and only for the units considered
        if i not in costs:
            costs[i] = cost(units[i])
        return costs[i]

    chosen: set[int] = set()
    used = 0
    newest = len(units) - 1
    recent = budget * RECENT_SHARE if query else budget
    # the newest message is shown whenever it fits at all: it is what the query answers to
    while newest >= 0 and used + tokens(newest) <= (recent if chosen else budget):
        chosen.add(newest)
        used += tokens(newest)
        newest -= 1
    if query:
        # a message with fewer words than the floor asks for cannot reach it: a huge query
        # (pasted text) costs nothing more than a count of each message's words
        needed = words_to_cover(query, min_coverage)
        matching: list[tuple[float, int]] = []
        for i in range(newest + 1):
            text = unit_text(units[i])
            if word_count(text) < needed:
                continue
            covered = best_passage(query, text)[1]
            if covered > 0 and covered >= min_coverage:
                matching.append((covered, i))
        for _, i in sorted(matching, reverse=True):
            if used + tokens(i) <= budget:
                chosen.add(i)
                used += tokens(i)
        while newest >= 0 and (newest in chosen or used + tokens(newest) <= budget):
            if newest not in chosen:
                chosen.add(newest)
                used += tokens(newest)
            newest -= 1
    return [units[i] for i in sorted(chosen)], used

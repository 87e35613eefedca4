"""Conversation-wide questions: each aspect a summary names finds its own moments."""

from __future__ import annotations

from datetime import UTC, datetime

from redis.asyncio import Redis

from aether.config import Settings
from aether.memory.retrieval.search import MemorySearch
from aether.memory.retrieval.spread import MAX_ASPECTS, aspects, conversation_wide
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.daily import DailyLog

DAY = 86400.0
START = datetime(2026, 3, 2, 9, tzinfo=UTC).timestamp()


def test_a_question_about_a_topic_over_time_is_conversation_wide() -> None:
    for query in (
        "Give me a recap of the greenhouse build so far",
        "Summarise how the migration went",
        "In what order did we fix the three outages?",
        "How has the onboarding flow changed since the pilot?",
        "What did I ask about the invoices across our sessions?",
        "Walk me through the timeline of the kiln repair",
    ):
        assert conversation_wide(query), query
    for query in (
        "What is the staging API key?",
        "When did Priya move to Lisbon?",
        "Which port does the cache listen on?",
        "How do I order a replacement badge?",  # "order" as a verb, not an order of events
    ):
        assert not conversation_wide(query), query


def test_the_aspects_a_summary_lists_each_carry_its_topic() -> None:
    found = aspects(
        "Can you give me a summary of how my greenhouse build progressed, including the "
        "irrigation timers, the cedar frame and the heating? Keep it short."
    )
    assert found == [
        "greenhouse build irrigation timers",
        "greenhouse build cedar frame",
        "greenhouse build heating",
    ]


def test_only_a_conversation_wide_question_with_two_aspects_has_aspects() -> None:
    assert aspects("Tell me about the cedar frame, including the joints and the stain") == []
    assert aspects("Summarise the greenhouse build, including the heating") == []
    assert aspects("Summarise the greenhouse build") == []
    many = ", ".join(f"part {n}" for n in "abcdefghij")
    assert len(aspects(f"A recap of the build so far, including {many}")) == MAX_ASPECTS


def test_odd_input_gives_no_aspects_and_no_error() -> None:
    for query in ("", "?", "summary including", "summary including , , and ;", "🌱" * 500):
        assert aspects(query) == []


GREENHOUSE = [
    # one afternoon that repeats the project's name over and over
    *[
        (0, f"user: greenhouse build progress summary update number {n} for the greenhouse build")
        for n in range(12)
    ],
    (2, "user: the irrigation timers now water the seedlings at six and at eighteen"),
    (5, "user: I glued and screwed the cedar frame joints and sealed them with linseed oil"),
    (9, "user: the heating is a small oil radiator on a thermostat set to eight degrees"),
    (11, "user: lunch today was a bowl of ramen near the office"),
]


async def test_a_summary_finds_every_aspect_it_names_across_sessions(
    settings: Settings, client: Redis
) -> None:
    layer = MemoryLayer.open(settings, client)
    search = MemorySearch(layer)
    await search.ensure_index()
    daily = DailyLog(layer)
    keys: dict[str, str] = {}
    for i, (day, text) in enumerate(GREENHOUSE):
        entry = await daily.log(text, "user", session=f"day{day}", timestamp=START + day * DAY + i)
        keys[text] = layer.keys.daily_entry(entry["id"])
    aspect_keys = {keys[text] for _, text in GREENHOUSE[12:15]}
    question = (
        "Give me a summary of how my greenhouse build progressed, including the irrigation "
        "timers, the cedar frame and the heating"
    )
    now = START + 12 * DAY
    plain = {h.key for h in await search.search("greenhouse build progressed", limit=5, now=now)}
    assert not aspect_keys <= plain  # the topic's name alone finds the repeated afternoon
    found = await search.search(question, limit=5, now=now)
    assert aspect_keys <= {h.key for h in found}
    assert keys[GREENHOUSE[15][1]] not in {h.key for h in found}
    assert len(found) == len({h.key for h in found}) == 5

    # the same question about a single aspect is searched as one query
    one = await search.search("Summarise the greenhouse heating", limit=3, now=now)
    assert one and one[0].key == keys[GREENHOUSE[14][1]]

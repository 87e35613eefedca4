"""Retrieval that holds up on long technical chats: passages, rank fusion, newest first,
and knowing when nothing is relevant (issue: memory beyond the conversations it was
tuned on)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import cast

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import MemorySettings, Settings
from aether.context.assembly import ScoredMemory, memory_line
from aether.keys import Keyspace
from aether.memory.retrieval.fusion import (
    OWN_READING_WEIGHT,
    SIMILARITY_SPREAD,
    chance_corrected,
    chance_lift,
    clarity,
    fuse,
    fusion_weights,
    passes_floor,
    rank_scores,
    with_own_reading,
)
from aether.memory.retrieval.newest import newest_first, values_of
from aether.memory.retrieval.search import MemorySearch, SearchHit
from aether.memory.retrieval.search_filter import SearchFilter
from aether.memory.retrieval.text import (
    best_passage,
    coverage,
    query_tokens,
    word_count,
    words,
    words_to_cover,
)
from aether.memory.storage.fulltext import search_results
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.readings import (
    MAX_PASSAGES,
    PASSAGE_OVERLAP,
    SHORT_TURN_CHARS,
    WINDOW_CHARS,
    embedding_texts,
    passages,
    window_spans,
    windows,
)
from aether.memory.storage.records import MemoryDoc, MemoryRecord
from aether.memory.storage.vectors import nearest, similarities, similarity_command
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.store.state import Store
from tests.conftest import dump_state

NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()
FILLER = (
    "We walked through the module layout, the logging setup and the retry policy of the "
    "HTTP client, then looked at how the fixtures are shared between the test packages. "
)


async def _ready(layer: MemoryLayer) -> MemorySearch:
    """A search over ``layer`` with its indexes created."""
    search = MemorySearch(layer)
    await search.ensure_index()
    return search


def _long_text(ending: str, repeats: int = 12) -> str:
    return "assistant: " + FILLER * repeats + ending


def test_a_long_text_is_cut_into_overlapping_passages_that_fit_the_window() -> None:
    text = _long_text("The staging database now runs on port 6543.")
    parts = passages(text)
    assert 2 <= len(parts) <= MAX_PASSAGES
    assert all(len(p) <= WINDOW_CHARS for p in parts)
    assert parts[0] == text[: len(parts[0])] and text.endswith(parts[-1])
    for before, after in itertools.pairwise(parts):  # neighbours overlap
        assert before[-PASSAGE_OVERLAP // 2 :] in after
    assert passages("short") == ["short"]
    huge = "word " * 10_000
    assert len(passages(huge)) == MAX_PASSAGES  # capped; full text still sees it all


def test_a_short_turn_keeps_its_own_reading_beside_the_contextual_one() -> None:
    docs: list[MemoryRecord] = [
        {"kind": "daily", "session": "s", "content": "user: Did you go to the lake?"},
        {"kind": "daily", "session": "s", "content": "assistant: Yes, yesterday!"},
        {"kind": "daily", "session": "s", "content": _long_text("The end.")},
        {"kind": "longterm", "content": "A note on its own."},
    ]
    texts = embedding_texts(docs)
    assert texts[0] == ["user: Did you go to the lake?"]  # nothing before it
    own, contextual = texts[1]
    assert own == "assistant: Yes, yesterday!"  # its own reading comes first, unchanged
    assert contextual.startswith("user: Did you go to the lake?") and contextual.endswith(own)
    assert len(docs[2]["content"]) > SHORT_TURN_CHARS
    assert texts[2] == passages(docs[2]["content"])  # a long turn: no prefix, its passages
    assert texts[3] == ["A note on its own."]


def test_rank_fusion_gives_rank_one_full_marks_and_falls_with_rank() -> None:
    scores = rank_scores([("a", 9.0), ("b", 8.9), ("c", 0.1)])
    assert scores["a"] == 1.0 and scores["a"] > scores["b"] > scores["c"] > 0
    tied = rank_scores([("a", 2.0), ("b", 2.0), ("c", 1.0)])
    assert tied["a"] == tied["b"] == 1.0 and tied["c"] == scores["c"]  # a tie stays a tie
    # scale-free: the same ranks score the same whatever the raw scores were
    assert rank_scores([("x", 0.31), ("y", 0.30), ("z", 0.29)]) == {
        "x": scores["a"],
        "y": scores["b"],
        "z": scores["c"],
    }


def test_a_word_match_weighs_as_much_as_the_share_of_the_query_it_holds() -> None:
    # "partial" has the higher BM25 score (one rare word, many times) but holds one of the
    # query's four words; "whole" holds all four
    ranked = {"text": [("partial", 9.0), ("whole", 6.0), ("weak", 1.0)]}
    covered = {"partial": 0.25, "whole": 1.0, "weak": 1.0}
    for fusion in ("minmax", "rrf"):
        fused, ranks = fuse(ranked, {"text": 1.0}, covered, fusion)
        assert fused["whole"] > fused["partial"], fusion
        assert ranks["partial"] == {"text": 1} and ranks["whole"] == {"text": 2}
    fused, _ = fuse(ranked, {"text": 1.0}, {}, "minmax")
    assert fused == {"partial": 0.0, "whole": 0.0, "weak": 0.0}  # no coverage: no weight
    both = {**ranked, "vector": [("weak", 0.8), ("other", 0.7)]}
    fused, ranks = fuse(both, {"text": 0.65, "vector": 0.35}, covered, "minmax")
    assert fused["other"] == 0.0 and ranks["other"] == {"vector": 2}  # the vector list's own
    assert fused["weak"] == 0.35  # scaled 1.0 in the vector list, 0.0 in the text list


def test_coverage_counts_the_query_words_a_memory_holds() -> None:
    assert coverage(["deploy", "billing"], words("Deployed the billing service")) == 1.0
    assert coverage(["tax", "code", "byzantine", "empire"], words("I wrote code all day")) == 0.25
    assert coverage([], words("anything")) == 0.0


def test_a_long_text_covers_the_query_as_far_as_its_best_passage_does() -> None:
    query = ["kafka", "consumer", "lag", "alert"]
    scattered = "assistant: " + "".join(
        f"{FILLER * 7}The {word} came up once. " for word in query
    )  # every word of the query, one per passage
    together = _long_text("The kafka consumer lag alert fires at 5,000 messages.")
    assert coverage(query, words(scattered)) == 1.0  # the whole text holds them all
    passage, covered = best_passage(query, scattered)
    assert covered == 0.25 and passage in passages(scattered)
    passage, covered = best_passage(query, together)
    assert covered == 1.0 and passage == passages(together)[-1]
    assert best_passage(query, "kafka lag") == ("kafka lag", 0.5)  # a short text is one passage
    assert best_passage([], together)[1] == 0.0
    huge = _long_text("The kafka consumer lag alert fires at 5,000 messages.", repeats=100)
    passage, covered = best_passage(query, huge)  # past the passages that have vectors
    assert covered == 1.0 and passage not in passages(huge) and huge.endswith(passage)
    assert list(windows(huge))[: len(passages(huge))] == passages(huge)


VOCABULARY = ["Deploy", "deployed", "the", "inside", "side", "API", "api_key", "2024", "über", "x"]


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(VOCABULARY), max_size=40),
    st.lists(st.sampled_from(["deploy", "side", "api", "2024", "über", "key"]), max_size=4),
    st.sampled_from([" ", ", ", "\n", "-"]),
)
def test_a_short_texts_best_passage_covers_what_its_words_cover(
    vocabulary: list[str], query: list[str], joint: str
) -> None:
    text = joint.join(vocabulary)
    assert best_passage(query, text) == (text, coverage(query, words(text)))


def test_the_words_a_text_needs_to_cover_a_share_of_the_query() -> None:
    query = ["deploy", "deployed", "staging", "password"]
    assert words_to_cover(query, 0.5) == 1  # "Deployed" holds two of the four
    assert words_to_cover(query, 0.75) == 2
    assert words_to_cover(query, 1.0) == 3
    assert words_to_cover([], 0.3) == words_to_cover(query, 0.0) == 1
    assert word_count("the staging-password, rotated") == 4


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(VOCABULARY), max_size=12),
    st.lists(st.sampled_from(["deploy", "deployed", "side", "api", "2024", "über"]), max_size=6),
    st.sampled_from([0.0, 0.3, 0.5, 0.75, 1.0]),
    st.sampled_from([" ", "-", "\n"]),
)
def test_a_text_with_fewer_words_than_needed_never_reaches_the_share(
    vocabulary: list[str], query: list[str], share: float, joint: str
) -> None:
    text = joint.join(vocabulary)
    if word_count(text) < words_to_cover(query, share):
        covered = best_passage(query, text)[1]
        assert covered < share or covered == 0.0  # never a match at the share


def test_a_word_counts_whole_never_a_piece_of_a_longer_one() -> None:
    assert best_passage(["side"], "We looked inside the box")[1] == 0.0
    assert best_passage(["deploy"], "It was Deployed twice")[1] == 1.0  # its first letters
    assert best_passage(["other"], "the other one")[1] == 0.0  # a stopword holds nothing
    # a window that starts inside a word does not count the piece it cut
    text = "x" * 790 + " sidewalk " + "filler " * 200
    cut = [text[start:end] for start, end in window_spans(text)]
    assert cut[1].startswith("walk ")
    assert best_passage(["walk"], text)[1] == 0.0
    # a character whose lower case is longer ("İ") moves the offsets: each window is read
    turkish = "İ " + "filler " * 200 + "the trip to the coast"
    passage, covered = best_passage(["trip", "coast"], turkish)
    assert covered == 1.0 and turkish.endswith(passage)


async def test_a_long_memory_with_the_querys_words_scattered_ranks_below_one_that_holds_them(
    store: Store,
) -> None:
    layer = MemoryLayer(store, MemorySettings())  # full text only: coverage decides
    search = await _ready(layer)
    daily = DailyLog(layer)
    query = "kafka consumer lag"
    scattered = "assistant: " + "".join(
        f"{FILLER * 7}The {word} {word} {word} came up. " for word in query.split()
    )
    together = _long_text("The kafka consumer lag alert fires at 5,000 messages.", repeats=10)
    await daily.log(scattered, timestamp=NOW - 120)
    answer = await daily.log(together, timestamp=NOW - 100)
    await daily.log("user: kafka is what we use for events", timestamp=NOW - 60)
    hits = await search.search(query, limit=3, now=NOW)
    assert hits[0].doc["id"] == answer["id"]
    far = await daily.log(_long_text("Our consumer lag on kafka was fine.", 100), timestamp=NOW)
    found = await search.search("kafka consumer lag", limit=5, now=NOW)
    assert far["id"] in [h.doc["id"] for h in found if h.coverage == 1.0]  # its end counts
    by_id = {h.doc["id"]: h for h in hits}
    assert by_id[answer["id"]].coverage == 1.0
    assert [round(h.coverage or 0, 2) for h in hits[1:]] == [0.33, 0.33]  # one word each


def test_values_are_dates_numbers_with_what_they_count_and_names() -> None:
    found = values_of("The API response time averages 400 ms on Redis, up from Flask 2.3")
    assert {"400 ms", "redis", "flask", "2.3"} <= found
    assert "i" not in values_of("Then I said so")
    dates = values_of("Moved from April 20, 2024 to the 25th of April; see you on the 3rd")
    assert dates == {"apr 20", "apr 25", "3"}  # one date whatever its form; an ordinal bare
    assert values_of("I secured 5 interviews for 3 of the roles at 2:00 PM") == {
        "5 interviews",
        "3",  # a stopword is no unit
        "2:00 pm",
    }


async def test_a_long_memory_is_found_by_its_last_passage_and_rolls_back_whole(
    settings: Settings, client: Redis, keys: Keyspace, checkpoints: Checkpoints
) -> None:
    layer = MemoryLayer.open(settings, client)
    search = await _ready(layer)
    daily = DailyLog(layer)
    await daily.log("We planted tomatoes and basil in the garden", timestamp=NOW - 50)
    before = await dump_state(client, keys)
    checkpoint = await checkpoints.create(label="before the long one")
    text = _long_text(
        "Finally, some news from home: a tabby kitten named Miso was adopted from the animal "
        "shelter. The kitten sleeps on the sofa every afternoon, chases toy mice and purrs "
        "loudly. Everyone at home adores the new kitten and its soft striped fur."
    )
    long_one = await daily.log(text, timestamp=NOW - 10)
    key = keys.daily_entry(long_one["id"])
    count = len(passages(text))
    assert count >= 3
    for n in range(2, count + 1):
        assert await client.exists(keys.passage_vector(key, n))
    assert not await client.exists(keys.passage_vector(key, count + 1))
    # no shared word with the end, which is far outside the model's window of the start
    hits = await search.search("a cat joined the family", limit=3, now=NOW)
    assert hits and hits[0].key == key and hits[0].vector_rank == 1

    await checkpoints.rollback_to(checkpoint.id)  # the passages go with their memory
    assert await dump_state(client, keys) == before
    assert not await client.exists(keys.passage_vector(key, 2))
    await checkpoints.undo()
    assert await client.exists(keys.passage_vector(key, count))
    day = datetime.fromtimestamp(NOW - 10, UTC).date()
    entries = await daily.list_day(day)
    await layer.store.apply(daily.removal(day, entries, whole_day=True), "test")  # type: ignore[arg-type]
    assert not [k async for k in client.scan_iter(match=keys.vector(key) + "*")]


async def test_the_newer_statement_ranks_first_and_the_older_is_marked_earlier(
    settings: Settings, client: Redis
) -> None:
    layer = MemoryLayer.open(settings, client)
    search = await _ready(layer)
    daily = DailyLog(layer)
    old = await daily.log(
        "user: The dashboard API response time averages 400 ms on the staging server.",
        timestamp=NOW - 86_400 * 20,
    )
    new = await daily.log(
        "user: After the caching tweaks the dashboard API response time averages 250 ms.",
        timestamp=NOW - 86_400 * 2,
    )
    await daily.log("user: I deployed the dashboard with Flask.", timestamp=NOW - 86_400)
    hits = await search.search("What is the dashboard API response time?", limit=5, now=NOW)
    ids = [h.doc["id"] for h in hits]
    assert ids.index(new["id"]) < ids.index(old["id"])
    earlier = {h.doc["id"]: h.earlier for h in hits}
    assert earlier[old["id"]] and not earlier[new["id"]]
    line = memory_line(
        ScoredMemory(hits[0].key, "x", 1, 1, 1, 1, hits[ids.index(old["id"])].doc, earlier=True),
        100,
    )
    assert "(earlier" in line


async def test_a_query_sharing_one_word_of_many_finds_nothing(store: Store) -> None:
    layer = MemoryLayer(store, MemorySettings())  # full text only: the gate alone decides
    search = await _ready(layer)
    daily = DailyLog(layer)
    await daily.log("I wrote code all day for the billing service", timestamp=NOW - 60)
    assert await search.search("the tax code of the byzantine empire", now=NOW) == []
    hits = await search.search("billing code", now=NOW)
    assert hits and hits[0].coverage == 1.0
    assert passes_floor(hits[0], 0.9, 1.0) and not passes_floor(hits[0], 0.9, 1.01)


async def test_a_passage_is_never_read_as_a_memory_of_its_own(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = MemoryLayer.open(settings, client)
    search = await _ready(layer)
    doc = build_entry(layer, _long_text("The printer jammed again."), timestamp=NOW)
    await layer.attach_embeddings([doc])
    assert len(doc.get("passage_embeddings", [])) == len(passages(doc["content"])) - 1
    await layer.store.apply(DailyLog(layer).mutation([doc]), "test")
    hits = await search.search("the printer is stuck with paper", limit=10, now=NOW)
    assert [h.key for h in hits] == [keys.daily_entry(doc["id"])]  # one hit, not one a passage
    stored = await layer.get_docs([keys.daily_entry(doc["id"])])
    assert stored[0] is not None and "passage_embeddings" not in stored[0]


async def test_rank_fusion_is_a_setting_and_finds_what_both_signals_find(
    settings: Settings, client: Redis
) -> None:
    memory = settings.memory.model_copy(update={"fusion": "rrf", "vector_alpha": 0.5})
    layer = MemoryLayer.open(settings.model_copy(update={"memory": memory}), client)
    search = await _ready(layer)
    daily = DailyLog(layer)
    car = await daily.log("I bought a new automobile yesterday", timestamp=NOW - 100)
    tax = await daily.log("The quarterly tax report is due on Friday", timestamp=NOW - 100)
    assert (await search.search("my car", now=NOW))[0].doc["id"] == car["id"]  # vectors
    hits = await search.search("quarterly tax report", now=NOW)
    best = hits[0]
    assert best.doc["id"] == tax["id"] and best.text_rank == 1 and best.vector_rank == 1
    # rank one in both lists: full marks, plus its own reading's lead over the mean
    assert best.similarity is not None and best.match is not None
    centre = sum(h.similarity or 0.0 for h in hits) / len(hits)  # the hits are the candidates
    assert abs(best.match - (1.0 + OWN_READING_WEIGHT * (best.similarity - centre))) < 1e-5


async def test_a_long_neighbour_of_a_hit_gets_no_share_of_its_relevance(store: Store) -> None:
    layer = MemoryLayer(store, MemorySettings())  # full text only: neighbours ride in
    search = await _ready(layer)
    long_one = _long_text("That is the whole tour.")
    docs = [
        build_entry(layer, text, session="s", timestamp=NOW - 60 + i)
        for i, text in enumerate(
            [
                long_one,
                "user: Which port does the staging database listen on?",
                "assistant: Ask me again tomorrow.",
            ]
        )
    ]
    await layer.store.apply(DailyLog(layer).mutation(docs), "test")
    assert len(long_one) > WINDOW_CHARS
    hits = await search.search("staging database port", limit=10, now=NOW)
    found = [h.doc["id"] for h in hits]
    assert found[0] == docs[1]["id"]
    assert docs[2]["id"] in found  # a short neighbour climbs with the hit
    assert docs[0]["id"] not in found  # a long one stands on its own


async def test_every_candidate_is_scored_on_both_signals(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = MemoryLayer.open(settings, client)
    search = await _ready(layer)
    lunches = [
        build_entry(layer, f"Lunch near the office, day {n}.", timestamp=NOW - n) for n in range(60)
    ]
    # its rare word makes it the best word match; its meaning puts it far from the query
    target = build_entry(
        layer,
        "Quokka quokka: the invoice for the plumbing repair arrived by mail.",
        timestamp=NOW - 50,
    )
    await layer.attach_embeddings([*lunches, target])
    await layer.store.apply(DailyLog(layer).mutation([*lunches, target]), "test")
    target_key = keys.daily_entry(target["id"])
    query = "quokka lunch near the office"
    vector = await layer.embed(query)
    assert vector is not None
    index = layer.vector_index()
    assert index is not None
    datatype = layer.settings.vector_datatype
    every = dict(await nearest(client, index, keys, vector, None, 200, datatype))
    assert target_key not in dict(await nearest(client, index, keys, vector, None, 40, datatype))

    hits = await search.search(query, limit=10, now=NOW)
    hit = next(h for h in hits if h.key == target_key)
    assert hit.text_rank == 1  # found by its words alone, yet scored by its vector too
    assert hit.vector_rank is not None and hit.similarity is not None
    assert abs(hit.similarity - every[target_key]) < 1e-4

    # a short pool: each list missed some; completed, both hold the same candidates
    found = await search.candidates.read(query, query_tokens(query), SearchFilter(), 10)
    lists, docs = found.lists, found.docs
    assert docs.keys() == dict(lists["text"]).keys() | dict(lists["vector"]).keys()
    texts, vectors = dict(lists["text"]), dict(lists["vector"])
    assert len(texts) > 10 and texts.keys() == vectors.keys()
    assert all(abs(vectors[key] - every[key]) < 1e-4 for key in vectors)
    full = (await search.candidates.read(query, query_tokens(query), SearchFilter(), 100)).lists
    assert all(abs(texts[key] - dict(full["text"])[key]) < 1e-6 for key in texts)
    assert found.openings.keys() == vectors.keys()  # short memories: the opening is all
    no_vector = await similarities(client, index, keys, ["nope"], vector, datatype)
    assert no_vector == {}  # no vector: left out
    # the named readings are compared one by one, not found by a walk of the whole graph
    named = similarity_command(index, keys, [target_key], vector, datatype)
    assert "HYBRID_POLICY ADHOC_BF" in named[2] and "INKEYS" in named
    assert await similarities(client, index, keys, [target_key], vector, datatype) == {
        target_key: pytest.approx(every[target_key], abs=1e-4)
    }


def test_a_reply_cut_short_by_the_timeout_loses_its_broken_row() -> None:
    """RediSearch's reply to a query that ran into its timeout (as seen at a million
    memories): a row without an id, which is left out instead of failing the search."""
    timed_out = {
        b"attributes": [],
        b"total_results": 0,
        b"format": b"STRING",
        b"results": [{b"extra_attributes": {}, b"values": []}],
        b"warning": [b"Timeout limit was reached"],
    }
    assert search_results(timed_out, scores=False, fields=True) == []
    good = {b"results": [{b"id": b"k1", b"extra_attributes": {b"vector_distance": b"0.5"}}]}
    assert search_results({**timed_out, **good}, scores=False, fields=True) == [
        ("k1", 0.0, {b"vector_distance": b"0.5"})
    ]


def test_a_long_memory_gives_up_what_its_best_passage_wins_by_chance() -> None:
    short = "user: The staging database listens on port 6543."
    lifts = [chance_lift(_long_text("The end.", repeats)) for repeats in (0, 6, 10, 30, 40)]
    assert chance_lift(short) == 0.0 and lifts[0] == 0.0  # one reading: nothing to correct
    assert lifts == sorted(lifts) and lifts[1] > 0  # more passages, more chance to win
    assert lifts[-1] == lifts[-2] < 1.3 * SIMILARITY_SPREAD  # capped with the passages
    # the best of two similarities beats one by ~0.56 spreads: a long text that matches
    # only as well as a short one ranks below it once corrected
    long_one = _long_text("The staging database listens on port 6543.", 8)
    docs: dict[str, MemoryDoc | None] = {"short": {"content": short}, "long": {"content": long_one}}
    rows = chance_corrected([("long", 0.62), ("short", 0.60)], docs, {"short": 0.60})
    assert [key for key, _ in rows] == ["short", "long"]
    assert rows[0][1] == 0.60 and rows[1][1] == 0.62 - chance_lift(long_one)
    assert chance_corrected([("gone", 0.5)], {"gone": None}, {}) == [("gone", 0.5)]
    # its opening is the one reading every memory has: it stands uncorrected, so a long
    # memory scores at least what its first passage alone scores
    openings = {"long": 0.61, "short": 0.60}
    rows = chance_corrected([("long", 0.62), ("short", 0.60)], docs, openings)
    assert rows == [("long", 0.61), ("short", 0.60)]


async def test_a_long_reply_whose_opening_answers_keeps_its_openings_score(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = MemoryLayer.open(settings, client)
    search = await _ready(layer)
    daily = DailyLog(layer)
    reply = (
        "assistant: To keep your app from overwhelming the API, throttle outgoing requests "
        "with a token bucket, queue the overflow and back off exponentially on HTTP 429. "
        + FILLER
        * 30
    )
    assert len(passages(reply)) == MAX_PASSAGES
    long_one = await daily.log(reply, timestamp=NOW - 100)
    for n, text in enumerate(
        [
            "user: my weather app calls the forecast API every few seconds",
            "user: I deployed the app to the service last night",
        ]
    ):
        await daily.log(text, timestamp=NOW - 50 + n)
    query = "how should my app throttle requests so it does not overwhelm the API"
    found = await search.candidates.read(query, query_tokens(query), SearchFilter(), 40)
    key = keys.daily_entry(long_one["id"])
    opening = found.openings[key]
    corrected = dict(chance_corrected(found.lists["vector"], found.docs, found.openings))
    assert corrected[key] == opening  # its opening alone scores this: no lift is taken
    assert opening - chance_lift(reply) < max(v for k, v in corrected.items() if k != key)
    assert corrected[key] == max(corrected.values())  # first, where the lift ranked it under
    hits = await search.search(query, limit=4, now=NOW)
    assert hits[0].key == key


def test_a_memory_gains_its_own_readings_similarity_on_top_of_its_fused_score() -> None:
    fused = {"borrowed": 0.80, "itself": 0.78, "mirrored": 0.5, "wordless": 0.9}
    own = {"borrowed": 0.20, "itself": 0.55}  # "borrowed" matched by its context only
    scored = with_own_reading(fused, own, {"borrowed": 0.6, "mirrored": 0.7})
    assert scored["itself"] > scored["borrowed"]  # the memory that answers leads
    mean = (0.20 + 0.55 + 0.7) / 3  # centred on the candidates: no lift common to all
    assert abs(scored["itself"] - (0.78 + OWN_READING_WEIGHT * (0.55 - mean))) < 1e-12
    assert abs(scored["borrowed"] - (0.80 + OWN_READING_WEIGHT * (0.20 - mean))) < 1e-12
    # its opening not read (far down the vector list): its best reading stands for it
    assert abs(scored["mirrored"] - (0.5 + OWN_READING_WEIGHT * (0.7 - mean))) < 1e-12
    assert scored["wordless"] == 0.9  # no vector: nothing added, nothing taken
    assert abs(sum(scored.values()) - sum(fused.values())) < 1e-12
    assert with_own_reading({"a": 0.5}, {}, {}) == {"a": 0.5}
    assert 0 < OWN_READING_WEIGHT < 1


async def test_every_vector_candidate_gets_its_own_openings_similarity(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = MemoryLayer.open(settings, client)
    search = await _ready(layer)
    daily = DailyLog(layer)
    text = _long_text(
        "Finally, some news from home: a tabby kitten named Miso was adopted from the animal "
        "shelter. The kitten sleeps on the sofa every afternoon and chases toy mice."
    )
    long_one = await daily.log(text, timestamp=NOW - 100)
    await daily.log("user: We planted tomatoes and basil in the garden", timestamp=NOW - 50)
    key = keys.daily_entry(long_one["id"])
    query = "a kitten was adopted from the shelter"
    # a pool of two readings: the long memory's last passages, never its opening
    found = await search.candidates.read(query, query_tokens(query), SearchFilter(), 2)
    assert dict(found.lists["vector"]).keys() == {key}
    assert key not in found.openings  # the reply did not hold it: chance correction as before
    vector = await layer.embed(query)
    opening = await layer.embed(passages(text)[0])
    assert vector is not None and opening is not None
    cosine = sum(a * b for a, b in zip(vector, opening, strict=True))
    assert abs(found.own[key] - cosine) < 1e-3
    assert found.own[key] < dict(found.lists["vector"])[key]  # its opening is about code
    whole = await search.candidates.read(query, query_tokens(query), SearchFilter(), 40)
    assert whole.own.keys() >= dict(whole.lists["vector"]).keys()
    assert abs(whole.own[key] - found.own[key]) < 1e-6


def test_adaptive_fusion_weighs_each_list_by_how_clearly_its_best_stand_out() -> None:
    sharp = [("a", 10.0)] + [(f"x{n}", 1.0 + n / 100) for n in range(20)]
    flat = [(f"y{n}", 0.60 - n / 1000) for n in range(21)]
    clear, blurred = clarity(sharp), clarity(flat)
    assert clear is not None and blurred is not None and clear > 2.5 * blurred
    weights = fusion_weights({"text": sharp, "vector": flat}, 0.35, "adaptive")
    assert weights["text"] > 0.7 and abs(sum(weights.values()) - 1) < 1e-9
    weights = fusion_weights({"text": flat, "vector": sharp}, 0.35, "adaptive")
    assert weights["vector"] > 0.7
    # too few or all equal: the configured alpha; other fusions: always the alpha
    assert clarity(sharp[:2]) is None and clarity([("a", 1.0)] * 5) is None
    assert fusion_weights({"text": sharp[:2], "vector": flat}, 0.35, "adaptive") == {
        "text": 0.65,
        "vector": 0.35,
    }
    assert fusion_weights({"text": sharp, "vector": flat}, 0.35, "minmax")["vector"] == 0.35
    assert fusion_weights({"vector": flat}, 0.35, "adaptive") == {"vector": 1.0}


def _hit(key: str, content: str, days_ago: float, query: list[str]) -> SearchHit:
    doc = cast(MemoryDoc, {"id": key, "content": content, "timestamp": NOW - days_ago * 86_400})
    return SearchHit(key, doc, 1.0, 1, 1, coverage=coverage(query, words(content)))


def test_an_update_in_other_words_still_ranks_above_what_it_replaces() -> None:
    query = query_tokens("What is the test coverage of my API integration module?")
    old = _hit(
        "old",
        "user: I'm trying to reach full test coverage on my API integration module, and "
        "I've currently reached 65% after my first test suite run on March 27.",
        30,
        query,
    )
    new = _hit(
        "new",
        "user: I want to increase the test coverage for my API integration module, which "
        "has recently improved to 78%. Can you help me write a test for a 401 error?",
        10,
        query,
    )
    other = _hit(
        "other", "user: My API integration module calls OpenWeather every minute.", 5, query
    )
    ranked = newest_first([old, other, new], query)
    assert [h.key for h in ranked] == ["new", "old", "other"]
    assert [h.earlier for h in ranked] == [False, True, False]
    # a newer result about another part of the question leaves the order alone
    lunch = _hit("lunch", "user: The test lunch in the module room cost 12 dollars.", 1, query)
    assert [h.key for h in newest_first([old, lunch], query)] == ["old", "lunch"]


def test_a_short_update_that_restates_the_subject_ranks_above_the_full_statement() -> None:
    query = query_tokens("What deadline should I aim for to submit my draft to the writing group?")
    old = _hit(
        "old",
        "user: I'm worried about meeting my April 20 deadline for submitting the draft to "
        "the local writing group.",
        30,
        query,
    )
    new = _hit("new", "user: I won't meet the new April 25 deadline for the draft.", 5, query)
    ranked = newest_first([old, new], query)
    assert [h.key for h in ranked] == ["new", "old"] and ranked[1].earlier
    # without a word of change it is another date, not an update: the order stays
    other = _hit("other", "user: The writing group meets again on May 2.", 5, query)
    assert [h.key for h in newest_first([old, other], query)] == ["old", "other"]
    # a bare number counts what the other counts when its sentence names it
    query = query_tokens("How many commits have been merged into the main branch?")
    before = _hit("before", "user: The main branch has 150 commits merged so far.", 20, query)
    after = _hit("after", "user: Commits merged into main have now reached 165.", 2, query)
    assert [h.key for h in newest_first([before, after], query)] == ["after", "before"]
    unrelated = _hit("x", "user: Commits merged into main run 12 checks each now.", 2, query)
    assert [h.key for h in newest_first([before, unrelated], query)] == ["before", "x"]


def test_one_shared_word_of_a_two_word_query_is_no_subject_in_common() -> None:
    # "caroline" is half the query and every turn of hers carries it: not about one thing
    query = query_tokens("What did Caroline research?")
    assert query == ["caroline", "research"]
    found = _hit("found", "Caroline: Researching adoption agencies since May 3.", 40, query)
    trip = _hit("trip", "Caroline: We drove to the lake on June 7.", 20, query)
    music = _hit("music", "Caroline: My guitar recital is on July 9.", 1, query)
    ranked = newest_first([found, trip, music], query)
    assert [h.key for h in ranked] == ["found", "trip", "music"]
    assert not any(h.earlier for h in ranked)
    # two words of it in common, two values: the newer statement still leads
    update = _hit("update", "Caroline: My research now runs to June 30.", 1, query)
    older = _hit("older", "Caroline: My research runs to May 31.", 40, query)
    ranked = newest_first([older, trip, update], query)
    assert [h.key for h in ranked] == ["update", "older", "trip"] and ranked[1].earlier

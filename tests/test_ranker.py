"""The learned ranker: the rows it ranks are the rows training reads; its model loads or
search keeps fusion's order."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lightgbm
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st
from redis.asyncio import Redis

from aether.config import Settings
from aether.memory.retrieval.hit import Signal
from aether.memory.retrieval.ranker import (
    _CACHED_TEXT_CHARS,
    FEATURES,
    MODEL_FILE,
    TIME_WORDS,
    TRAINED_EMBEDDER,
    LearnedRanker,
    RankingInputs,
    _cached_memory_text,
    _QueryText,
    features,
    ranker_for,
    reordered,
    rows_from_json,
    rows_to_json,
    shared_ranker,
    words_of,
)
from aether.memory.retrieval.search import MemorySearch
from aether.memory.retrieval.text import STOPWORDS, query_tokens
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.records import MemoryDoc
from aether.memory.tiers.daily import DailyLog
from tests.conftest import run_cli

NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()
NOTES = [
    ("s1", "The staging database moved to the new cluster on Monday"),
    ("s1", "We rotated the staging API key after the audit"),
    ("s1", "Lunch was a bowl of ramen near the office"),
    ("s2", "The production database still runs on the old cluster"),
    ("s2", "Marta asked for a report on database latency"),
    ("s2", "The cluster upgrade is planned for next quarter"),
    ("s2", "Ivo prefers tea over coffee in the morning"),
    ("s3", "Database backups run every night at two"),
    ("s3", "The old cluster will be retired after the upgrade"),
    ("s3", "Weekend hike up the hill was muddy"),
]
QUERY = "what happened to the database cluster"


class Capture:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int, list[str], np.ndarray]] = []

    def __call__(self, query: str, limit: int, keys: list[str], rows: np.ndarray) -> None:
        self.seen.append((query, limit, list(keys), rows.copy()))


def _with(settings: Settings, **memory: Any) -> Settings:
    return settings.model_copy(update={"memory": settings.memory.model_copy(update=memory)})


async def _layer(settings: Settings, client: Redis) -> tuple[MemoryLayer, MemorySearch]:
    layer = MemoryLayer.open(settings, client)
    search = MemorySearch(layer)
    await search.ensure_index()
    daily = DailyLog(layer)
    for i, (session, text) in enumerate(NOTES):
        await daily.log(text, "user", session=session, timestamp=NOW - 3600 + i)
    return layer, search


def _model(keys: list[str], rows: np.ndarray, liked: set[str], path: Path) -> Path:
    """A small model that prefers ``liked`` keys, trained on one search's rows."""
    labels = np.array([1.0 if k in liked else 0.0 for k in keys])
    x = np.vstack([rows] * 8)  # enough rows for the trees to split
    y = np.concatenate([labels] * 8)
    data = lightgbm.Dataset(x, y, group=[len(keys)] * 8, feature_name=list(FEATURES))
    params = {"objective": "lambdarank", "min_data_in_leaf": 1, "verbosity": -1, "seed": 1}
    lightgbm.train(params, data, num_boost_round=20).save_model(str(path))
    return path


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


async def test_the_rows_a_search_ranks_by_are_the_rows_training_reads(
    settings: Settings, client: Redis, tmp_path: Path
) -> None:
    _, search = await _layer(settings, client)
    capture = Capture()
    search.feature_observer = capture
    await search.search(QUERY, limit=3, now=NOW)
    (query, limit, keys, rows) = capture.seen[-1]
    assert (query, limit) == (QUERY, 3) and rows.shape == (len(keys), len(FEATURES))
    assert len(keys) >= 4
    # what bench/ranker_data.py writes and bench/train_ranker.py reads is the same rows
    assert _same(rows_from_json(rows_to_json(rows)), rows)
    assert any(math.isnan(v) for v in rows.ravel())  # a missing signal stays missing
    # a model that likes the last of fusion's candidates: it must come first now
    liked = set(keys[-3:])
    ranker = LearnedRanker.load(_model(keys, rows, liked, tmp_path / "model.txt"))
    assert ranker is not None
    search.ranker = ranker
    hits = await search.search(QUERY, limit=3, now=NOW)
    _, _, keys_again, rows_again = capture.seen[-1]
    assert keys_again == keys and _same(rows_again, rows)  # the same search, the same rows
    expected = ranker.order(keys, rows)[:3]
    assert {h.key for h in hits} == set(expected)
    assert set(expected) != set(keys[:3])  # the model changed what fusion would return


async def test_without_its_model_search_keeps_fusions_order(
    settings: Settings, client: Redis, tmp_path: Path
) -> None:
    layer, search = await _layer(settings, client)
    by_fusion = MemorySearch(MemoryLayer.open(_with(settings, ranker="fusion"), client))
    by_fusion.memory.embedder = layer.embedder
    fused = [h.key for h in await by_fusion.search(QUERY, limit=5, now=NOW)]
    assert LearnedRanker.load(tmp_path / "absent.txt") is None
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("tree\nnot a model at all\n")
    assert LearnedRanker.load(garbage) is None
    other = tmp_path / "other-features.txt"
    data = lightgbm.Dataset(
        np.random.default_rng(1).random((40, 2)),
        np.tile([1.0, 0.0], 20),
        group=[10] * 4,
        feature_name=["a", "b"],
    )
    lightgbm.train(
        {"objective": "lambdarank", "verbosity": -1, "min_data_in_leaf": 1}, data, 5
    ).save_model(str(other))
    assert LearnedRanker.load(other) is None  # a model of other features is refused
    search.ranker = LearnedRanker.load(tmp_path / "absent.txt")
    assert [h.key for h in await search.search(QUERY, limit=5, now=NOW)] == fused


def test_the_shipped_model_loads_with_the_features_search_computes() -> None:
    assert MODEL_FILE.is_file()
    ranker = shared_ranker()
    assert ranker is not None and list(ranker.booster.feature_name()) == list(FEATURES)


async def test_learned_is_the_default_and_fusion_is_chosen_by_the_setting(
    settings: Settings, client: Redis
) -> None:
    assert settings.memory.ranker == "learned"
    layer = MemoryLayer.open(settings, client)
    assert layer.embedder is not None and layer.embedder.model_name == TRAINED_EMBEDDER
    assert MemorySearch(layer).ranker is shared_ranker() is not None
    fusion = _with(settings, ranker="fusion")
    assert MemorySearch(MemoryLayer.open(fusion, client)).ranker is None


async def test_with_another_embedder_search_keeps_fusions_order(
    settings: Settings, client: Redis
) -> None:
    # the model's similarity features are on its embedder's scale: another's would mislead it
    assert ranker_for(TRAINED_EMBEDDER) is shared_ranker()
    assert ranker_for("text-embedding-3-small") is None
    assert ranker_for(None) is None
    full_text = settings.model_copy(
        update={"embedding": settings.embedding.model_copy(update={"provider": "none"})}
    )
    assert MemorySearch(MemoryLayer.open(full_text, client)).ranker is None


def test_reordered_keeps_fusions_scale() -> None:
    scores = {"a": 0.9, "b": 0.5, "c": 0.1}
    assert reordered(scores, ["c", "a", "b"]) == {"c": 0.9, "a": 0.5, "b": 0.1}
    with pytest.raises(ValueError):
        reordered(scores, ["c", "a"])


def test_features_read_the_query_and_each_candidate_alone() -> None:
    docs: dict[str, MemoryDoc | None] = {
        "a": {
            "content": "Marta moved the launch to 12 March",
            "kind": "daily",
            "source": "user",
            "session": "s1",
            "timestamp": NOW,
            "tags": ["marta"],
        },
        "b": {
            "content": "When is the launch?",
            "kind": "daily",
            "source": "agent",
            "session": "s1",
            "timestamp": NOW - 86_400,
        },
        "c": {"content": "an unrelated note", "kind": "longterm", "source": "user"},
    }
    query = "When did Marta move the launch date to 12 March"
    tokens = ["marta", "move", "launch", "date", "12", "march"]
    inputs = RankingInputs(
        query=query,
        tokens=tokens,
        ranked={Signal.TEXT: [("a", 9.0), ("b", 3.0)], Signal.VECTOR: [("a", 0.8), ("c", 0.4)]},
        similarity={"a": 0.8, "c": 0.4},
        covered={"a": 0.8, "b": 0.2},
        weights={Signal.TEXT: 0.6, Signal.VECTOR: 0.4},
        fused={"a": 1.0, "b": 0.3, "c": 0.1},
        scores={"a": 1.1, "b": 0.35, "c": 0.1},
        own={"a": 0.8},
        docs=docs,
    )
    keys, rows = features(inputs)
    assert keys == ["a", "b", "c"] and rows.shape == (3, len(FEATURES))
    at = {name: i for i, name in enumerate(FEATURES)}
    a, b, c = rows
    assert a[at["text_rank"]] == 1 and math.isnan(c[at["text_rank"]])  # c: no word match
    assert math.isnan(b[at["vector_rank"]]) and c[at["vector_rank"]] == 2
    assert (a[at["from_user"]], b[at["from_user"]]) == (1.0, 0.0)
    assert (a[at["is_daily"]], c[at["is_note"]]) == (1.0, 1.0)
    assert a[at["tag_named"]] == 1.0 and b[at["tag_named"]] == 0.0
    assert a[at["name_share"]] == 1.0 and b[at["name_share"]] == 0.0  # "Marta" (not "When")
    assert a[at["number_share"]] == 1.0 and b[at["number_share"]] == 0.0
    assert a[at["time_mentions"]] >= 1 and b[at["is_question"]] == 1.0
    assert a[at["asks_when"]] == b[at["asks_when"]] == 1.0
    assert a[at["session_share"]] == pytest.approx(2 / 3) and math.isnan(c[at["session_share"]])
    assert b[at["same_session_as_best"]] == 1.0
    assert a[at["log_age_days_behind_newest"]] == 0.0 and b[at["newness_rank"]] == 2
    again_keys, again = features(inputs)
    assert again_keys == keys and _same(again, rows)  # pure
    top_keys, top = features(inputs, depth=2)  # what a search reads to rank
    assert top_keys == keys and _same(top, rows[:2])  # the same rows as training's


def test_a_person_searches_with_the_learned_ranker_from_the_shell(
    model_cli_env: dict[str, str], cli_env: dict[str, str]
) -> None:
    """The default read by a new process: the shipped model loaded beside the local model.

    Full text only (no embedder), the same search keeps fusion's order.
    """
    env = {**os.environ, **model_cli_env}
    for text in (
        "Rotated the production API key after the audit",
        "The staging API key stays as it was",
        "Bought oat milk for the office",
    ):
        assert run_cli(env, "memory", "log", text).returncode == 0
    found = run_cli(env, "memory", "search", "which API key was rotated", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["content"] == "Rotated the production API key after the audit"
    assert "oat milk" not in found.stdout
    assert "fusion ranks" not in found.stderr  # the model loaded: no fallback was logged
    full_text = run_cli({**os.environ, **cli_env}, "memory", "search", "API key", "--json")
    assert full_text.returncode == 0, full_text.stderr
    assert "Rotated the production API key" in full_text.stdout
    bad = run_cli({**env, "AETHER_MEMORY__RANKER": "sorted"}, "memory", "search", "key")
    assert bad.returncode != 0 and "ranker" in bad.stderr


_PIECES = [*"ab Z9_0-:.?\n\t\x1fé２½", "2024", "10:30", "March", "ago", "Flask 2.3"]
_TEXTS = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


@examples(max_examples=300, deadline=None)
@given(_TEXTS)
def test_words_are_the_regexs_words_on_any_text(text: str) -> None:
    assert words_of(text) == re.findall(r"\w+", text)


@examples(max_examples=300, deadline=None)
@given(_TEXTS, _TEXTS)
def test_the_lexical_features_are_their_regex_definitions(query: str, content: str) -> None:
    """The fast reading of a memory's words (:func:`words_of`, its distinct words) gives
    what the definitions the model was trained with give."""
    asked = _QueryText.of(query, query_tokens(query))
    lower = content.lower()
    words = re.findall(r"\w+", lower)
    times = sum(w in TIME_WORDS for w in words) + len(re.findall(r"\b\d{4}\b", lower))
    times += len(re.findall(r"\b\d{1,2}:\d{2}\b", lower))
    names = len(asked.names & set(words)) / len(asked.names) if asked.names else math.nan
    numbers = (
        len(asked.numbers & set(re.findall(r"\d+", lower))) / len(asked.numbers)
        if asked.numbers
        else math.nan
    )
    kept = [w for w in words if w not in STOPWORDS]
    bigrams = (
        len(asked.bigrams & set(itertools.pairwise(kept))) / len(asked.bigrams)
        if asked.bigrams
        else math.nan
    )
    got = asked.lexical(content)
    assert got == pytest.approx(
        (bigrams, names, numbers, float(min(5, times)), float(content.rstrip().endswith("?"))),
        nan_ok=True,
    )


def test_a_memory_is_read_once_unless_it_is_long() -> None:
    """Ordinary memories are read once per process; a long one each time, the same way."""
    asked = _QueryText.of("When did Flask 2.3 ship?", query_tokens("When did Flask 2.3 ship?"))
    sentence = "In March 2024 at 10:30 we shipped Flask 2.3 to staging. "
    long_text = sentence * (_CACHED_TEXT_CHARS // len(sentence) + 1)
    _cached_memory_text.cache_clear()
    first = asked.lexical(sentence)
    assert _cached_memory_text.cache_info().currsize == 1
    assert asked.lexical(sentence) == first
    assert _cached_memory_text.cache_info().hits == 1
    assert asked.lexical(long_text) == pytest.approx((2 / 3, 1.0, 1.0, 5.0, 0.0))
    assert _cached_memory_text.cache_info().currsize == 1
    assert first == pytest.approx((2 / 3, 1.0, 1.0, 3.0, 0.0))  # not (3, ship)


def test_lightgbm_is_imported_without_the_libraries_the_ranker_never_uses() -> None:
    code = (
        "import sys\n"
        "from aether.memory.retrieval.ranker import LearnedRanker\n"
        "assert 'lightgbm' not in sys.modules\n"
        "assert LearnedRanker.load() is not None and 'lightgbm' in sys.modules\n"
        "assert 'sklearn' not in sys.modules, 'scikit-learn was imported with lightgbm'\n"
        "import sklearn.base\n"  # still importable by whoever needs it
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


async def test_the_ranker_is_loaded_by_the_first_search_that_orders(
    settings: Settings, client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aether.memory.retrieval.search as search_module

    asked: list[str | None] = []

    def counted(name: str | None) -> LearnedRanker | None:
        asked.append(name)
        return ranker_for(name)

    monkeypatch.setattr(search_module, "ranker_for", counted)
    _, search = await _layer(settings, client)
    assert asked == []  # built, not yet ordering: LightGBM is not paid for
    hits = await search.search(QUERY, limit=5, now=NOW)
    assert hits and asked == [TRAINED_EMBEDDER]
    await search.search(QUERY, limit=5, now=NOW)
    assert asked == [TRAINED_EMBEDDER] and search.ranker is shared_ranker()

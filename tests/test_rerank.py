"""Optional reranking by the packaged cross-encoder (``memory.rerank``, issue #32 item 6)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.context.assembly import ContextAssembler
from aether.errors import ConfigError
from aether.identity.bootstrap import default_identity_dir
from aether.identity.profile import IdentityStore
from aether.memory.retrieval import rerank as rerank_module
from aether.memory.retrieval.rerank import WEIGHT, cross_encoder, judged_text, model_dir, rerank
from aether.memory.retrieval.search import MemorySearch, SearchHit
from aether.memory.retrieval.text import query_tokens
from aether.memory.storage.layer import MemoryLayer
from aether.memory.storage.readings import passages
from aether.memory.tiers.daily import DailyLog
from tests.conftest import dump_state, run_cli

NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()
QUESTION = "Where did Caroline move from?"
ANSWER = "Caroline: I came here from Sweden four years ago, right after school."
DISTRACTORS = (
    "Melanie: Caroline, where should we move the meeting? Caroline will decide later.",
    "Melanie: Caroline, move your car please, it blocks the garage.",
    "Caroline: Where did you buy that lamp? I want to move mine.",
)


def _reranking(settings: Settings) -> Settings:
    memory = settings.memory.model_copy(update={"rerank": "cross-encoder"})
    return settings.model_copy(update={"memory": memory})


def _hit(key: str, content: str, match: float, relevance: float) -> SearchHit:
    return SearchHit(key, {"id": key, "content": content}, relevance, 1, 1, match)


def test_the_packaged_model_is_installed_with_the_local_extra() -> None:
    folder = model_dir()
    assert folder is not None and (folder / "model.onnx").is_file()
    assert (folder / "tokenizer.json").is_file()


def test_the_cross_encoder_judges_the_answer_relevant_and_the_rest_not() -> None:
    model = cross_encoder()
    scores = model.score(QUESTION, [ANSWER, *DISTRACTORS, "The weather was mild."])
    assert all(0.0 < p < 1.0 for p in scores)
    assert scores[0] == max(scores) and scores[0] > 0.9
    assert max(scores[1:]) < scores[0] - 0.2 and scores[-1] < 0.01
    assert model.score(QUESTION, [ANSWER]) == scores[:1]  # cached: the same judgement
    assert model.score(QUESTION, []) == []


def test_rerank_averages_match_and_judgement_and_keeps_recency() -> None:
    hits = [
        _hit("a", DISTRACTORS[0], match=0.8, relevance=0.77),
        _hit("b", ANSWER, match=0.6, relevance=0.59),
        _hit("c", DISTRACTORS[1], match=0.5, relevance=0.5),
    ]
    out = asyncio.run(rerank(QUESTION, query_tokens(QUESTION), hits, depth=2, recency_weight=0.1))
    assert out[0].key == "b"
    probability = cross_encoder().score(QUESTION, [ANSWER])[0]
    b = next(h for h in out if h.key == "b")
    assert b.match is not None
    assert b.match == pytest.approx((1 - WEIGHT) * 0.6 + WEIGHT * probability, abs=1e-5)
    # recency's part of the relevance is unchanged: relevance - 0.9 * match stays
    assert b.relevance - 0.9 * b.match == pytest.approx(0.59 - 0.9 * 0.6, abs=1e-5)
    c = next(h for h in out if h.key == "c")  # below the depth: unjudged, half its match
    assert c.match == pytest.approx((1 - WEIGHT) * 0.5)
    assert asyncio.run(rerank(QUESTION, [], [], depth=5, recency_weight=0.1)) == []


async def _ready(layer: MemoryLayer) -> MemorySearch:
    """A search over ``layer`` with its indexes created."""
    search = MemorySearch(layer)
    await search.ensure_index()
    return search


async def _seed(layer: MemoryLayer) -> str:
    daily = DailyLog(layer)
    for i, text in enumerate(DISTRACTORS):
        await daily.log(text, timestamp=NOW - 3_600 * (i + 1))
    answer = await daily.log(ANSWER, timestamp=NOW - 86_400 * 3)
    return str(answer["id"])


async def test_a_reranked_search_puts_the_answer_first_where_fusion_did_not(
    settings: Settings, client: Redis
) -> None:
    plain = MemoryLayer.open(settings, client)
    search = await _ready(plain)
    answer = await _seed(plain)
    before = await search.search(QUESTION, limit=4, now=NOW)
    assert before and before[0].doc["id"] != answer  # the words of the question mislead fusion
    layer = MemoryLayer.open(_reranking(settings), client)
    layer.embedder = plain.embedder
    after = await MemorySearch(layer).search(QUESTION, limit=4, now=NOW)
    assert after[0].doc["id"] == answer
    assert {h.key for h in after} == {h.key for h in before}  # reordered, nothing new found
    assert [h.relevance for h in after] == sorted((h.relevance for h in after), reverse=True)


async def test_rerank_without_the_model_says_how_to_install_it_and_changes_nothing(
    settings: Settings, client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer = MemoryLayer.open(_reranking(settings), client)
    search = await _ready(layer)
    await _seed(layer)
    image = await dump_state(client, layer.keys)
    monkeypatch.setattr(rerank_module, "model_dir", lambda: None)
    with pytest.raises(ConfigError, match=r"aether\[local\]"):
        await search.search(QUESTION, limit=4, now=NOW)
    assert await dump_state(client, layer.keys) == image


def test_rerank_is_a_setting_the_cli_search_honours(
    model_cli_env: dict[str, str], tmp_path: Path
) -> None:
    cli_env = model_cli_env  # the cross-encoder reranks what the embeddings found
    records = tmp_path / "said.jsonl"
    records.write_text(
        "".join(
            json.dumps({"kind": "daily", "content": text, "source": "user"}) + "\n"
            for text in (ANSWER, *DISTRACTORS)
        )
    )
    imported = run_cli(cli_env, "memory", "import", str(records))  # one model load, not four
    assert imported.returncode == 0, imported.stderr
    env = {**cli_env, "AETHER_MEMORY__RERANK": "cross-encoder"}
    found = run_cli(env, "memory", "search", QUESTION, "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert "Sweden" in hits[0]["content"] and len(hits) == 4
    bad = run_cli({**cli_env, "AETHER_MEMORY__RERANK": "bogus"}, "memory", "search", QUESTION)
    assert bad.returncode != 0 and "rerank" in (bad.stderr + bad.stdout).lower()


async def test_reranked_searches_take_hostile_queries_and_run_concurrently(
    settings: Settings, client: Redis
) -> None:
    layer = MemoryLayer.open(_reranking(settings), client)
    search = await _ready(layer)
    answer = await _seed(layer)
    image = await dump_state(client, layer.keys)
    odd = await search.search("*&^%$#@!{}[]|\\\"' -@tag:{x} Caroline", limit=4, now=NOW)
    assert all(h.doc["content"] for h in odd)
    long_query = QUESTION + " and" * 20_000  # cut to the model's window, not an error
    assert len(await search.search(long_query, limit=4, now=NOW)) <= 4
    together = await asyncio.gather(*(search.search(QUESTION, limit=4, now=NOW) for _ in range(4)))
    assert all(hits[0].doc["id"] == answer for hits in together)
    assert len({tuple(h.relevance for h in hits) for hits in together}) == 1
    assert await dump_state(client, layer.keys) == image  # a reranked read writes nothing


async def test_a_context_over_simulated_days_leads_with_the_reranked_answer(
    settings: Settings, client: Redis
) -> None:
    layer = MemoryLayer.open(_reranking(settings), client)
    await _ready(layer)
    daily = DailyLog(layer)
    day = 86_400.0
    start = NOW - 12 * day
    await daily.log(ANSWER, timestamp=start + day)  # said once, early on
    for n in range(2, 6):  # the days after: talk that shares the question's words
        for i, text in enumerate(DISTRACTORS):
            await daily.log(text, timestamp=start + n * day + i)
        await daily.log(f"Melanie: day {n} of the garden went fine.", timestamp=start + n * day + 9)
    identity = IdentityStore(layer.store, Checkpoints(client, layer.keys))
    await identity.ensure(default_identity_dir())
    at = datetime.fromtimestamp(NOW, UTC)
    plain = MemoryLayer.open(settings, client)
    plain.embedder = layer.embedder
    before = await ContextAssembler(plain, identity, settings.context).assemble(
        QUESTION, 600, now=at
    )
    assert before.chosen and "Sweden" not in before.chosen[0].content  # fusion: not first
    ctx = await ContextAssembler(layer, identity, settings.context).assemble(QUESTION, 600, now=at)
    assert ctx.chosen and "Sweden" in ctx.chosen[0].content
    assert "Sweden" in ctx.memories.text


def test_a_long_memory_is_judged_by_its_passage_that_holds_the_query() -> None:
    filler = "We reviewed the build scripts and the lint settings of the repository. " * 40
    long_text = filler + "Caroline moved here from Sweden four years ago, right after school."
    tokens = query_tokens(QUESTION)
    judged = judged_text(tokens, long_text)
    assert "Sweden" in judged and len(judged) < len(long_text)
    assert judged in passages(long_text)
    assert judged_text(tokens, ANSWER) == ANSWER  # a short memory is read whole
    model = cross_encoder()
    head, best = model.score(QUESTION, [long_text, judged])
    assert best > head  # cut at its head, the answer would be lost

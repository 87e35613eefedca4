"""Retrieval quality on LoCoMo (or any file in its format); prints one JSON object.

Each turn is logged as a daily entry (``speaker: text``, the session's date and time as
its timestamp, the speaker as a tag, the LoCoMo session as its session), one batch per
session as a chat's evicted turns are; each question of categories 1-4 with evidence is a
search. recall@k = fraction of the question's evidence turns among the top k results,
in total and per LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop).

The relevance floor: each question is asked once more with the floor off (25 results,
each with its cosine similarity, whether full text matched and the share of the query's
words it holds), and recall@10 is recomputed for a range of floors (similarity,
coverage); NONSENSE queries (about nothing a conversation holds) give each floor's
false-positive rate, the share of them that return anything. The configured floor
(``memory.min_similarity``, ``memory.min_coverage``) is what the totals above use.

``recall@10_ceiling``: recall@10 if the first 30 (50) results of a search with that limit
were perfectly ordered, evidence first: what any reranker of them could reach at most.

``recall_by_fusion``: recall@5/10/25 and per category for the other fusions
(``memory.fusion``) and the other ranker (``ranker=learned``: ``memory.ranker``) over the
same loaded turns, in the same run.

``llm_judged``: the same figures with the configured LLM judging each search's best
results (``memory.rerank = "llm"``, its floor at ``LLM_FLOOR``), and the share of
NONSENSE queries that then find nothing; measured only when ``AETHER_LLM__BASE_URL`` and
``AETHER_LLM__MODEL`` name an endpoint.

Usage: python bench/locomo.py [PATH] [--embeddings local|none]
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, get_args

from percentiles import percentile

from aether.config import MemorySettings, Settings
from aether.memory.retrieval.fusion import passes_floor
from aether.memory.retrieval.llm_judge import LLMJudge
from aether.memory.retrieval.rerank import cross_encoder, judged_text, model_dir
from aether.memory.retrieval.search import MemorySearch, SearchHit
from aether.memory.retrieval.text import query_tokens
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.runtime.heap import settle_heap
from aether.runtime.llm import LLMClient
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.tokens import count_tokens

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo-dev.json"
KS = (5, 10, 25)
CEILING_DEPTHS = (30, 50)
"""How many of a search's results a perfect reordering may draw on (``recall@10_ceiling``):
30 is how many the optional reranker reads (``memory.rerank_depth``)."""
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
FLOORS = (-1.0, 0.2, 0.3, 0.4, 0.5)
COVERAGES = (0.0, 0.3, 0.5, 0.67)
NONSENSE = (
    "quantum chromodynamics zebra",
    "zzzz qqqq",
    "xkcd vbnm qwpo",
    "tensor calculus of ferromagnetic plasma",
    "how many protons are in a molybdenum nucleus",
    "the derivative of the arctangent function",
    "kernel panic in the bootloader firmware",
    "photosynthesis in deep sea hydrothermal vents",
    "compile the fortran subroutine with openmp",
    "what is the boiling point of liquid nitrogen",
    "medieval siege trebuchet counterweight",
    "sql injection in the legacy cobol mainframe",
    "asdf ghjk lkjh",
    "the tax code of the byzantine empire",
    "orbital mechanics of a geostationary satellite",
    "lorem ipsum dolor sit amet",
    "mitochondrial dna polymerase fidelity",
    "quarterly earnings of a semiconductor foundry",
    "tectonic subduction zones of the pacific",
    "unicode normalization of hangul syllables",
)
_DIA = re.compile(r"^D\d+:\d+$")


def turns(sample: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(dia_id, content, timestamp) of every turn of a conversation."""
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        for i, turn in enumerate(conv[f"session_{n}"]):
            out.append((turn["dia_id"], f"{turn['speaker']}: {turn['text']}", when.timestamp() + i))
        n += 1
    return out


def questions(sample: dict[str, Any]) -> list[tuple[str, set[str], int]]:
    """(question, evidence dia_ids, category) for categories 1-4 with well-formed evidence."""
    out = []
    for qa in sample["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = {e.strip() for e in qa.get("evidence", []) if _DIA.match(e.strip())}
        if evidence:
            out.append((qa["question"], evidence, int(qa["category"])))
    return out


FUSIONS: tuple[str, ...] = get_args(MemorySettings.model_fields["fusion"].annotation)
RANKERS: tuple[str, ...] = get_args(MemorySettings.model_fields["ranker"].annotation)


def variant_names(settings: Settings) -> list[str]:
    """The fusions other than ``settings``', then ``ranker=R`` for the other rankers."""
    return [f for f in FUSIONS if f != settings.memory.fusion] + [
        f"ranker={r}" for r in RANKERS if r != settings.memory.ranker
    ]


def with_fusion(settings: Settings, fusion: str) -> Settings:
    """The same settings with another fusion (rrf with its alpha of 0.5), or another
    ranker (``ranker=learned``)."""
    update: dict[str, Any] = {"fusion": fusion}
    if fusion.startswith("ranker="):
        update = {"ranker": fusion.removeprefix("ranker=")}
    elif fusion == "rrf":
        update["vector_alpha"] = 0.5
    return settings.model_copy(update={"memory": settings.memory.model_copy(update=update)})


def fusion_variants(settings: Settings, layer: MemoryLayer) -> dict[str, MemorySearch]:
    """A search per :func:`variant_names` entry, over ``layer``'s memories and embedder."""
    variants = {}
    for name in variant_names(settings):
        variant = MemoryLayer.open(with_fusion(settings, name), layer.client)
        variant.embedder = layer.embedder
        variants[name] = MemorySearch(variant)
    return variants


def _count(
    tally: dict[str, list[float]],
    hits: list[SearchHit],
    k: int,
    evidence: set[str],
    category: int,
    key_to_dia: dict[str, str],
) -> None:
    """Add one search's recall@k (and at 10, its category's) to a variant's tally."""
    share = len(evidence & {key_to_dia.get(h.key) for h in hits}) / len(evidence)
    tally.setdefault(f"recall@{k}", []).append(share)
    if k == 10:
        tally.setdefault(f"{category} {CATEGORIES[category]}", []).append(share)


def ceiling(found: list[Any], evidence: set[Any], k: int = 10) -> float:
    """recall@k if ``found`` were perfectly ordered: its evidence first.

    What any reranking of these results could reach at most; below it, the evidence was
    never among them (the candidates, not their order, are what falls short).
    """
    return min(k, len(evidence & set(found))) / len(evidence)


async def by_limit(
    search: MemorySearch, query: str, now: float, times_ms: list[float]
) -> dict[int, list[SearchHit]]:
    """The results of ``query`` asked with each limit in KS, as a caller would.

    The first limit's search is timed into ``times_ms``: a reranked search's judgements
    are cached for the other limits, so only the first one pays for them.
    """
    out = {}
    for k in KS:
        t = time.perf_counter()
        out[k] = await search.search(query, limit=k, now=now)
        if k == KS[0]:
            times_ms.append((time.perf_counter() - t) * 1000)
    return out


def reranked(settings: Settings, layer: MemoryLayer) -> MemorySearch | None:
    """The same search with the cross-encoder reranking it (``None``: not installed)."""
    if model_dir() is None:
        return None
    memory = settings.memory.model_copy(update={"rerank": "cross-encoder"})
    variant = MemoryLayer.open(settings.model_copy(update={"memory": memory}), layer.client)
    variant.embedder = layer.embedder
    return MemorySearch(variant)


LLM_FLOOR = 0.34
"""The LLM judge's floor in the benches: a grade of 1 ("on the topic, no help") or 0 is
left out, so a question none of the best results helps answer finds nothing."""

NO_LLM = "not measured: no LLM endpoint (set AETHER_LLM__BASE_URL and AETHER_LLM__MODEL)"


def llm_judge(settings: Settings) -> tuple[LLMJudge, LLMClient] | None:
    """The configured LLM as a relevance judge, and its client to close (``None``: no LLM)."""
    llm = LLMClient.from_settings(settings)
    return (LLMJudge(llm), llm) if llm is not None else None


def llm_judged(settings: Settings, layer: MemoryLayer, judge: LLMJudge) -> MemorySearch:
    """The same search judged by ``judge``, its floor at :data:`LLM_FLOOR`."""
    memory = settings.memory.model_copy(update={"rerank": "llm", "rerank_floor": LLM_FLOOR})
    variant = MemoryLayer.open(settings.model_copy(update={"memory": memory}), layer.client)
    variant.embedder = layer.embedder
    return MemorySearch(variant, judge=judge)


RERANK_FLOORS = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5)
"""The cross-encoder's relevance probabilities a result must reach, in the trade-off table."""


def judged(question: str, hits: list[SearchHit]) -> list[float]:
    """The cross-encoder's relevance probability of each hit (cached from the search)."""
    tokens = query_tokens(question)
    return cross_encoder().score(question, [judged_text(tokens, h.content) for h in hits])


def rerank_floor_table(
    answerable: list[tuple[list[Any], list[float], set[Any]]],
    unanswerable: list[list[float]],
    name: str,
) -> list[dict[str, float]]:
    """recall@10 and the share of ``unanswerable`` queries left with nothing, per floor.

    Args:
        answerable: per question, its reranked results' ids, their probabilities and
            its evidence ids.
        unanswerable: per query that should find nothing, its results' probabilities.
        name: what the second figure is called in the output.
    """
    table = []
    for floor in RERANK_FLOORS:
        recall = []
        for ids, probs, evidence in answerable:
            kept = [i for i, p in zip(ids, probs, strict=True) if p >= floor][:10]
            recall.append(len(evidence & set(kept)) / len(evidence))
        nothing = [all(p < floor for p in probs) for probs in unanswerable]
        table.append(
            {
                "min_probability": floor,
                "recall@10": round(statistics.fmean(recall), 3),
                name: round(statistics.fmean(nothing), 3) if nothing else 0.0,
            }
        )
    return table


def floor_table(
    unfloored: list[tuple[list[SearchHit], set[str]]],
    nonsense: list[list[SearchHit]],
    key_to_dia: dict[str, str],
) -> list[dict[str, float]]:
    """recall@10 and the nonsense false-positive rate per floor (similarity, coverage)."""
    table = []
    for floor in FLOORS:
        for cover in COVERAGES:
            recall = [
                len(
                    evidence
                    & {
                        key_to_dia.get(h.key)
                        for h in [h for h in hits if passes_floor(h, floor, cover)][:10]
                    }
                )
                / len(evidence)
                for hits, evidence in unfloored
            ]
            false_positive = [any(passes_floor(h, floor, cover) for h in hits) for hits in nonsense]
            table.append(
                {
                    "min_similarity": floor,
                    "min_coverage": cover,
                    "recall@10": round(statistics.fmean(recall), 4),
                    "nonsense_false_positive_rate": round(statistics.fmean(false_positive), 3),
                }
            )
    return table


async def load(layer: MemoryLayer, sample: dict[str, Any]) -> dict[str, str]:
    """Log every turn; returns entry key -> dia_id."""
    daily = DailyLog(layer)
    key_to_dia: dict[str, str] = {}
    rows = turns(sample)
    sessions: dict[str, list[tuple[str, str, float]]] = {}
    for row in rows:
        sessions.setdefault(row[0].split(":", 1)[0], []).append(row)
    for session, batch in sessions.items():
        docs = []
        for _dia, content, ts in batch:
            speaker = content.split(":", 1)[0]
            docs.append(
                build_entry(
                    layer, content, source="user", tags=[speaker], session=session, timestamp=ts
                )
            )
        await layer.attach_embeddings(docs)
        await layer.store.apply(daily.mutation(docs), "bench.load")
        for doc, (dia, _, _) in zip(docs, batch, strict=True):
            key_to_dia[layer.keys.daily_entry(doc["id"])] = dia
    return key_to_dia


async def run(path: Path, embeddings: str) -> dict[str, Any]:
    data = json.loads(path.read_text())
    home = Path(tempfile.mkdtemp(prefix="aether-locomo-"))
    base = Settings(home=home, embedding={"provider": embeddings})  # type: ignore[arg-type]
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    by_category: dict[int, list[float]] = {c: [] for c in CATEGORIES}
    top10_tokens: list[int] = []
    latencies: list[float] = []
    tables = []
    nonsense_answered = 0
    by_fusion: dict[str, dict[str, list[float]]] = {f: {} for f in variant_names(base)}
    rerank_recall: dict[str, list[float]] = {}
    ceilings: dict[int, list[float]] = {depth: [] for depth in CEILING_DEPTHS}
    rerank_ms: list[float] = []
    rerank_judged: list[tuple[list[Any], list[float], set[Any]]] = []
    nonsense_judged: list[list[float]] = []
    by_llm: dict[str, list[float]] = {}
    llm_ms: list[float] = []
    llm_nonsense_nothing: list[bool] = []
    llm = llm_judge(base)
    client = await connect(base)
    try:
        for sample in data:
            settings = base.model_copy(update={"namespace": f"locomo{uuid.uuid4().hex[:8]}"})
            layer = MemoryLayer.open(settings, client)
            search = MemorySearch(layer)
            await search.ensure_index()
            key_to_dia = await load(layer, sample)
            asked_at = max(ts for _, _, ts in turns(sample)) + 60  # asked at the chat's end
            settle_heap()  # as the daemon does once it is up
            unfloored_layer = MemoryLayer.open(
                settings.model_copy(
                    update={
                        "memory": settings.memory.model_copy(
                            update={"min_similarity": -1.0, "min_coverage": 0.0}
                        )
                    }
                ),
                client,
            )
            unfloored_layer.embedder = layer.embedder
            unfloored = MemorySearch(unfloored_layer)
            variants = fusion_variants(settings, layer)
            rerank = reranked(settings, layer)
            judged_search = llm_judged(settings, layer, llm[0]) if llm is not None else None
            asked = []
            for question, evidence, category in questions(sample):
                for k in KS:  # each k asked for as a caller would: limit=k
                    t = time.perf_counter()
                    hits = await search.search(question, limit=k, now=asked_at)
                    latencies.append((time.perf_counter() - t) * 1000)
                    returned = {key_to_dia.get(h.key) for h in hits}
                    recalls[k].append(len(evidence & returned) / len(evidence))
                    if k == 10:
                        by_category[category].append(recalls[k][-1])
                        top10_tokens.append(sum(count_tokens(h.content) for h in hits))
                for depth in CEILING_DEPTHS:
                    hits = await search.search(question, limit=depth, now=asked_at)
                    found_dia = [key_to_dia.get(h.key) for h in hits]
                    ceilings[depth].append(ceiling(found_dia, evidence))
                for fusion, variant_search in variants.items():
                    for k in KS:
                        hits = await variant_search.search(question, limit=k, now=asked_at)
                        _count(by_fusion[fusion], hits, k, evidence, category, key_to_dia)
                if rerank is not None:
                    found_by_k = await by_limit(rerank, question, asked_at, rerank_ms)
                    for k, hits in found_by_k.items():
                        _count(rerank_recall, hits, k, evidence, category, key_to_dia)
                    hits = found_by_k[KS[-1]]
                    found_ids = [key_to_dia.get(h.key) for h in hits]
                    rerank_judged.append((found_ids, judged(question, hits), evidence))
                if judged_search is not None:
                    found_by_k = await by_limit(judged_search, question, asked_at, llm_ms)
                    for k, hits in found_by_k.items():
                        _count(by_llm, hits, k, evidence, category, key_to_dia)
                found = await unfloored.search(question, limit=25, now=asked_at)
                asked.append((found, evidence))
            nonsense = [await unfloored.search(q, limit=10, now=asked_at) for q in NONSENSE]
            for query in NONSENSE:
                nonsense_answered += bool(await search.search(query, limit=10, now=asked_at))
                if rerank is not None:
                    hits = await rerank.search(query, limit=10, now=asked_at)
                    nonsense_judged.append(judged(query, hits))
                if judged_search is not None:
                    found = await judged_search.search(query, limit=10, now=asked_at)
                    llm_nonsense_nothing.append(not found)
            tables.append((len(asked), floor_table(asked, nonsense, key_to_dia)))
    finally:
        if llm is not None:
            await llm[1].aclose()
        await client.aclose()
        EmbeddedRedis(base).stop()
    total = sum(n for n, _ in tables)
    calibration = [
        {
            "min_similarity": row["min_similarity"],
            "min_coverage": row["min_coverage"],
            "recall@10": round(sum(n * t[i]["recall@10"] for n, t in tables) / total, 3),
            "nonsense_false_positive_rate": round(
                statistics.fmean(t[i]["nonsense_false_positive_rate"] for _, t in tables), 3
            ),
        }
        for i, row in enumerate(tables[0][1])
    ]
    return {
        "file": str(path),
        "embeddings": embeddings,
        "questions": len(recalls[5]),
        **{f"recall@{k}": round(statistics.fmean(v), 3) for k, v in recalls.items()},
        "recall@10_by_category": {
            f"{c} {name}": round(statistics.fmean(by_category[c]), 3)
            for c, name in CATEGORIES.items()
            if by_category[c]
        },
        "recall@10_ceiling": {
            f"top{depth}": round(statistics.fmean(v), 3) for depth, v in ceilings.items()
        },
        "fusion": base.memory.fusion,
        "recall_by_fusion": {
            f: {name: round(statistics.fmean(v), 3) for name, v in sorted(tally.items())}
            for f, tally in by_fusion.items()
        },
        "reranked": {
            **{name: round(statistics.fmean(v), 3) for name, v in sorted(rerank_recall.items())},
            "search_p50_ms_incl_embedding": percentile(rerank_ms, 0.5),
            "search_p99_ms_incl_embedding": percentile(rerank_ms, 0.99),
            "floor_tradeoff": rerank_floor_table(
                rerank_judged, nonsense_judged, "nonsense_find_nothing"
            ),
        }
        if rerank_ms
        else None,
        "llm_judged": {
            **{name: round(statistics.fmean(v), 3) for name, v in sorted(by_llm.items())},
            "rerank_floor": LLM_FLOOR,
            "nonsense_find_nothing": round(statistics.fmean(llm_nonsense_nothing), 3),
            "search_p50_ms_incl_embedding": percentile(llm_ms, 0.5),
            "search_p99_ms_incl_embedding": percentile(llm_ms, 0.99),
        }
        if llm_ms
        else NO_LLM,
        "min_similarity": base.memory.min_similarity,
        "min_coverage": base.memory.min_coverage,
        "nonsense_false_positive_rate": round(nonsense_answered / (len(NONSENSE) * len(data)), 3),
        "floor_calibration": calibration,
        "top10_tokens": round(statistics.fmean(top10_tokens), 1),
        "search_p50_ms_incl_embedding": round(statistics.median(latencies), 2),
    }


def main() -> None:
    import logging

    import structlog

    structlog.configure(  # warnings to stderr: stdout is the JSON
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    embeddings = "local"
    if "--embeddings" in sys.argv:
        embeddings = sys.argv[sys.argv.index("--embeddings") + 1]
        args = [a for a in args if a != embeddings]
    path = Path(args[0]) if args else DEFAULT
    print(json.dumps(asyncio.run(run(path, embeddings)), indent=2))


if __name__ == "__main__":
    main()

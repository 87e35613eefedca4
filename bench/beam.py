"""Retrieval quality on BEAM (long technical chats); prints one JSON object.

BEAM ("Beyond a Million Tokens", ICLR 2026), 100K split, chats 1-10 (the dev split in
``shared/data/beam-dev``): a user working with an assistant on software over several
sessions. Each message is logged as a daily entry (``role: text``, the generation marker
stripped), timestamped from its session's date (one second per message), one session per
BEAM batch, the way a chat's evicted turns are. Each probing question with evidence is
one search; recall@k is the share of its evidence messages in the top k.

Besides recall (overall and per ability) it prints:

- ``updated_above_original@10``: knowledge-update questions whose updated statement is in
  the top 10 and ranks above every original one (or no original is in the top 10);
- ``both_contradicting@10``: contradiction questions with both statements in the top 10;
- ``abstention``: the share of unanswerable questions that find nothing;
- the same figures for BM25 alone (k1 1.5, b 0.75, lowercase word tokens) and MiniLM
  cosine alone (each message embedded whole) over the same messages, in the same run;
- the floor trade-off: the share of answerable questions that still find something and
  of unanswerable ones that find nothing, for a range of relative floors (see
  ``aether.memory.retrieval.search``), and recall@10 at each;
- ``recall@10_ceiling``: recall@10 if the first 30 (50) results were perfectly ordered,
  for each retriever: what any reranker of them could reach at most;
- search p50/p99 with and without the query's embedding; the load time.

- ``aether_by_fusion``: recall, update and contradiction figures for the other fusions
  (``memory.fusion``) and the other ranker (``ranker=learned``: ``memory.ranker``) over the
  same loaded messages, in the same run.
- ``aether_llm_judged``: the same figures, abstention included, with the configured LLM
  judging each search's best results (``memory.rerank = "llm"``, its floor at
  ``LLM_FLOOR``); measured only when ``AETHER_LLM__BASE_URL`` and ``AETHER_LLM__MODEL``
  name an endpoint.

Usage: python bench/beam.py [DIR] [--embeddings local|none] [--chats 1,2,...]
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from locomo import (
    CEILING_DEPTHS,
    LLM_FLOOR,
    NO_LLM,
    by_limit,
    ceiling,
    fusion_variants,
    judged,
    llm_judge,
    llm_judged,
    rerank_floor_table,
    reranked,
    variant_names,
)
from percentiles import percentile

from aether.config import Settings
from aether.memory.retrieval.fusion import passes_floor
from aether.memory.retrieval.search import MemorySearch, SearchHit
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.runtime.heap import settle_heap
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "beam-dev"
KS = (5, 10, 25)
FLOORS = (-1.0, 0.2, 0.3, 0.4, 0.5)
COVERAGES = (0.0, 0.34, 0.5, 0.67, 1.0)
_MARKER = re.compile(r"\s*->->[^\n]{0,16}$")
_WORD = re.compile(r"\w+")


@dataclass
class Message:
    """One chat message as the bench logs it."""

    id: int
    content: str
    timestamp: float
    session: str


@dataclass
class Question:
    """One probing question: its ability, evidence ids and, for some, their roles."""

    ability: str
    text: str
    evidence: set[int]
    roles: dict[str, set[int]] = field(default_factory=dict)


def _ids(value: Any) -> Iterable[int]:
    """Every integer message id in a list, a dict of lists or nested lists."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _ids(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _ids(item)


def messages(chat_dir: Path) -> list[Message]:
    """The chat's messages (the truncated chat when BEAM ships one)."""
    path = chat_dir / "chat_trunecated.json"
    if not path.exists():
        path = chat_dir / "chat.json"
    out: list[Message] = []
    for batch in json.loads(path.read_text()):
        groups = batch["turns"]
        anchor = groups[0][0].get("time_anchor") or batch.get("time_anchor")
        start = datetime.strptime(anchor, "%B-%d-%Y").timestamp()
        session = f"b{batch['batch_number']}"
        i = 0
        for group in groups:
            for msg in group:
                text = _MARKER.sub("", str(msg["content"])).strip()
                out.append(Message(int(msg["id"]), f"{msg['role']}: {text}", start + i, session))
                i += 1
    return out


def questions(chat_dir: Path) -> list[Question]:
    """Every probing question with evidence, and the unanswerable ones (no evidence)."""
    data = json.loads((chat_dir / "probing_questions" / "probing_questions.json").read_text())
    out = []
    for ability, items in data.items():
        for item in items:
            source = item.get("source_chat_ids")
            evidence = set(_ids(source))
            if ability != "abstention" and not evidence:
                continue
            roles = {k: set(_ids(v)) for k, v in source.items()} if isinstance(source, dict) else {}
            out.append(Question(ability, item["question"], evidence, roles))
    return out


class BM25:
    """Okapi BM25 over lowercase word tokens (the reference baseline)."""

    def __init__(self, docs: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.tokens = [_WORD.findall(d.lower()) for d in docs]
        self.k1, self.b = k1, b
        self.avg = statistics.fmean(len(t) for t in self.tokens)
        df: Counter[str] = Counter()
        for t in self.tokens:
            df.update(set(t))
        n = len(docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}
        self.tf = [Counter(t) for t in self.tokens]

    def rank(self, query: str) -> list[int]:
        words = _WORD.findall(query.lower())
        scores = []
        for i, tf in enumerate(self.tf):
            norm = self.k1 * (1 - self.b + self.b * len(self.tokens[i]) / self.avg)
            s = sum(self.idf[w] * tf[w] * (self.k1 + 1) / (tf[w] + norm) for w in words if w in tf)
            scores.append(s)
        return sorted(range(len(scores)), key=lambda i: -scores[i])


def _cosine_rank(query: list[float], docs: list[list[float]]) -> list[int]:
    def cos(a: list[float], b: list[float]) -> float:
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)) or 1)

    scores = [cos(query, d) for d in docs]
    return sorted(range(len(scores)), key=lambda i: -scores[i])


class Tally:
    """The figures of one retriever over every question."""

    def __init__(self) -> None:
        self.recall: dict[int, list[float]] = {k: [] for k in KS}
        self.by_ability: dict[str, list[float]] = {}
        self.updated: list[bool] = []
        self.contradiction: list[bool] = []
        self.abstained: list[bool] = []
        self.ceiling: dict[int, list[float]] = {depth: [] for depth in CEILING_DEPTHS}

    def add_ceiling(self, q: Question, depth: int, found: list[int]) -> None:
        """Count what a perfect ordering of ``found`` (the first ``depth`` results) reaches."""
        if q.ability != "abstention":
            self.ceiling[depth].append(ceiling(found[:depth], q.evidence))

    def add(
        self, q: Question, ranked: list[int], per_k: dict[int, list[int]] | None = None
    ) -> None:
        """Count one question; ``per_k``: what a search with ``limit=k`` returned."""
        per_k = per_k or {k: ranked[:k] for k in KS}
        if q.ability == "abstention":
            self.abstained.append(not ranked)
            return
        for k in KS:
            self.recall[k].append(len(q.evidence & set(per_k[k][:k])) / len(q.evidence))
        self.by_ability.setdefault(q.ability, []).append(self.recall[10][-1])
        top = per_k[10][:10]
        if q.ability == "knowledge_update" and q.roles.get("updated_info"):
            new, old = (
                q.roles["updated_info"],
                q.roles.get("original_info", set()) - q.roles["updated_info"],
            )
            new_ranks = [top.index(i) for i in new if i in top]
            old_ranks = [top.index(i) for i in old if i in top]
            self.updated.append(
                bool(new_ranks) and (not old_ranks or min(new_ranks) < min(old_ranks))
            )
        if q.ability == "contradiction_resolution" and len(q.roles) >= 2:
            self.contradiction.append(all(ids & set(top) for ids in q.roles.values()))

    def figures(self) -> dict[str, Any]:
        def mean(values: list[Any]) -> float | None:
            return round(statistics.fmean(values), 3) if values else None

        return {
            **{f"recall@{k}": mean(v) for k, v in self.recall.items()},
            "recall@10_by_ability": {a: mean(v) for a, v in sorted(self.by_ability.items())},
            "updated_above_original@10": mean(self.updated),
            "both_contradicting@10": mean(self.contradiction),
            "abstention": mean(self.abstained),
            "recall@10_ceiling": {f"top{d}": mean(v) for d, v in self.ceiling.items() if v},
        }


def floor_off(settings: Settings) -> Settings:
    """The same settings with the relevance floor off (what the trade-off table sweeps)."""
    memory = settings.memory.model_copy(update={"min_similarity": -1.0, "min_coverage": 0.0})
    return settings.model_copy(update={"memory": memory})


def floor_table(
    unfloored: list[tuple[Question, list[SearchHit], dict[str, int]]],
) -> list[dict[str, float]]:
    """Per floor (min_similarity, min_coverage): recall@10 and abstention."""
    table = []
    for floor in FLOORS:
        for cover in COVERAGES:
            tally = Tally()
            for q, hits, key_to_id in unfloored:
                kept = [h for h in hits if passes_floor(h, floor, cover)]
                tally.add(q, _ranked(kept, key_to_id))
            figures = tally.figures()
            table.append(
                {
                    "min_similarity": floor,
                    "min_coverage": cover,
                    "recall@10": figures["recall@10"],
                    "abstention": figures["abstention"],
                }
            )
    return table


async def load(layer: MemoryLayer, msgs: list[Message]) -> dict[str, int]:
    """Log every message, one batch per session; returns entry key -> message id."""
    daily = DailyLog(layer)
    key_to_id: dict[str, int] = {}
    sessions: dict[str, list[Message]] = {}
    for m in msgs:
        sessions.setdefault(m.session, []).append(m)
    for session, batch in sessions.items():
        docs = [  # who said it, as an agent's chat log records it
            build_entry(
                layer,
                m.content,
                source="user" if m.content.startswith("user:") else "agent",
                session=session,
                timestamp=m.timestamp,
            )
            for m in batch
        ]
        await layer.attach_embeddings(docs)
        await layer.store.apply(daily.mutation(docs), "bench.load")
        for doc, m in zip(docs, batch, strict=True):
            key_to_id[layer.keys.daily_entry(doc["id"])] = m.id
    return key_to_id


def _ranked(hits: list[SearchHit], key_to_id: dict[str, int]) -> list[int]:
    seen: list[int] = []
    for h in hits:
        mid = key_to_id.get(h.key)
        if mid is not None and mid not in seen:
            seen.append(mid)
    return seen


async def run(root: Path, embeddings: str, chats: list[str]) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="aether-beam-"))
    base = Settings(home=home, embedding={"provider": embeddings})  # type: ignore[arg-type]
    aether, bm25, cosine = Tally(), Tally(), Tally()
    by_fusion = {f: Tally() for f in variant_names(base)}
    rerank_tally = Tally()
    rerank_ms: list[float] = []
    rerank_judged: list[tuple[list[Any], list[float], set[Any]]] = []
    unanswerable_judged: list[list[float]] = []
    with_embedding: list[float] = []
    without_embedding: list[float] = []
    load_s = 0.0
    n_messages = 0
    unfloored: list[tuple[Question, list[SearchHit], dict[str, int]]] = []
    llm_tally = Tally()
    llm_ms: list[float] = []
    llm = llm_judge(base)
    client = await connect(base)
    try:
        for chat in chats:
            msgs = messages(root / chat)
            n_messages += len(msgs)
            settings = base.model_copy(update={"namespace": f"beam{uuid.uuid4().hex[:8]}"})
            layer = MemoryLayer.open(settings, client)
            search = MemorySearch(layer)
            await search.ensure_index()
            open_layer = MemoryLayer.open(floor_off(settings), client)
            open_layer.embedder = layer.embedder
            open_search = MemorySearch(open_layer)
            variants = fusion_variants(settings, layer)
            rerank = reranked(settings, layer)
            judged_search = llm_judged(settings, layer, llm[0]) if llm is not None else None
            t = time.perf_counter()
            key_to_id = await load(layer, msgs)
            load_s += time.perf_counter() - t
            lexical = BM25([m.content for m in msgs])
            vectors = (
                await layer.embedder.embed_many([m.content for m in msgs])
                if layer.embedder is not None
                else None
            )
            ids = [m.id for m in msgs]
            asked_at = max(m.timestamp for m in msgs) + 60  # asked at the chat's end
            settle_heap()  # as the daemon does once it is up
            for q in questions(root / chat):
                embed_ms = 0.0
                if layer.embedder is not None:  # the searches below find it in the cache
                    t = time.perf_counter()
                    query_vector = await layer.embedder.embed(q.text)
                    embed_ms = (time.perf_counter() - t) * 1000
                    by_cosine = [ids[i] for i in _cosine_rank(query_vector, vectors or [])]
                    cosine.add(q, by_cosine)
                    for depth in CEILING_DEPTHS:
                        cosine.add_ceiling(q, depth, by_cosine)
                per_k = {}
                for k in KS:  # each k asked for as a caller would: limit=k
                    t = time.perf_counter()
                    hits = await search.search(q.text, limit=k, now=asked_at)
                    searched = (time.perf_counter() - t) * 1000
                    with_embedding.append(searched + embed_ms)
                    without_embedding.append(searched)
                    per_k[k] = _ranked(hits, key_to_id)
                aether.add(q, per_k[25], per_k)
                for depth in CEILING_DEPTHS:
                    hits = await search.search(q.text, limit=depth, now=asked_at)
                    aether.add_ceiling(q, depth, _ranked(hits, key_to_id))
                for fusion, variant_search in variants.items():
                    variant_k = {
                        k: _ranked(
                            await variant_search.search(q.text, limit=k, now=asked_at), key_to_id
                        )
                        for k in KS
                    }
                    by_fusion[fusion].add(q, variant_k[25], variant_k)
                if rerank is not None:
                    found_by_k = await by_limit(rerank, q.text, asked_at, rerank_ms)
                    rerank_k = {k: _ranked(h, key_to_id) for k, h in found_by_k.items()}
                    rerank_tally.add(q, rerank_k[25], rerank_k)
                    hits = found_by_k[KS[-1]]
                    probs = judged(q.text, hits)  # the last limit's results
                    if q.ability == "abstention":
                        unanswerable_judged.append(probs)
                    else:
                        found_ids = [key_to_id.get(h.key) for h in hits]
                        rerank_judged.append((found_ids, probs, q.evidence))
                if judged_search is not None:
                    found_by_k = await by_limit(judged_search, q.text, asked_at, llm_ms)
                    llm_k = {k: _ranked(h, key_to_id) for k, h in found_by_k.items()}
                    llm_tally.add(q, llm_k[25], llm_k)
                found = await open_search.search(q.text, limit=25, now=asked_at)
                unfloored.append((q, found, key_to_id))
                by_words = [ids[i] for i in lexical.rank(q.text)]
                bm25.add(q, by_words)
                for depth in CEILING_DEPTHS:
                    bm25.add_ceiling(q, depth, by_words)
    finally:
        if llm is not None:
            await llm[1].aclose()
        await client.aclose()
        EmbeddedRedis(base).stop()
    return {
        "data": str(root),
        "chats": chats,
        "embeddings": embeddings,
        "messages": n_messages,
        "questions_with_evidence": len(aether.recall[5]),
        "unanswerable": len(aether.abstained),
        "fusion": base.memory.fusion,
        "aether": aether.figures(),
        "aether_by_fusion": {f: t.figures() for f, t in by_fusion.items()},
        "aether_reranked": {
            **rerank_tally.figures(),
            "search_p50_ms_incl_embedding": percentile(rerank_ms, 0.5),
            "search_p99_ms_incl_embedding": percentile(rerank_ms, 0.99),
            "floor_tradeoff": rerank_floor_table(rerank_judged, unanswerable_judged, "abstention"),
        }
        if rerank_ms
        else None,
        "aether_llm_judged": {
            **llm_tally.figures(),
            "rerank_floor": LLM_FLOOR,
            "search_p50_ms_incl_embedding": percentile(llm_ms, 0.5),
            "search_p99_ms_incl_embedding": percentile(llm_ms, 0.99),
        }
        if llm_ms
        else NO_LLM,
        "bm25": bm25.figures(),
        "minilm_cosine": cosine.figures() if cosine.recall[5] else None,
        "min_similarity": base.memory.min_similarity,
        "min_coverage": base.memory.min_coverage,
        "floor_tradeoff": floor_table(unfloored),
        "search_p50_ms_incl_embedding": percentile(with_embedding, 0.5),
        "search_p99_ms_incl_embedding": percentile(with_embedding, 0.99),
        "search_p50_ms_excl_embedding": percentile(without_embedding, 0.5),
        "search_p99_ms_excl_embedding": percentile(without_embedding, 0.99),
        "load_s": round(load_s, 2),
    }


def main() -> None:
    import logging

    import structlog

    structlog.configure(  # warnings to stderr: stdout is the JSON
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    args = sys.argv[1:]
    embeddings = "local"
    if "--embeddings" in args:
        embeddings = args.pop(args.index("--embeddings") + 1)
        args.remove("--embeddings")
    chats = [str(n) for n in range(1, 11)]
    if "--chats" in args:
        chats = args.pop(args.index("--chats") + 1).split(",")
        args.remove("--chats")
    root = Path(args[0]) if args else DEFAULT
    print(json.dumps(asyncio.run(run(root, embeddings, chats)), indent=2))


if __name__ == "__main__":
    main()

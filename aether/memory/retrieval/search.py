r"""Hybrid search over ``ns:memory:idx``: BM25 full text + vector KNN, fused, with recency.

User text never reaches query syntax: it is reduced to word tokens (``\\w+``) before it
becomes a redisvl ``TextQuery``; filter values go through redisvl's escaping ``Tag`` and
``Num`` filters. Every candidate either list found is scored on both signals
(:meth:`MemorySearch._completion`), a long memory's vector score loses what its best
passage wins by chance (``chance_lift``), then the two lists are fused
(``memory.fusion``) and recency decay is mixed in:

- ``adaptive`` (the default): each list min-max scaled and weighted by how clearly its
  best candidates stand out from the rest of its own pool (:func:`_clarity`, in the
  pool's standard deviations). The weights are measured on every query instead of fixed:
  on short chat turns the words of a question often pick out its answer and the text list
  leads; on long technical messages, where many share the query's vocabulary, the vector
  list is the sharper one. A fixed blend suits one of those collections and costs the
  other; a per-query weight needs no constant tuned to either (README, Benchmarks);
- ``minmax``: the same scaling blended ``alpha * vector + (1 - alpha) * text`` (alpha
  0.35, ``memory.vector_alpha``); it keeps each list's score gaps;
- ``rrf``: reciprocal-rank fusion (:func:`_rank_scores`): ranks mean the same on any
  data, where raw BM25 and cosine scores do not; set alpha to 0.5 with it.

Either way a word match's scaled score is weighted by the square root of its coverage,
the share of the query's meaningful words it holds (a long memory: its best passage's,
:func:`~aether.memory.retrieval.wording.best_passage`; :func:`_fused`). After the context's
shares (neighbours, names), each candidate gains (or loses) a share of how far its own
reading's raw cosine similarity lies above (or below) the candidates' mean
(:data:`OWN_READING_WEIGHT`): the absolute measure that scaling leaves out.

Relevance is first gated on absolute signals that mean the same on any data: a candidate
must be at least ``min_similarity`` cosine-similar to the query, or match it in full text
and contain at least ``min_coverage`` of the query's meaningful words (stopwords never
count). One shared word of a long query is no match, so a query about nothing stored
finds nothing. Inactive beliefs and superseded notes (any ``status`` of :data:`INACTIVE`)
are left out unless asked for. When results state different values of the same thing,
the newest leads (``aether.memory.retrieval.newest``).
When the index cannot answer, a substring match over the last days of daily logs does,
and the fallback is logged once.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import numpy as np
import structlog
from redis.exceptions import ResponseError
from redisvl.exceptions import RedisSearchError
from redisvl.index import AsyncSearchIndex
from redisvl.query import TextQuery
from redisvl.query.filter import FilterExpression, Num, Tag

from aether.logging import log_once
from aether.memory.retrieval.newest import newest_first
from aether.memory.retrieval.rerank import PackagedCrossEncoder, RelevanceJudge, rerank
from aether.memory.retrieval.stopwords import STOPWORDS
from aether.memory.retrieval.wording import best_passage
from aether.memory.storage.conversation import chance_lift, in_context
from aether.memory.storage.fulltext import ensure_index, search_command, search_results
from aether.memory.storage.layer import MemoryLayer, mget_command, read_mget
from aether.memory.storage.records import (
    HIT_FIELDS,
    MemoryDoc,
    check_kind,
    check_source,
    check_tags,
    check_timestamp,
)
from aether.memory.storage.scopes import check_scope
from aether.memory.storage.status import INACTIVE
from aether.memory.storage.vectors import (
    ensure_vector_index,
    knn_query,
    nearest_rows,
    similarity_command,
)
from aether.memory.tiers.daily import DailyLog
from aether.store.cluster import SlotRedis

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SearchHit:
    """One result."""

    key: str
    doc: MemoryDoc
    relevance: float
    text_rank: int | None
    vector_rank: int | None
    match: float | None = None
    """How well it matches the query alone (``relevance`` without recency): what a caller
    that applies its own recency rule ranks by, so recency never counts twice."""
    similarity: float | None = None
    """The raw cosine similarity to the query (``None``: not a vector candidate)."""
    earlier: bool = False
    """A newer result states a different value of the same thing (see ``.newest``)."""
    coverage: float | None = None
    """The share of the query's meaningful words the memory contains (``None``: a
    neighbour that rode in with a hit)."""

    @property
    def content(self) -> str:
        """The memory's text."""
        return str(self.doc.get("content", ""))


def query_tokens(text: str) -> list[str]:
    """Lower-case word tokens of user text, stopwords removed, order kept, no duplicates."""
    words = re.findall(r"\w+", text.lower())
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))


def build_filter(
    kind: str | None = None,
    source: str | None = None,
    tags: list[str] | None = None,
    since: datetime | float | None = None,
    session: str | None = None,
    scopes: list[str] | None = None,
) -> FilterExpression | None:
    """A redisvl filter from validated values (``None`` when unfiltered)."""
    parts: list[FilterExpression] = []
    if scopes:
        parts.append(Tag("scope") == [check_scope(s) for s in scopes])
    if kind:
        parts.append(Tag("kind") == check_kind(kind))
    if source:
        parts.append(Tag("source") == check_source(source))
    if tags:
        parts.append(Tag("tags") == check_tags(tags))
    if since is not None:
        parts.append(Num("timestamp") >= check_timestamp(since))
    if session:
        parts.append(Tag("session") == session)
    if not parts:
        return None
    combined = parts[0]
    for part in parts[1:]:
        combined = combined & part
    return combined


def passes_floor(hit: SearchHit, min_similarity: float, min_coverage: float) -> bool:
    """Whether a hit found with the floor off would pass this floor (what benches sweep).

    A hit passes when it is similar enough to the query, or when it matches the query's
    words in full text and contains at least ``min_coverage`` of them.
    """
    if (hit.similarity if hit.similarity is not None else -1.0) >= min_similarity:
        return True
    return hit.text_rank is not None and (hit.coverage or 0.0) >= min_coverage


def _text_query(tokens: list[str], flt: FilterExpression | None, num: int) -> TextQuery:
    """The BM25 query of the query's words, for ids and scores only.

    The documents are read once, after fusion.
    """
    query = TextQuery(
        " ".join(tokens),
        "content",
        text_scorer="BM25STD",
        filter_expression=flt,
        num_results=num,
        stopwords=None,
    )
    query.no_content()
    return query


def _coverage(tokens: list[str], doc: MemoryDoc | None) -> float:
    """How much of the query a memory covers: its best passage's share (:func:`best_passage`)."""
    return best_passage(tokens, str(doc.get("content", "")))[1] if doc is not None else 0.0


def _hit_fields(doc: MemoryDoc | None) -> MemoryDoc | None:
    """What a hit carries of its document (:data:`HIT_FIELDS`)."""
    if doc is None:
        return None
    fields: dict[str, object] = dict(doc)
    return cast(MemoryDoc, {name: fields[name] for name in HIT_FIELDS if name in fields})


def _min_max(rows: list[tuple[str, float]]) -> dict[str, float]:
    """Scores scaled to [0, 1] within one candidate list (the ``minmax`` fusion).

    It keeps each list's score gaps (a dominant BM25 match stays far ahead), which the
    rank fusion discards; it also gives the best candidate full marks however poor, which
    the floor (:func:`passes_floor`) makes up for.
    """
    if not rows:
        return {}
    values = [score for _, score in rows]
    low, high = min(values), max(values)
    if high <= low:
        return dict.fromkeys((key for key, _ in rows), 1.0)
    return {key: (score - low) / (high - low) for key, score in rows}


RRF_K = 5
"""Reciprocal-rank fusion's damping constant: how fast credit falls with rank.

Cormack et al. (2009) use 60 to fuse many complete runs. Here two candidate lists are
fused and then context evidence is added on the same scale (neighbours, names,
recency), so the fused scores must still tell the top of a list from its middle: with 5,
rank 1 scores 1.0, rank 5 0.6 and rank 20 0.24. Of 2, 3, 5, 10, 20 and 60, 5 was best on
the sum of both benchmarks (LoCoMo and BEAM dev splits); each improved from 60 down to 5.
"""


def _rank_scores(rows: list[tuple[str, float]]) -> dict[str, float]:
    """Each candidate's reciprocal-rank score, scaled so that rank 1 scores 1.0.

    Ranks, not raw scores: BM25's scale moves with document and query length and cosine
    similarity's with the model and the genre of text, so any blend of the raw values
    (or of min-max scaled ones, which also hands the best candidate full marks however
    poor it is) is calibrated to the data it was tuned on. A rank means the same thing
    on any data, which is why reciprocal-rank fusion holds across collections.
    """
    scores: dict[str, float] = {}
    rank, previous = 0, None
    for position, (key, score) in enumerate(rows, 1):
        if score != previous:  # equal scores share a rank: a tie stays a tie
            rank, previous = position, score
        scores[key] = (RRF_K + 1) / (RRF_K + rank)
    return scores


def _clarity(rows: list[tuple[str, float]]) -> float | None:
    """How far a list's best score stands above its pool, in the pool's standard deviations.

    ``None`` when the pool is too small or flat to say (fewer than three, or all equal).
    """
    if len(rows) < 3:
        return None
    values = np.fromiter((score for _, score in rows), dtype=np.float64, count=len(rows))
    spread = float(values.std())
    if spread <= 0:
        return None
    return float((values.max() - values.mean()) / spread)


def fusion_weights(
    ranked: dict[str, list[tuple[str, float]]], alpha: float, fusion: str
) -> dict[str, float]:
    """The weight of each candidate list in the fusion.

    One list alone weighs 1. With ``adaptive`` fusion each list weighs its share of the
    two lists' :func:`_clarity` (``alpha`` when either cannot say); otherwise the vector
    list weighs ``alpha`` and the text list the rest.
    """
    if len(ranked) == 1:
        return dict.fromkeys(ranked, 1.0)
    if fusion == "adaptive":
        text, vector = _clarity(ranked.get("text", [])), _clarity(ranked.get("vector", []))
        if text is not None and vector is not None and text + vector > 0:
            alpha = vector / (text + vector)
    return {"text": 1.0 - alpha, "vector": alpha}


def _chance_corrected(
    rows: list[tuple[str, float]],
    docs: dict[str, MemoryDoc | None],
    openings: dict[str, float],
) -> list[tuple[str, float]]:
    """The vector list with each long memory's chance lift taken off, best first again.

    The lift is what picking the best of several readings wins by chance; a memory's
    own opening (``openings``: its first passage) is the one reading every memory has,
    as a short memory's whole text is, so it stands uncorrected: a long memory scores at
    least what its opening alone scores. Correcting the opening too ranked a long reply
    whose first lines answer the query below short messages that merely share its topic
    (BEAM dev, "how did you recommend..." questions).
    """
    corrected = [
        (
            key,
            max(
                score - chance_lift(str((docs.get(key) or {}).get("content", ""))),
                openings.get(key, -2.0),
            ),
        )
        for key, score in rows
    ]
    return sorted(corrected, key=lambda row: row[1], reverse=True)


def _fused(
    ranked: dict[str, list[tuple[str, float]]],
    weights: dict[str, float],
    covered: dict[str, float],
    fusion: str,
) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """The fused score of every candidate, and its rank in each list.

    Each list is scaled (:func:`_min_max`, or :func:`_rank_scores` for ``rrf``) and
    weighted (:func:`fusion_weights`); a word match's scaled score is then multiplied by
    the square root of its coverage, the share of the query's meaningful words it holds.
    Scaling alone hands the best word match full marks however little of the query it
    matches (one rare shared word of a long question); coverage means the same on any
    data, so the product says how strongly *and* how fully a memory matches. The square
    root keeps a short paraphrase that shares few of a question's words in play:
    coverage itself cost LoCoMo recall@5 0.02 for BEAM's +0.03 at recall@10 (README,
    Benchmarks).
    """
    fused: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, rows in ranked.items():
        scaled = _rank_scores(rows) if fusion == "rrf" else _min_max(rows)
        for key, norm in scaled.items():
            share = math.sqrt(covered.get(key, 0.0)) if name == "text" else 1.0
            fused[key] = fused.get(key, 0.0) + weights[name] * norm * share
        for rank, (key, _) in enumerate(rows, 1):
            ranks.setdefault(key, {})[name] = rank
    return fused, ranks


OWN_READING_WEIGHT = 0.25
"""The share of its own reading's lead over the candidates' mean a memory's score gains.

Fusion scales each list (min-max or by rank) and context then lends relevance to
neighbours and contextual readings: what is left of the absolute similarity is only a
candidate's place among this query's candidates. The raw cosine of the memory's own
opening reading (its whole text, or its first passage; not a contextual reading, not a
later passage) says how similar the memory itself is on the model's scale, which is the
same on any collection (see ``SIMILARITY_SPREAD``): a memory that answers in its own
words leads one that only borrowed relevance from its neighbours or its context. Added
after the context's shares so neighbours do not inherit it (added before them, LoCoMo
lost what it gained). On both benchmarks' dev splits, recall@10 rose with any weight
from 0.15 to 0.45 (LoCoMo 0.735 -> 0.743-0.746, BEAM 0.611 -> 0.616-0.622); past 0.25
BEAM's recall@5 fell (0.499 -> 0.484 at 0.3-0.45, 0.492 at 0.2-0.25). 0.25 is the
largest weight that keeps every figure of both within a question of where it was.
"""


OPENINGS_READ = 40
"""How many of the vector list's first candidates have their opening reading read when
the KNN reply did not hold it (the pool of a 10-result search): a bound on the completion's
cost for a long search (a context asks for 50 results, 200 candidates per list), where the
rest, far down the list, are judged by their best reading."""


def _with_own_reading(
    fused: dict[str, float], own: dict[str, float], similarity: dict[str, float]
) -> dict[str, float]:
    """Each fused score plus a share of how far its own reading beats the candidates' mean.

    The share is :data:`OWN_READING_WEIGHT`; the reading's cosine similarity is measured
    from the mean of the candidates' own readings.

    Centred on this query's candidates, it reorders them without lifting every score
    alike: a context's floor keeps memories within a share of the best one's match, and
    a lift common to all would let more of them in (LoCoMo contexts grew 1,693 -> 1,740
    tokens until it was centred).

    Args:
        fused: the candidates' scores after fusion and context.
        own: each candidate's own opening reading's cosine similarity to the query.
        similarity: each vector candidate's best reading's similarity, for a candidate
            whose opening was not read (far down the vector list:
            :data:`OPENINGS_READ`). A memory with neither keeps its score.
    """
    readings = {key: own.get(key, similarity.get(key)) for key in fused}
    known = [value for value in readings.values() if value is not None]
    if not known:
        return fused
    centre = sum(known) / len(known)
    return {
        key: fused[key] + OWN_READING_WEIGHT * (value - centre if value is not None else 0.0)
        for key, value in readings.items()
    }


@dataclass
class _Candidates:
    """What the candidate round trips found (:meth:`MemorySearch._candidates`).

    Attributes:
        lists: each signal's candidates, (key, score) best first.
        docs: the candidates' documents (``None``: gone).
        openings: each candidate's opening reading's similarity, where a reply held it
            (none from the Qdrant mirror, whose rows are scored whole).
        own: each candidate's opening reading's similarity, also read for the first
            :data:`OPENINGS_READ` vector candidates whose reply lacked it
            (:func:`_with_own_reading`); ``openings`` alone decides the chance
            correction, which was measured with the openings the replies hold.
    """

    lists: dict[str, list[tuple[str, float]]]
    docs: dict[str, MemoryDoc | None]
    openings: dict[str, float]
    own: dict[str, float] = field(default_factory=dict)


class MemorySearch:
    """Search across daily entries, long-term memories and beliefs.

    Args:
        layer: the memory layer.
        alpha: weight of vector similarity against full text (default: the settings').
        judge: who reranks the best results when ``memory.rerank`` is on (default: the
            packaged cross-encoder for ``cross-encoder``; for ``llm`` the caller gives the
            LLM's judge, as ``aether.operations.parts.Parts`` does, and a search built
            without one, such as maintenance's own reads, is not reranked).
    """

    def __init__(
        self,
        layer: MemoryLayer,
        alpha: float | None = None,
        judge: RelevanceJudge | None = None,
    ):
        self.layer = layer
        self.alpha = layer.settings.vector_alpha if alpha is None else alpha
        self.index = layer.text_index()
        if judge is None and layer.settings.rerank == "cross-encoder":
            judge = PackagedCrossEncoder()
        self.judge = judge

    async def ensure_index(self, percent: Callable[[float], None] | None = None) -> None:
        """Create (or rebuild) the indexes; never writes a key (``Aether.ready`` migrates).

        Args:
            percent: told how much of the existing memories a new index has scanned.
        """
        layer = self.layer
        await self._ensure_indexes(percent)
        if isinstance(layer.client, SlotRedis):  # the index stays with the shard: follow
            layer.client.on_move("memory-index", self._ensure_indexes)

    async def _ensure_indexes(self, percent: Callable[[float], None] | None = None) -> None:
        layer = self.layer
        self.index = await ensure_index(layer.client, layer.keys, percent)
        if layer.embedder is not None:
            await ensure_vector_index(
                layer.client,
                layer.keys,
                layer.embedder.dims,
                layer.settings.vector_datatype,
                percent,
            )

    async def search(
        self,
        query: str,
        *,
        kind: str | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
        since: datetime | float | None = None,
        session: str | None = None,
        limit: int = 10,
        now: float | None = None,
        scopes: list[str] | None = None,
        include_inactive: bool = False,
    ) -> list[SearchHit]:
        """The ``limit`` most relevant memories for ``query``; none when nothing is relevant.

        Args:
            query: what to look for, in any words (reduced to word tokens).
            kind: only this kind of memory.
            source: only from this source.
            tags: only memories with one of these tags.
            since: only memories from this time on.
            session: only memories of this session.
            limit: at most this many results (1-1000).
            now: the time recency is measured from (default: now).
            scopes: only memories in these scopes.
            include_inactive: also superseded, forgotten or pruned beliefs and superseded
                notes (left out by default).

        Raises:
            InvalidOperationError: unknown kind or source, bad tags, time or limit.
        """
        from aether.errors import InvalidOperationError

        if not 1 <= limit <= 1000:
            raise InvalidOperationError("limit must be between 1 and 1000")
        flt = build_filter(kind, source, tags, since, session, scopes)
        tokens = query_tokens(query)
        pool = max(limit * self.layer.settings.candidates_per_result, 40)
        criteria = {
            "kind": kind,
            "source": source,
            "tags": tags,
            "session": session,
            "since": check_timestamp(since) if since is not None else None,
            "scopes": [check_scope(x) for x in scopes or []],
        }
        try:
            found = await self._candidates(query, tokens, flt, pool, criteria)
        except (ResponseError, RedisSearchError) as e:
            return await self._fallback(query, tokens, kind, source, tags, since, limit, e)
        return await self._rank(query, found, tokens, limit, now or time.time(), include_inactive)

    async def _candidates(
        self,
        query: str,
        tokens: list[str],
        flt: FilterExpression | None,
        pool: int,
        criteria: dict[str, Any],
    ) -> _Candidates:
        """Candidates of each signal, (key, score) best first, and their documents.

        The documents are read while the candidates are completed (:meth:`_completion`):
        both need only the keys the first round trip found, so they share the second.
        """
        vector = await self.layer.embed(query) if query.strip() else None
        # both searches in one round trip, their replies read raw (see search_command)
        pipe = self.layer.client.pipeline(transaction=False)
        sent: list[str] = []
        if tokens:
            pipe.execute_command(*search_command(self.index, _text_query(tokens, flt, pool)))
            sent.append("text")
        mirror = self.layer.mirror if self.layer.qdrant_search else None
        vector_index = self.layer.vector_index()
        if vector is not None and mirror is None and vector_index is not None:
            knn = knn_query(vector, flt, pool, self.layer.settings.vector_datatype)
            pipe.execute_command(*search_command(vector_index, knn))
            sent.append("vector")
        pending = [pipe.execute()] if sent else []
        if vector is not None and mirror is not None:
            pending.append(mirror.search(vector, pool, criteria))
        results = await asyncio.gather(*pending)
        out: dict[str, list[tuple[str, float]]] = {}
        openings: dict[str, float] = {}
        for name, reply in zip(sent, results[0] if sent else [], strict=True):
            if name == "text":
                rows = search_results(reply, scores=True, fields=False)
                out[name] = [(key, score) for key, score, _ in rows]
            else:
                out[name] = nearest_rows(self.layer.keys, reply, openings)
        if vector is not None and mirror is not None:
            out["vector"] = results[-1]
        keys = list(dict.fromkeys(key for rows in out.values() for key, _ in rows))
        if not keys:
            return _Candidates(out, {}, openings, openings)
        # the documents and the completion need only these keys: one more round trip
        pipe = self.layer.client.pipeline(transaction=False)
        pipe.execute_command(*mget_command(keys))
        completion: dict[str, list[Any]] = {}
        if vector is not None and vector_index is not None:
            completion = self._completion(out, openings, tokens, flt, vector, vector_index)
        for args in completion.values():
            pipe.execute_command(*args)
        replies = await pipe.execute()
        own: dict[str, float] = {}
        self._complete(out, dict(zip(completion, replies[1:], strict=True)), openings, own)
        own.update(openings)  # with the text-only candidates', read with all their readings
        docs = dict(zip(keys, read_mget(replies[0]), strict=True))
        return _Candidates(out, docs, openings, own)

    def _completion(
        self,
        lists: dict[str, list[tuple[str, float]]],
        openings: dict[str, float],
        tokens: list[str],
        flt: FilterExpression | None,
        vector: list[float],
        vector_index: AsyncSearchIndex,
    ) -> dict[str, list[Any]]:
        """The commands that score every candidate on both signals, by the list they fill.

        A candidate one list missed would otherwise score zero on that signal: a memory
        that matches the query's words well and is also fairly similar to it loses to one
        that only does either, merely because it fell outside one list's cut. So the
        memories found by full text alone get their cosine similarity from their stored
        readings (a KNN query limited to them: ``vector``), and those found by vector
        alone their BM25 score (a full-text query limited to them, ``INKEYS``, with the
        same scorer and statistics as the list: ``text``). That is a property of fusing
        two cut lists, not of any data; it raised recall@10 on both benchmarks (README,
        Benchmarks). The vector candidates whose own opening reading the KNN reply did
        not hold get its similarity too (``openings``: a KNN limited to those readings),
        for :func:`_with_own_reading`.
        """
        if "vector" not in lists:
            return {}
        layer = self.layer
        datatype = layer.settings.vector_datatype
        texts, vectors = dict(lists.get("text", [])), dict(lists["vector"])
        commands: dict[str, list[Any]] = {}
        first = itertools.islice(vectors, OPENINGS_READ)
        unopened = [key for key in first if key not in openings]
        if unopened:
            commands["openings"] = similarity_command(
                vector_index, layer.keys, unopened, vector, datatype, openings_only=True
            )
        if "text" not in lists:
            return commands
        vectorless = [key for key in texts if key not in vectors]
        if vectorless:
            commands["vector"] = similarity_command(
                vector_index, layer.keys, vectorless, vector, datatype
            )
        wordless = [key for key in vectors if key not in texts]
        if wordless:
            query = _text_query(tokens, flt, len(wordless))
            query.limit_ids(*wordless)
            commands["text"] = search_command(self.index, query)
        return commands

    def _complete(
        self,
        lists: dict[str, list[tuple[str, float]]],
        replies: dict[str, Any],
        openings: dict[str, float],
        own: dict[str, float],
    ) -> None:
        """Add the completion's scores (:meth:`_completion`) to the lists, in place."""
        if "openings" in replies:  # fills ``own`` only: the lists have their best
            nearest_rows(self.layer.keys, replies.pop("openings"), own)
        scored = {name: dict(rows) for name, rows in lists.items()}
        if "vector" in replies:
            scored["vector"].update(nearest_rows(self.layer.keys, replies["vector"], openings))
        if "text" in replies:
            rows = search_results(replies["text"], scores=True, fields=False)
            scored["text"].update((key, score) for key, score, _ in rows)
        for name in replies:
            lists[name] = sorted(scored[name].items(), key=lambda row: row[1], reverse=True)

    async def _rank(
        self,
        query: str,
        found: _Candidates,
        tokens: list[str],
        limit: int,
        now: float,
        include_inactive: bool = False,
    ) -> list[SearchHit]:
        settings = self.layer.settings
        ranked, read = found.lists, found.docs
        if not read:
            return []
        # how much of the query each word match holds: it weighs the match (see _fused)
        covered = {key: _coverage(tokens, read[key]) for key, _ in ranked.get("text", [])}
        similarity = dict(ranked.get("vector", []))  # raw: what the floor judges
        if "vector" in ranked:
            corrected = _chance_corrected(ranked["vector"], read, found.openings)
            ranked = {**ranked, "vector": corrected}
        weights = fusion_weights(ranked, self.alpha, settings.fusion)
        fused, ranks = _fused(ranked, weights, covered, settings.fusion)
        floor = settings.min_similarity
        for key in list(fused):  # the absolute gate: similar enough, or a word match that
            if similarity.get(key, -1.0) >= floor:  # covers enough of the query
                continue
            if "text" not in ranks[key] or (
                settings.min_coverage > 0 and covered.get(key, 0.0) < settings.min_coverage
            ):
                del fused[key]
        if not fused:
            return []
        fused = await in_context(self.layer, fused, tokens, read)
        fused = _with_own_reading(fused, found.own, similarity)
        # recency weighs at most recency_weight: past twice the limit nothing climbs back in
        judge = self.judge if settings.rerank != "off" else None
        depth = max(limit * 2, settings.rerank_depth if judge is not None else 0)
        shortlist = sorted(fused, key=fused.__getitem__, reverse=True)[:depth]
        docs = [_hit_fields(read[key]) for key in shortlist]
        hits = []
        vanished = [key for key, doc in zip(shortlist, docs, strict=True) if doc is None]
        if vanished and self.layer.mirror is not None:  # deleted or rolled back in Redis
            await self.layer.mirror.delete([key.rsplit(":", 1)[1] for key in vanished])
        for key, doc in zip(shortlist, docs, strict=True):
            if doc is None or (not include_inactive and doc.get("status") in INACTIVE):
                # checked here, not in the query: a negated tag filter there costs recall
                # (LoCoMo recall@10 0.665 -> 0.590) and a Qdrant payload may be stale
                continue
            age_days = max(0.0, now - float(doc.get("timestamp", now))) / 86_400
            recency = math.pow(0.5, age_days / settings.recency_half_life_days)
            score = (1 - settings.recency_weight) * fused[key] + settings.recency_weight * recency
            hits.append(
                SearchHit(
                    key,
                    doc,
                    round(score, 6),
                    ranks.get(key, {}).get("text"),
                    ranks.get(key, {}).get("vector"),
                    round(fused[key], 6),
                    similarity.get(key),
                    coverage=covered[key] if key in covered else _coverage(tokens, doc),
                )
            )
        hits.sort(key=lambda h: h.relevance, reverse=True)
        if judge is not None:
            hits = await rerank(
                query,
                tokens,
                hits,
                settings.rerank_depth,
                settings.recency_weight,
                judge,
                settings.rerank_floor,
            )
        # reordered within the results only: what is found stays what fusion found
        return newest_first(hits[:limit], tokens)

    async def _fallback(
        self,
        query: str,
        tokens: list[str],
        kind: str | None,
        source: str | None,
        tags: list[str] | None,
        since: datetime | float | None,
        limit: int,
        error: Exception,
    ) -> list[SearchHit]:
        log_once(
            log,
            "search-fallback",
            "search index unavailable; substring match over recent daily logs",
            error=str(error),
        )
        if kind not in (None, "daily"):
            return []
        needles = tokens or [query.lower().strip()]
        since_ts = check_timestamp(since) if since is not None else None
        days = self.layer.settings.daily_retention_days
        hits = []
        for doc in await DailyLog(self.layer).recent(days):
            text = str(doc.get("content", "")).lower()
            matched = sum(1 for n in needles if n and n in text)
            if not matched:
                continue
            if source and doc.get("source") != source:
                continue
            if tags and not set(tags) & set(doc.get("tags", [])):
                continue
            if since_ts is not None and float(doc.get("timestamp", 0)) < since_ts:
                continue
            doc.pop("embedding", None)
            hits.append(
                SearchHit(
                    self.layer.keys.daily_entry(doc["id"]), doc, matched / len(needles), None, None
                )
            )
        hits.sort(key=lambda h: (h.relevance, h.doc.get("timestamp", 0)), reverse=True)
        return hits[:limit]

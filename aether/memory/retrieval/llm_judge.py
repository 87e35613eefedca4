"""Relevance judged by the configured LLM (``AETHER_MEMORY__RERANK=llm``).

Search ranks by how a memory's words and vector resemble the query's. Two things need
a reader instead: which of several memories that share a question's topic actually
answers it, and whether any does. The packaged cross-encoder reads each pair, but it was
trained on web questions and short passages: it judges an instruction or a preference
("always use type hints") irrelevant to the question it governs, and it scores a
question about a detail the chats never gave as high as one they answer
(docs/decisions/0004-retrieval-scoring.md). A general LLM reads the question and every
candidate together and grades each on a fixed scale, so:

- the grade becomes the same 0-1 probability the cross-encoder gives (grade / 3), mixed
  in by :func:`aether.memory.retrieval.rerank.rerank` the same way;
- with ``memory.rerank_floor`` (1/3: "on the topic but no help" and below is left out),
  a question none of the best candidates helps answer finds nothing.

One request judges all of a search's first ``memory.rerank_depth`` results (each cut to
:data:`MAX_CHARS`, a long memory by its passage that holds most of the query), with the
API's structured output. Grades are cached per (query, memory text), so a question asked
again costs nothing. A reply that is not a judgement, or an endpoint that is down, is an
:class:`~aether.errors.LLMError`: search then keeps fusion's order (see ``rerank``).
"""

from __future__ import annotations

from collections import OrderedDict

from pydantic import BaseModel, Field, ValidationError

from aether.errors import LLMError
from aether.messages import StructuredModel

__all__ = ["GRADES", "MAX_CHARS", "LLMJudge"]

GRADES = 3
"""The top grade: a memory that answers the question (0: unrelated)."""

MAX_CHARS = 800
"""What the judge reads of one memory at most: about 200 tokens, so 30 memories cost
about 6,000 prompt tokens."""

_CACHE_SIZE = 8192

SYSTEM = (
    "You judge which stored memories help answer a question. You are given the question "
    "and numbered memories. Grade every memory: 3 = it answers the question or states the "
    "fact, instruction or preference asked about; 2 = it holds part of the answer; 1 = it "
    "is on the question's topic but does not help answer it; 0 = unrelated. Judge only "
    "what the memory says, never what you know yourself. Reply with JSON only."
)

SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "grades": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "memory": {"type": "integer"},
                    "grade": {"type": "integer", "minimum": 0, "maximum": GRADES},
                },
                "required": ["memory", "grade"],
            },
        }
    },
    "required": ["grades"],
}


class Grade(BaseModel):
    """The judge's grade of one numbered memory."""

    memory: int
    grade: int = Field(ge=0, le=GRADES)


class Judgement(BaseModel):
    """The judge's reply: a grade per memory."""

    grades: list[Grade]


def prompt(query: str, texts: list[str]) -> str:
    """The request: the question, then each memory numbered from 1, cut to MAX_CHARS."""
    lines = [f"Question: {' '.join(query.split())[:2_000]}", "", "Memories:"]
    for number, text in enumerate(texts, 1):
        said = " ".join(text.split())
        lines.append(f"[{number}] {said[:MAX_CHARS]}{'...' if len(said) > MAX_CHARS else ''}")
    lines += ["", f'Reply as {{"grades": [{{"memory": 1, "grade": 0-{GRADES}}}, ...]}}.']
    return "\n".join(lines)


def read_judgement(raw: str, count: int) -> list[float]:
    """The probability of each of ``count`` memories from the judge's JSON reply.

    A memory the reply does not grade counts as unrelated; a number outside 1..count is
    ignored.

    Raises:
        LLMError: the reply is not a judgement, or grades none of the memories.
    """
    try:
        judgement = Judgement.model_validate_json(raw)
    except ValidationError as e:
        raise LLMError(f"the relevance judge's reply is no judgement: {raw[:120]!r}") from e
    grades = {g.memory: g.grade for g in judgement.grades if 1 <= g.memory <= count}
    if count and not grades:
        raise LLMError("the relevance judge graded none of the memories", retryable=True)
    return [grades.get(number, 0) / GRADES for number in range(1, count + 1)]


class LLMJudge:
    """The configured LLM as a :class:`~aether.memory.retrieval.rerank.RelevanceJudge`.

    Args:
        model: the LLM (``aether.runtime.llm.LLMClient``, or anything that answers JSON).
        max_tokens: the reply's length limit.
    """

    def __init__(self, model: StructuredModel, max_tokens: int = 1_024) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self._cache: OrderedDict[tuple[str, str], float] = OrderedDict()

    async def probabilities(self, query: str, texts: list[str]) -> list[float]:
        """The probability that each text is relevant to the query (its grade / 3).

        Raises:
            LLMError: the endpoint failed, or its reply is no judgement.
        """
        known = {text: self._cache.get((query, text)) for text in texts}
        missing = [text for text, probability in known.items() if probability is None]
        if missing:
            raw = await self.model.complete_json(
                SYSTEM, prompt(query, missing), SCHEMA, self.max_tokens
            )
            for text, probability in zip(missing, read_judgement(raw, len(missing)), strict=True):
                known[text] = probability
        for text in texts:  # least recently asked leave first
            self._cache[(query, text)] = float(known[text] or 0.0)
            self._cache.move_to_end((query, text))
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return [float(known[text] or 0.0) for text in texts]

"""Context quality and cost on LoCoMo (or any file in its format); prints one JSON object.

Each conversation is replayed through the agent runtime's window at 4,096 tokens with no
LLM (``observe``: extractive compression; what leaves the window goes to the daily log).
Then, for each question of categories 1-4 with evidence, a context of at most 2,000
tokens is assembled (identity, memory index, the session's history: its newest messages
and the older ones of its window that hold the question, relevant memories).
``context_recall`` is the fraction of a question's evidence turns whose text is in the
assembled context (``context_recall_from_history``: the part the session's history
holds); ``token_reduction`` is 1 - context tokens / the whole conversation's tokens, per
question; assembly latency excludes embedding the question (its vector is computed, and
cached, before the clock starts) and starts with the heap settled, as a running daemon's
is (``aether.runtime.heap``).

Reranked contexts: ``AETHER_MEMORY__RERANK=cross-encoder``, or ``=llm`` with
``AETHER_LLM__BASE_URL`` and ``AETHER_LLM__MODEL`` (and ``AETHER_MEMORY__RERANK_FLOOR``).
The context's own settings come from ``AETHER_CONTEXT__*`` too (its window aside).

Usage: python bench/context.py [PATH] [--embeddings local|none] [--window N] [--max-tokens N]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from locomo import DEFAULT, questions, turns
from percentiles import percentile

from aether.app import Aether
from aether.config import Settings
from aether.identity.bootstrap import default_identity_dir
from aether.runtime.agent import AgentRuntime
from aether.runtime.heap import settle_heap
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.tokens import count_tokens


def normal(text: str) -> str:
    return " ".join(text.lower().split())


async def replay(rt: AgentRuntime, sample: dict[str, Any]) -> dict[str, Any]:
    """Observe every turn; returns dia_id -> normalised text, and what the window did."""
    conv = sample["conversation"]
    first = conv.get("speaker_a")
    texts: dict[str, str] = {}
    actions: list[str] = []
    evicted = 0
    for dia, content, ts in turns(sample):
        speaker, _, said = content.partition(": ")
        role = "user" if speaker == first else "assistant"
        report = await rt.observe(role, content, timestamp=ts)
        actions += report.actions
        evicted += report.evicted
        texts[dia] = normal(said)[:80]
    return {"texts": texts, "actions": actions}


async def run(path: Path, embeddings: str, window: int, max_tokens: int) -> dict[str, Any]:
    data = json.loads(path.read_text())
    home = Path(tempfile.mkdtemp(prefix="aether-context-"))
    from_env = Settings().context  # AETHER_CONTEXT__* settings apply, as to a daemon
    base = Settings(
        home=home,
        embedding={"provider": embeddings},
        redis_appendfsync="always",  # type: ignore[arg-type]
        context=from_env.model_copy(update={"window_tokens": window}),
    )
    recalls: list[float] = []
    reductions: list[float] = []
    from_history: list[float] = []
    context_tokens: list[int] = []
    conversation_tokens: list[int] = []
    latencies: list[float] = []
    actions: list[str] = []
    replay_s = 0.0
    client = await connect(base)
    try:
        for sample in data:
            settings = base.model_copy(update={"namespace": f"ctx{uuid.uuid4().hex[:8]}"})
            wired = Aether(settings, client)
            await wired.ready()
            rt = wired.runtime("conversation")
            await rt.identity.ensure(default_identity_dir())
            t = time.perf_counter()
            replayed = await replay(rt, sample)
            replay_s += time.perf_counter() - t
            settle_heap()  # as the daemon does once it is up
            actions += replayed["actions"]
            whole = sum(count_tokens(content) for _, content, _ in turns(sample))
            for question, evidence, _category in questions(sample):
                if rt.memory.embedder is not None:
                    await rt.memory.embedder.embed(question)  # embedding is excluded
                t = time.perf_counter()
                ctx = await rt.assembler.assemble(question, max_tokens, session="conversation")
                latencies.append((time.perf_counter() - t) * 1000)
                text = normal(ctx.text())
                found = [d for d in evidence if replayed["texts"].get(d, "\0") in text]
                recalls.append(len(found) / len(evidence))
                history = normal(
                    " ".join(str(m.get("content") or "") for m in ctx.history_messages)
                )
                in_history = [d for d in found if replayed["texts"][d] in history]
                from_history.append(len(in_history) / len(evidence))
                context_tokens.append(ctx.tokens)
                conversation_tokens.append(whole)
                reductions.append(1 - ctx.tokens / whole)
    finally:
        await client.aclose()
        EmbeddedRedis(base).stop()
    return {
        "file": str(path),
        "embeddings": embeddings,
        "window_tokens": window,
        "max_tokens": max_tokens,
        "rerank": base.memory.rerank,  # AETHER_MEMORY__RERANK=cross-encoder to try it
        "questions": len(recalls),
        "context_recall": round(statistics.fmean(recalls), 3),
        "context_recall_from_history": round(statistics.fmean(from_history), 3),
        "token_reduction": round(statistics.fmean(reductions), 3),
        "context_tokens_mean": round(statistics.fmean(context_tokens), 1),
        "conversation_tokens_mean": round(statistics.fmean(conversation_tokens), 1),
        "assembly_p50_ms": round(statistics.median(latencies), 2),
        "assembly_p99_ms": round(percentile(latencies, 0.99), 2),
        "window_actions": {a: actions.count(a) for a in sorted(set(actions))},
        "replay_s": round(replay_s, 1),
    }


def main() -> None:
    import logging

    import structlog

    structlog.configure(  # warnings to stderr: stdout is the JSON
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    args = sys.argv[1:]
    options = {"--embeddings": "local", "--window": "4096", "--max-tokens": "2000"}
    for name in list(options):
        if name in args:
            i = args.index(name)
            options[name] = args[i + 1]
            del args[i : i + 2]
    path = Path(args[0]) if args else DEFAULT
    result = asyncio.run(
        run(path, options["--embeddings"], int(options["--window"]), int(options["--max-tokens"]))
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""A linear query adapter over all-MiniLM-L6-v2, cross-validated by conversation (a probe).

Issue 65's recall bars are missed for want of candidates (decision 0008): at BEAM 500K the
cosine list and the BM25 list miss a third of the evidence before any ranking. This probe
asks whether a question's vector, moved by a 384 x 384 linear map learned from the dev
splits' questions and their evidence, finds more of a conversation it was not trained on.
It does, over the messages' opening windows; through the product (its readings, fusion,
the ranker) it did not, and nothing in the product reads it (decision 0008).

1. Every message of the three dev splits (LoCoMo dev, BEAM 100K dev, BEAM 500K dev, read
   as their benches read them: ``speaker: text`` and ``role: text``) is embedded by its
   opening window, as its opening reading is, and every question with evidence.
2. Five folds of whole conversations (every fifth conversation held out): a map ``W``,
   starting from the identity, is trained on the other folds' questions (a softmax over
   their own conversation's messages, the evidence as targets, temperature ``--tau``,
   ``--l2`` times the squared distance to the identity) and scores the held-out
   conversations' questions.
3. Printed per split: cosine's recall@10 and @40 over the messages (the share of each
   question's evidence in the first 10 and 40), for the plain question vector and the
   adapted one.

``--maps FILE`` keeps each conversation's held-out map (the map of the fold that left it
out) in an ``.npz`` keyed by conversation (``beam100k__3``, ``locomo__conv-26``), for
``bench/ranker_data.py --adapter FILE``: the features captured with adapted queries, to
retrain and cross-validate the ranker on.

Usage: python bench/query_adapter.py [--cache FILE] [--maps FILE] [--tau 0.1] [--steps 150]
[--l2 0.01]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from beam import messages, questions
from locomo import questions as locomo_questions
from locomo import turns

from aether.memory.storage.embeddings import LocalEmbedder
from aether.memory.storage.readings import WINDOW_CHARS

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
FOLDS = 5
Split = dict[str, tuple[np.ndarray, np.ndarray, list[list[int]]]]
BEAM_SPLITS = {"beam-dev": "beam100k", "beam500-dev": "beam500k"}  # data folder -> split


def map_key(split: str, conversation: str) -> str:
    """The name a conversation's map is kept under in ``--maps`` (``beam100k__3``)."""
    return f"{split}__{conversation}"


def conversations() -> dict[str, tuple[list[str], list[tuple[str, list[int]]]]]:
    """Each dev conversation's texts and its questions (text, evidence positions)."""
    out: dict[str, tuple[list[str], list[tuple[str, list[int]]]]] = {}
    for folder, split in BEAM_SPLITS.items():
        root = DATA / folder
        for chat in sorted(root.iterdir(), key=lambda p: int(p.name)):
            msgs = messages(chat)
            at = {m.id: i for i, m in enumerate(msgs)}
            asked = [
                (q.text, sorted(at[i] for i in q.evidence if i in at))
                for q in questions(chat)
                if q.evidence
            ]
            out[f"{split}/{chat.name}"] = ([m.content for m in msgs], [a for a in asked if a[1]])
    for sample in json.loads((DATA / "locomo-dev.json").read_text()):
        said = turns(sample)
        at = {dia: i for i, (dia, _, _) in enumerate(said)}
        asked = [
            (text, sorted(at[e] for e in evidence if e in at))
            for text, evidence, _ in locomo_questions(sample)
        ]
        out[f"locomo/{sample['sample_id']}"] = (
            [content for _, content, _ in said],
            [a for a in asked if a[1]],
        )
    return out


async def embedded(cache: Path | None) -> Split:
    """The messages' opening windows and the questions, embedded (kept in ``cache``)."""
    if cache is not None and cache.exists():
        with cache.open("rb") as f:
            kept: Split = pickle.load(f)
        return kept
    embedder = LocalEmbedder()
    out: Split = {}
    for name, (texts, asked) in conversations().items():
        docs = await embedder.embed_many([t[:WINDOW_CHARS] for t in texts])
        queries = await embedder.embed_many([q for q, _ in asked])
        out[name] = (
            _unit(np.asarray(docs, dtype=np.float32)),
            _unit(np.asarray(queries, dtype=np.float32)),
            [ev for _, ev in asked],
        )
        print(f"embedded {name}: {len(texts)} messages, {len(asked)} questions", file=sys.stderr)
    if cache is not None:
        with cache.open("wb") as f:
            pickle.dump(out, f)
    return out


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def train(data: Split, names: list[str], tau: float, steps: int, l2: float) -> np.ndarray:
    """The map ``W`` (query -> adapted query) learned from ``names``' questions."""
    torch.manual_seed(0)
    dims = next(iter(data.values()))[0].shape[1]
    eye = torch.eye(dims)
    w = eye.clone().requires_grad_(True)
    opt = torch.optim.Adam([w], lr=1e-3)
    batches = []
    for name in names:
        docs, queries, evidence = data[name]
        targets = torch.zeros(len(evidence), len(docs))
        for i, ev in enumerate(evidence):
            targets[i, ev] = 1.0 / len(ev)
        batches.append((torch.from_numpy(docs), torch.from_numpy(queries), targets))
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.zeros(())
        for docs_t, queries_t, targets in batches:
            moved = torch.nn.functional.normalize(queries_t @ w.T, dim=1)
            logp = torch.log_softmax(moved @ docs_t.T / tau, dim=1)
            loss = loss - (logp * targets).sum(1).mean()
        loss = loss / len(batches) + l2 * ((w - eye) ** 2).sum()
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
    return w.detach().numpy()


def recall(data: Split, name: str, w: np.ndarray | None, k: int) -> list[float]:
    """Each question's share of evidence in cosine's first ``k`` (``w``: adapted)."""
    docs, queries, evidence = data[name]
    moved = _unit(queries @ w.T) if w is not None else queries
    order = np.argsort(-(moved @ docs.T), axis=1)[:, :k]
    return [len(set(order[i].tolist()) & set(ev)) / len(ev) for i, ev in enumerate(evidence)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, help="keep the embeddings in this file")
    parser.add_argument("--tau", type=float, default=0.1, help="the softmax's temperature")
    parser.add_argument("--steps", type=int, default=150, help="Adam steps per fold")
    parser.add_argument("--l2", type=float, default=0.01, help="pull towards the identity")
    parser.add_argument("--maps", type=Path, help="keep each conversation's held-out map here")
    args = parser.parse_args()
    started = time.monotonic()
    torch.set_num_threads(2)
    data = asyncio.run(embedded(args.cache))
    names = list(data)
    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    maps: dict[str, np.ndarray] = {}
    for fold in range(FOLDS):
        held = names[fold::FOLDS]
        w = train(data, [n for n in names if n not in held], args.tau, args.steps, args.l2)
        for name in held:
            split, conversation = name.split("/")
            maps[map_key(split, conversation)] = w
            for label, adapter in (("cosine", None), ("adapted", w)):
                for k in (10, 40):
                    scores[split][f"{label}@{k}"] += recall(data, name, adapter, k)
    result: dict[str, Any] = {
        "tau": args.tau,
        "steps": args.steps,
        "l2": args.l2,
        "folds": FOLDS,
        "held_out": {
            split: {key: round(float(np.mean(v)), 3) for key, v in sorted(by.items())}
            | {"questions": len(by["cosine@10"])}
            for split, by in scores.items()
        },
        "seconds": round(time.monotonic() - started, 1),
    }
    if args.maps is not None:
        np.savez(args.maps, **maps)
        result["maps"] = str(args.maps)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

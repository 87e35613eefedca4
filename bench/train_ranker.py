"""Train the learned ranker, cross-validated by conversation; prints one JSON object.

Reads the feature files ``bench/ranker_data.py`` writes (LoCoMo dev, BEAM 100K dev, BEAM
500K dev: the dev splits only), then:

1. **Cross-validation that holds out whole conversations**: for each conversation, a model
   trained on every other one ranks its questions' candidates. Printed per split (and per
   ability): recall@5/10 of fusion's order and of the held-out model's, over the same
   candidates (a question's evidence outside its candidates counts as missed by both, as in
   the benches, so the figures are comparable with ``bench/locomo.py`` and
   ``bench/beam.py``' own).
2. **The shipped model**: trained on all of it with the same parameters and written to
   ``aether/memory/retrieval/ranker_model.txt`` (``--out`` to write elsewhere). LightGBM
   runs deterministic and single-threaded, so the same files give the same bytes.

Usage: python bench/train_ranker.py FEATURES.jsonl... [--out PATH] [--no-cv]
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import lightgbm
import numpy as np

from aether.memory.retrieval.ranker import FEATURES, MODEL_FILE, rows_from_json

PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [10],
    "lambdarank_truncation_level": 30,
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 40,
    "feature_fraction": 0.8,
    "lambda_l2": 1.0,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "seed": 7,
    "verbosity": -1,
}
ROUNDS = 250
KS = (5, 10)


def read(paths: list[Path]) -> list[dict[str, Any]]:
    """Every question of every file (one with no candidates is missed by every order)."""
    return [json.loads(line) for path in paths for line in path.read_text().splitlines()]


def matrix(questions: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Rows, labels and group sizes (one group per question), NaN for a missing value."""
    rows = [r for q in questions for r in q["rows"]]
    labels = [label for q in questions for label in q["labels"]]
    return (
        rows_from_json(rows),
        np.asarray(labels, dtype=np.float64),
        [len(q["rows"]) for q in questions],
    )


def balanced(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each split's questions repeated to about the largest split's count.

    LoCoMo holds several times the questions of a BEAM split: unbalanced, the model learns
    short chat turns and not long technical messages.
    """
    by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in questions:
        by_split[q["split"]].append(q)
    most = max(len(qs) for qs in by_split.values())
    return [q for qs in by_split.values() for q in qs * max(1, round(most / len(qs)))]


def train(questions: list[dict[str, Any]]) -> lightgbm.Booster:
    """A model over ``questions`` (:func:`balanced`), with :data:`PARAMS`."""
    x, y, groups = matrix(balanced([q for q in questions if q["rows"]]))
    data = lightgbm.Dataset(x, y, group=groups, feature_name=list(FEATURES), free_raw_data=False)
    return lightgbm.train(PARAMS, data, num_boost_round=ROUNDS)


def recall(q: dict[str, Any], order: list[int], k: int) -> float:
    """The share of the question's evidence among the first ``k`` of ``order``."""
    found = sum(q["labels"][i] for i in order[:k])
    return float(found / q["evidence"]) if q["evidence"] else 0.0


def learned_order(model: lightgbm.Booster, q: dict[str, Any]) -> list[int]:
    """The question's candidates by the model's score, fusion's order breaking ties."""
    if not q["rows"]:
        return []
    x, _, _ = matrix([q])
    scores = model.predict(x, num_threads=1)
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def cross_validate(questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Fusion's and the held-out model's recall per split and ability."""
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in questions:
        by_group[q["group"]].append(q)
    tallies: dict[tuple[str, str, str, int], list[float]] = defaultdict(list)
    for group, held in sorted(by_group.items()):
        model = train([q for g, qs in by_group.items() if g != group for q in qs])
        for q in held:
            fused = list(range(len(q["rows"])))
            learned = learned_order(model, q)
            for k in KS:
                for ranker, order in (("fusion", fused), ("learned", learned)):
                    value = recall(q, order, k)
                    tallies[q["split"], "all", ranker, k].append(value)
                    tallies[q["split"], q["ability"], ranker, k].append(value)
    out: dict[str, Any] = {}
    for (split, ability, ranker, k), values in sorted(tallies.items()):
        node = out.setdefault(split, {}).setdefault(ability, {"questions": len(values)})
        node[f"{ranker}_recall@{k}"] = round(statistics.fmean(values), 3)
    return out


def main() -> None:
    args = sys.argv[1:]
    out = MODEL_FILE
    if "--out" in args:
        out = Path(args.pop(args.index("--out") + 1))
        args.remove("--out")
    cv = "--no-cv" not in args
    paths = [Path(a) for a in args if a != "--no-cv"]
    questions = read(paths)
    result: dict[str, Any] = {
        "files": [str(p) for p in paths],
        "questions": len(questions),
        "candidates": sum(len(q["rows"]) for q in questions),
        "conversations": len({q["group"] for q in questions}),
        "params": {**PARAMS, "rounds": ROUNDS},
    }
    if cv:
        result["cross_validated"] = cross_validate(questions)
    model = train(questions)
    model.save_model(str(out))
    result["model"] = {"file": str(out), "sha256": hashlib.sha256(out.read_bytes()).hexdigest()}
    gains = model.feature_importance("gain")
    total = float(sum(gains)) or 1.0
    result["feature_gain_share"] = {
        name: round(float(g) / total, 3)
        for name, g in sorted(zip(FEATURES, gains, strict=True), key=lambda p: -p[1])
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

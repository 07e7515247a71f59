"""`freshrag scan-retrieval`: recall@k of the retrieval index for every text weight, per question
label (or any other question field) and overall, and the best weight of each
(docs/methods.md#hybrid-retrieval: Know Your RAG scanned the weights 0, 0.05, 0.1, 0.2, 0.5 and 1
and found that the best weight on the whole set is not the best for every label;
docs/methods.md#information-needs: mean recall@k per need).

No LLM call. Each question is embedded once and searched once on each side (`VectorIndex.
candidates`); every weight then fuses the same candidates with `lexical.fuse`, the function a
run at that weight retrieves with, so the scan costs one search per question however many weights
it tries. Recall@k is the share of questions whose gold article is among the articles of the
top-k chunks (for a multi-article question, any of its gold articles: a chunk of any is a
hit), with a 95% bootstrap interval
(harness/core/stats.py). A general query (kind `general`, docs/traffic.md#kinds) has no gold
article: it is left out of every row, and counted apart (`general_queries`), rather than counted
as a miss.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from tqdm import tqdm

from freshrag.core import tables
from freshrag.core.fields import OVERALL, grouped
from freshrag.core.stats import bootstrap_interval, mean
from freshrag.core.types import Question
from freshrag.retrieval import lexical
from freshrag.retrieval.index import VectorIndex

BATCH = 32  # questions embedded and searched together
SCAN_FILE = "scan-retrieval.json"


def scan(index: VectorIndex, questions: Sequence[Question], weights: Sequence[float], k: int,
         field: str = "label", progress: bool = True) -> dict[str, Any]:
    """Recall@k per weight for each group of `field` and overall; see the module docstring."""
    started = time.monotonic()
    general = sum(question.gold_title is None for question in questions)
    questions = [question for question in questions if question.gold_title is not None]
    found: dict[float, list[bool]] = {weight: [] for weight in weights}  # per weight: was a gold article of question i found
    depth = max(lexical.DEPTH, k)
    with tqdm(total=len(questions), unit="question", desc="scanning",
              disable=not progress) as bar:
        for start in range(0, len(questions), BATCH):
            batch = questions[start:start + BATCH]
            candidates = index.candidates([q.text for q in batch], depth,
                                          dense=any(weight < 1 for weight in weights))
            for question, candidate in zip(batch, candidates):
                for weight in weights:
                    titles = {chunk.title for chunk in candidate.top(weight, k)}
                    found[weight].append(not titles.isdisjoint(question.golds))
            bar.update(len(batch))
    positions = grouped(range(len(questions)), field, lambda i, name: getattr(questions[i], name))
    positions[OVERALL] = list(range(len(questions)))
    return {"field": field, "k": k, "weights": list(weights), "questions": len(questions),
            "general_queries": general,
            "rows": [_row(field, name, members, found) for name, members in positions.items()],
            "seconds": round(time.monotonic() - started, 1), "index": index.record()}


def _row(field: str, name: str, members: list[int],
         found: dict[float, list[bool]]) -> dict[str, Any]:
    recall: dict[str, list[float]] = {}
    for weight, hits in found.items():
        values = [float(hits[i]) for i in members]
        low, high = bootstrap_interval(values, mean)  # a ValueError for a group of no members
        recall[weight_name(weight)] = [round(sum(values) / len(values), 4), low, high]
    best = max(value[0] for value in recall.values())
    return {field: name, "questions": len(members), "recall": recall,
            "best_weights": [float(w) for w, value in recall.items() if value[0] == best],
            "best_recall": best}


def weight_name(weight: float) -> str:
    return f"{weight:g}"


def render(result: dict[str, Any]) -> str:
    """The scan as a markdown table: one row per group, one column per weight."""
    field, k = result["field"], result["k"]
    names = [weight_name(w) for w in result["weights"]]
    lines = tables.header([field, "questions", *(f"w={n}" for n in names), "best"])
    for row in result["rows"]:  # a group is a value of the questions' own field: escaped
        cells = [_interval(row["recall"][n]) for n in names]
        best = ", ".join(weight_name(w) for w in row["best_weights"])
        lines.append(tables.row([row[field], f"{row['questions']:,}", *cells,
                                 f"{best} ({row['best_recall']:.3f})"]))
    return (f"recall@{k} (gold article among the top-{k} chunks' articles; 95% bootstrap "
            f"intervals) by text weight w: 0 dense only, 1 lexical only\n\n" + "\n".join(lines))


def _interval(value: list[float]) -> str:
    return f"{value[0]:.3f} [{value[1]:.3f}, {value[2]:.3f}]"

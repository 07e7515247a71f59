"""Why a system scored as it did, and how sure the numbers are; all from samples.jsonl rows.

- Retrieval quality: gold-article hit@1, hit@k and MRR from the retrieved chunks' titles.
- Failure attribution: per answer, retrieval missed the gold article / gold retrieved but the
  answer still scored low (generation) / no retrieval and a low score (knowledge gap) / fine.
- Decision quality of adaptive systems against a `baseline` and a `naive` run on the same
  questions: retrieval is *needed* where the baseline scored below naive (truthfulness +
  relevance). Confusion matrix, precision and recall per adaptive system, and the oracle router
  (retrieve exactly when needed), the upper bound of any adaptive system.
- Quality against cost: mean truthfulness + relevance against input tokens and dollars (from the
  price table, harness/prices.py), with the Pareto front marked.
- Uncertainty: percentile-bootstrap 95% intervals for means and token totals, and paired
  bootstrap tests between systems on the same questions.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

from harness.prices import role_models, row_cost
from harness.report import answer_tokens, group_rows, is_scored, mean
from harness.stats import BOOTSTRAP_SAMPLES, CONFIDENCE, bootstrap_interval

LOW_SCORE = 8  # truthfulness + relevance below this (of 10) is a poor answer
GOLD_CONTEXT_SYSTEMS = {"oracle"}  # answer with the gold article itself: a low score is generation
ATTRIBUTIONS = ("fine", "retrieval_miss", "generation", "knowledge_gap", "unscored")


def total_score(row: dict[str, Any]) -> float | None:
    if not is_scored(row):
        return None
    return row["grade"]["truthfulness"] + row["grade"]["relevance"]


def retrieved_titles(row: dict[str, Any]) -> list[str] | None:
    """Titles of the retrieved chunks in rank order; None if the answer did not retrieve."""
    chunks = (row.get("details") or {}).get("retrieved")
    if not row.get("retrievals") or chunks is None:
        return None
    return [chunk["title"] for chunk in chunks]


# --------------------------------------------------------------------------- retrieval quality


def retrieval_quality(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (dataset, system) that retrieved at all: hit@1, hit@k and MRR over its retrievals."""
    table = []
    for (dataset, system), group in group_rows(rows).items():
        ranked = [(titles, row["gold_title"]) for row in group
                  if (titles := retrieved_titles(row)) is not None]
        if not ranked:
            continue
        ranks = [titles.index(gold) + 1 if gold in titles else None for titles, gold in ranked]
        table.append({
            "dataset": dataset, "system": system, "retrieved": len(ranked),
            "k": max(len(titles) for titles, _ in ranked),
            "hit@1": mean([rank == 1 for rank in ranks]),
            "hit@k": mean([rank is not None for rank in ranks]),
            "mrr": mean([1 / rank if rank else 0.0 for rank in ranks]),
        })
    return table


# --------------------------------------------------------------------------- failure attribution


def attribution(row: dict[str, Any], low: float = LOW_SCORE) -> str:
    score = total_score(row)
    if score is None:
        return "unscored"
    if score >= low:
        return "fine"
    titles = retrieved_titles(row)
    if titles is not None:
        return "generation" if row["gold_title"] in titles else "retrieval_miss"
    return "generation" if row["system"] in GOLD_CONTEXT_SYSTEMS else "knowledge_gap"


def attributions(rows: list[dict[str, Any]], low: float = LOW_SCORE) -> list[dict[str, Any]]:
    table = []
    for (dataset, system), group in group_rows(rows).items():
        counts = {name: 0 for name in ATTRIBUTIONS}
        for row in group:
            counts[attribution(row, low)] += 1
        table.append({"dataset": dataset, "system": system, **counts})
    return table


# --------------------------------------------------------------------------- decision quality


def decision_quality(rows: list[dict[str, Any]], baseline: str = "baseline",
                     naive: str = "naive") -> list[dict[str, Any]]:
    """Per dataset with both a `baseline` and a `naive` run: the oracle router, then every other
    system that decides (its rows record a decision) judged against "needed"."""
    by_system = group_rows(rows)
    table = []
    for dataset in dict.fromkeys(d for d, _ in by_system):
        base = _by_question(by_system.get((dataset, baseline), []))
        rag = _by_question(by_system.get((dataset, naive), []))
        needed = {q: total_score(rag[q]) > total_score(base[q]) for q in base.keys() & rag.keys()
                  if total_score(base[q]) is not None and total_score(rag[q]) is not None}
        if not needed:
            continue
        routed = [rag[q] if needed[q] else base[q] for q in needed]
        table.append({"dataset": dataset, "system": "oracle-router", "questions": len(needed),
                      "needed": sum(needed.values()), **_router_scores(routed)})
        for (d, system), group in by_system.items():
            if d != dataset or system in (baseline, naive) or not _decides(group):
                continue
            answers = _by_question(group)
            asked = [answers[q] for q in needed if q in answers and is_scored(answers[q])]
            table.append({"dataset": dataset, "system": system,
                          **_confusion(answers, needed), **_router_scores(asked)})
    return table


def _decides(group: list[dict[str, Any]]) -> bool:
    """A system that records retrieval decisions, or (an imported run) retrieved for some
    questions and not for others."""
    if any((row.get("details") or {}).get("decision") is not None for row in group):
        return True
    retrieving = sum(row["retrievals"] > 0 for row in group)
    return 0 < retrieving < len(group)


def _by_question(group: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["question_id"]: row for row in group}


def _router_scores(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tokens = [answer_tokens(row) for row in rows]
    return {"truthfulness": mean([row["grade"]["truthfulness"] for row in rows]),
            "relevance": mean([row["grade"]["relevance"] for row in rows]),
            "input_tokens": sum(t[0] for t in tokens), "output_tokens": sum(t[1] for t in tokens),
            "retrievals": sum(row["retrievals"] for row in rows)}


def _confusion(rows: dict[str, dict[str, Any]], needed: dict[str, bool]) -> dict[str, Any]:
    pairs = [(rows[q]["retrievals"] > 0, needed[q]) for q in needed if q in rows]
    tp = sum(r and n for r, n in pairs)
    fp = sum(r and not n for r, n in pairs)
    fn = sum(n and not r for r, n in pairs)
    tn = sum(not r and not n for r, n in pairs)
    return {"questions": len(pairs), "needed": tp + fn, "retrieved": tp + fp,
            "true_positive": tp, "false_positive": fp, "false_negative": fn, "true_negative": tn,
            "precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / (tp + fn), 4) if tp + fn else None}


# --------------------------------------------------------------------------- quality against cost


def quality_and_cost(rows: list[dict[str, Any]],
                     prices: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """Per (dataset, system): mean truthfulness + relevance, input tokens and dollars, and whether
    the system is on the Pareto front of its dataset (no other system scores at least as well
    for no more tokens / dollars, and better in one)."""
    table = []
    for (dataset, system), group in group_rows(rows).items():
        costs = [row_cost(row, prices) for row in group]
        unpriced = sorted({model for row, cost in zip(group, costs) if cost is None
                           for role, model in role_models(row).items()
                           if role != "judge" and model not in prices})
        scores = [total_score(row) for row in group if is_scored(row)]
        table.append({"dataset": dataset, "system": system, "score": mean(scores),
                      "input_tokens": sum(answer_tokens(row)[0] for row in group),
                      "cost_usd": None if None in costs else round(sum(costs), 6),
                      "unpriced_models": unpriced})
    for axis in ("input_tokens", "cost_usd"):
        for entry in table:
            entry[f"pareto_{axis}"] = _on_front(entry, table, axis)
    return table


def _on_front(entry: dict[str, Any], table: list[dict[str, Any]], axis: str) -> bool | None:
    if entry["score"] is None or entry[axis] is None:
        return None
    rivals = [other for other in table if other is not entry and other["dataset"] == entry["dataset"]
              and other["score"] is not None and other[axis] is not None]
    return not any(other[axis] <= entry[axis] and other["score"] >= entry["score"]
                   and (other[axis] < entry[axis] or other["score"] > entry["score"])
                   for other in rivals)


# --------------------------------------------------------------------------- uncertainty


def intervals(rows: list[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """Per (dataset, system): 95% intervals of mean truthfulness, relevance and their sum (over
    scored answers) and of total input and output tokens (over all answers)."""
    table = []
    for (dataset, system), group in group_rows(rows).items():
        scored = [row["grade"] for row in group if is_scored(row)]
        tokens = [answer_tokens(row) for row in group]
        entry: dict[str, Any] = {"dataset": dataset, "system": system}
        if scored:
            for name, values in (("truthfulness", [g["truthfulness"] for g in scored]),
                                 ("relevance", [g["relevance"] for g in scored]),
                                 ("score", [g["truthfulness"] + g["relevance"] for g in scored])):
                entry[name] = [mean(values), *bootstrap_interval(values, _mean_of, seed=seed)]
        for index, name in ((0, "input_tokens"), (1, "output_tokens")):
            values = [t[index] for t in tokens]
            entry[name] = [sum(values), *bootstrap_interval(values, sum, seed=seed)]
        table.append(entry)
    return table


def paired_comparisons(rows: list[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """Every pair of systems on the same dataset: mean difference in truthfulness + relevance over
    the questions both scored, its 95% paired-bootstrap interval, and a two-sided p-value (how
    often the resampled difference falls on the other side of zero, doubled)."""
    by_system = group_rows(rows)
    table = []
    keys = list(by_system)
    for i, (dataset, a) in enumerate(keys):
        for other_dataset, b in keys[i + 1:]:
            if other_dataset != dataset:
                continue
            first, second = _by_question(by_system[dataset, a]), _by_question(by_system[dataset, b])
            diffs = [total_score(first[q]) - total_score(second[q])
                     for q in first.keys() & second.keys()
                     if total_score(first[q]) is not None and total_score(second[q]) is not None]
            if len(diffs) < 2:
                continue
            diffs.sort()  # set order is arbitrary: fix it so that the seed fixes the result
            table.append({"dataset": dataset, "a": a, "b": b, "questions": len(diffs),
                          "mean_difference": mean(diffs),
                          "interval": list(bootstrap_interval(diffs, _mean_of, seed=seed)),
                          "p_value": _paired_p_value(diffs, seed)})
    return table


def _paired_p_value(diffs: list[float], seed: int, samples: int = BOOTSTRAP_SAMPLES) -> float:
    """Bootstrap under the null (differences centred on zero): share of resampled means at least
    as far from zero as the observed one."""
    observed = _mean_of(diffs)
    centred = [d - observed for d in diffs]
    rng = random.Random(seed)
    n = len(diffs)
    extreme = sum(abs(_mean_of(rng.choices(centred, k=n))) >= abs(observed)
                  for _ in range(samples))
    return round((extreme + 1) / (samples + 1), 4)


def _mean_of(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def analyse(rows: list[dict[str, Any]], prices: dict[str, tuple[float, float]] | None = None,
            seed: int = 0) -> dict[str, Any]:
    """Everything above, as written to analysis.json."""
    return {"retrieval": retrieval_quality(rows), "attribution": attributions(rows),
            "cost": quality_and_cost(rows, prices or {}),
            "decisions": decision_quality(rows), "intervals": intervals(rows, seed),
            "paired": paired_comparisons(rows, seed), "low_score": LOW_SCORE,
            "bootstrap_samples": BOOTSTRAP_SAMPLES, "confidence": CONFIDENCE}

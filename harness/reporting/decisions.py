"""Retrieval decisions against need known by construction (docs/traffic.md#what-the-report-adds):
questions carry `need` (fresh: true; control and general: false; builders/traffic/kinds.py),
so a decider is judged without inferring need from a baseline and a naive run.

- `decisions_by_kind`: per adaptive run identity and per traffic kind (and all kinds together):
  accuracy, precision, recall and F1 of "retrieved" against `need`, with 95% intervals (Wilson's
  for the three proportions, the percentile bootstrap for F1). Within one kind need is constant,
  so there precision or recall may be undefined (shown as missing), by construction.
- `threshold_sweep`: deciders that record a score (`confidence`: `p_retrieve`; `self-check`: its
  1-5 rating) decided again at every threshold from the recorded scores, no call made. Where a
  `baseline` and a `naive` run of the same models answered the same questions, the score and
  tokens each threshold would reach are estimated from them: a question the decider would
  retrieve for takes naive's grade and answer tokens, the others baseline's (the same requests
  when the decision and answer models are one), plus the decider's own decision tokens.
- `roc_curves`: ROC (with AUROC and its bootstrap interval) and the precision-recall curve (with
  average precision) of those scores against need.

Only answered (ok) rows with a known `need` count; a score the endpoint did not give (no logprobs,
an unusable rating) never retrieves, as in the system itself, and is counted as unavailable.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence, cast

from freshrag.core.samples import answer_tokens, is_scored
from freshrag.core.stats import bootstrap_interval, mean
from freshrag.core.summary import AnswerSummary
from freshrag.reporting.answers import Answers
from freshrag.reporting.identity import labels
from freshrag.reporting.outcomes import (
    decides,
    known_retrievals,
    references,
    total_score,
)

KIND_ORDER = ("fresh", "control", "general", "all")
Z = 1.959964  # the normal quantile of a two-sided 95% interval


class Sweep:
    """How a decider's recorded score becomes a decision at a threshold."""

    def __init__(self, field: str, rule: str, thresholds: Sequence[float],
                 retrieves: Callable[[float, float], bool], rank: Callable[[float], float],
                 answers_alone: bool):
        self.field, self.rule, self.thresholds = field, rule, thresholds
        self.retrieves, self.rank = retrieves, rank  # rank: higher means "retrieve" more
        self.answers_alone = answers_alone  # not retrieving, it answers with the answer role

    def value(self, answer: AnswerSummary) -> Any:
        """The answer's recorded score (core/summary.py DECIDED), None where it has none."""
        return getattr(answer, self.field)


SWEEPS = (
    Sweep("p_retrieve", "retrieve if p_retrieve >= threshold",
          [round(i / 10, 1) for i in range(11)], lambda v, t: v >= t, lambda v: v, True),
    Sweep("confidence", "retrieve if confidence < threshold", [1, 2, 3, 4, 5, 6],
          lambda v, t: v < t, lambda v: 6 - v, False),
)


def sweep_of(group: list[AnswerSummary]) -> Sweep | None:
    """The sweep for a decider whose rows record a score, None for others."""
    return next((s for s in SWEEPS if any(s.value(row) is not None for row in group)), None)


def known_need(group: list[AnswerSummary]) -> list[AnswerSummary]:
    return [row for row in group if row.status == "ok" and isinstance(row.need, bool)]


# --------------------------------------------------------------------------- per kind


def decisions_by_kind(answers: Answers, seed: int = 0) -> list[dict[str, Any]]:
    table = []
    for key, group in answers.groups().items():
        judged = known_need(group)
        if not judged or not decides(group):
            continue
        for kind in KIND_ORDER:
            mine = judged if kind == "all" else [r for r in judged if r.kind == kind]
            if mine:
                pairs = [((row.retrievals or 0) > 0, row.need is True)
                         for row in known_retrievals(mine)]
                table.append({**key.fields(), "kind": kind, **metrics(pairs, seed)})
    return table


def metrics(pairs: list[tuple[bool, bool]], seed: int = 0, intervals: bool = True) -> dict[str, Any]:
    """Accuracy, precision, recall and F1 of (retrieved, needed) pairs; undefined ones None."""
    tp = sum(r and n for r, n in pairs)
    fp = sum(r and not n for r, n in pairs)
    fn = sum(n and not r for r, n in pairs)

    def shown(k: int, n: int) -> list[float] | float | None:
        if intervals:
            return wilson(k, n)
        return round(k / n, 4) if n else None

    f1: list[float] | float | None = _f1(pairs)
    if intervals and isinstance(f1, float):
        low, high = bootstrap_interval(pairs, lambda s: _f1(s) or 0.0, seed=seed)
        f1 = [f1, low, high]
    return {"questions": len(pairs), "needed": tp + fn, "retrieved": tp + fp,
            "accuracy": shown(len(pairs) - fp - fn, len(pairs)), "precision": shown(tp, tp + fp),
            "recall": shown(tp, tp + fn), "f1": f1}


def wilson(k: int, n: int) -> list[float] | None:
    """[k/n, low, high]: the proportion with its 95% Wilson score interval (None for n = 0)."""
    if not n:
        return None
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return [round(p, 4), round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def _f1(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    tp = sum(r and n for r, n in pairs)
    wrong = sum(r != n for r, n in pairs)
    return round(2 * tp / (2 * tp + wrong), 4) if tp + wrong else None


# --------------------------------------------------------------------------- thresholds


def threshold_sweep(answers: Answers) -> list[dict[str, Any]]:
    groups = answers.groups()
    table = []
    for key, group in groups.items():
        sweep = sweep_of(group)
        judged = known_need(group)
        if sweep is None or not judged:
            continue
        refs = references(groups, key)
        current = {row.threshold for row in judged}
        for threshold in sweep.thresholds:
            decided = [(_retrieves(sweep, row, threshold), row) for row in judged]
            entry = {**key.fields(), "rule": sweep.rule, "threshold": threshold,
                     "current": threshold in current,
                     **metrics([(r, row.need is True) for r, row in decided], intervals=False)}
            if refs:
                entry.update(_estimate(sweep, decided, *refs))
            table.append(entry)
    return table


def _retrieves(sweep: Sweep, row: AnswerSummary, threshold: float) -> bool:
    value = sweep.value(row)
    return value is not None and sweep.retrieves(value, threshold)


def _estimate(sweep: Sweep, decided: list[tuple[bool, AnswerSummary]], base: dict[str, AnswerSummary],
              rag: dict[str, AnswerSummary]) -> dict[str, Any]:
    """Mean truthfulness + relevance and tokens per question this threshold would reach."""
    scores, tokens = [], []
    for retrieves, row in decided:
        q = row.question_id
        if q not in base or q not in rag or not (is_scored(base[q]) and is_scored(rag[q])):
            continue
        used = rag[q] if retrieves else base[q]
        scores.append(cast(float, total_score(used)))  # scored, both
        decision = row.usage.get("decision")
        answered = sum(answer_tokens(used)) if retrieves or sweep.answers_alone else 0
        tokens.append((decision.input + decision.output if decision else 0) + answered)
    if not scores:
        return {}
    return {"estimated_score": mean(scores, places=4),
            "estimated_tokens_per_question": round(sum(tokens) / len(tokens), 1),
            "estimated_from": len(scores)}


# --------------------------------------------------------------------------- ROC


def roc_curves(answers: Answers, seed: int = 0) -> list[dict[str, Any]]:
    """Per decider that records a score: its ROC and precision-recall points, AUROC with a
    bootstrap interval, average precision; None where need takes one value only."""
    groups = answers.groups()
    table = []
    for key, group in groups.items():
        sweep = sweep_of(group)
        if sweep is None:
            continue
        judged = known_need(group)
        scored = [(sweep.rank(v), row.need is True) for row in judged
                  if (v := sweep.value(row)) is not None]
        entry = {**key.fields(), "questions": len(judged),
                 "unavailable": len(judged) - len(scored), "needed": sum(n for _, n in scored)}
        if 0 < entry["needed"] < len(scored):
            auc = auroc(scored)
            entry.update({
                "auroc": [auc, *bootstrap_interval(scored, _auroc_or_half, seed=seed)],
                "average_precision": average_precision(scored),
                "roc": roc_points(scored), "pr": pr_points(scored)})
        else:
            entry.update({"auroc": None, "average_precision": None, "roc": [], "pr": [],
                          "why": "need takes one value only among the scored questions"})
        table.append(entry)
    return table


def auroc(scored: Sequence[tuple[float, bool]]) -> float:
    """The probability that a needing question outranks a not-needing one (ties count half):
    the Mann-Whitney statistic from average ranks, n log n rather than every pair (the
    bootstrap computes it 2,000 times)."""
    ordered = sorted(scored, key=lambda item: item[0])
    positive_ranks, start = 0.0, 0
    while start < len(ordered):
        end = start
        while end < len(ordered) and ordered[end][0] == ordered[start][0]:
            end += 1
        positive_ranks += (start + 1 + end) / 2 * sum(n for _, n in ordered[start:end])
        start = end
    positives = sum(n for _, n in scored)
    negatives = len(scored) - positives
    return round((positive_ranks - positives * (positives + 1) / 2) / (positives * negatives), 4)


def _auroc_or_half(sample: Sequence[tuple[float, bool]]) -> float:
    """AUROC of a bootstrap sample; one with a single class carries no ranking (0.5)."""
    needs = {n for _, n in sample}
    return auroc(sample) if len(needs) == 2 else 0.5


def _cuts(scored: Sequence[tuple[float, bool]]) -> list[tuple[int, int]]:
    """(true positives, false positives) when retrieving at or above each distinct score,
    highest first."""
    points, tp, fp = [], 0, 0
    for value in sorted({s for s, _ in scored}, reverse=True):
        tp += sum(1 for s, n in scored if s == value and n)
        fp += sum(1 for s, n in scored if s == value and not n)
        points.append((tp, fp))
    return points


def roc_points(scored: Sequence[tuple[float, bool]]) -> list[list[float]]:
    """[false positive rate, true positive rate] from (0, 0) to (1, 1)."""
    positives = sum(n for _, n in scored)
    negatives = len(scored) - positives
    return [[0.0, 0.0]] + [[round(fp / negatives, 4), round(tp / positives, 4)]
                           for tp, fp in _cuts(scored)]


def pr_points(scored: Sequence[tuple[float, bool]]) -> list[list[float]]:
    """[recall, precision] at each distinct score, highest first."""
    positives = sum(n for _, n in scored)
    return [[round(tp / positives, 4), round(tp / (tp + fp), 4)] for tp, fp in _cuts(scored)]


def average_precision(scored: Sequence[tuple[float, bool]]) -> float:
    """Precision averaged over the recall steps (the area under the step PR curve)."""
    positives = sum(n for _, n in scored)
    total, recall_before = 0.0, 0.0
    for tp, fp in _cuts(scored):
        total += (tp / positives - recall_before) * tp / (tp + fp)
        recall_before = tp / positives
    return round(total, 4)


def analyse(answers: Answers, seed: int = 0) -> dict[str, Any]:
    """The three tables, as analysis.json holds them, and notes on what could not be judged."""
    groups = answers.groups()
    names = labels(groups)
    notes = [f"{key.dataset} / {names[key]}: decisions not judged against need by construction: "
             f"its questions carry no `need`" for key, group in groups.items()
             if decides(group) and not known_need(group)]
    return {"decisions_by_kind": decisions_by_kind(answers, seed),
            "thresholds": threshold_sweep(answers), "roc": roc_curves(answers, seed),
            "decision_notes": notes}

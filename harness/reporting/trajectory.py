"""What each step of an answer costs and earns, from its trajectory (`steps`,
docs/run-format.md#steps) and its grade; no call is made (docs/reports.md#trajectories).

Per answer (`answer_figures`, analysis.json `trajectory_by_answer`):

- `searches`, `repeated`: its search steps, and those whose query an earlier search asked;
- `evidence_any`, `evidence_all`: whether any / every gold article was among the chunks of its
  whole trajectory: retrieval_metrics' `recall_any_traj` and `recall_all_traj`, computed there by
  trec_eval's code (an answer that searched nothing found nothing: 0; the oracle's read step is
  no search);
- `first_gold_step`, `last_gold_step`: the 1-based place in `steps` of the search that first
  returned a gold article, and of the one that completed the gold set (null while a gold article
  is still missing);
- `wasted_steps`: the steps after the gold set was complete, answer steps aside (an agent must
  still answer): searches and reasoning that could add nothing;
- `stopped`, `correct` (truthfulness >= CORRECT_AT), `tokens` (every role but the judge) and
  `cost_usd` (prices.py; null when a model has no price).

A row without steps (written before them, or a system outside freshrag that gave none) has null
for every step figure, never 0; its evidence comes from the chunks it saw when it says which, as
in the retrieval table. A question without a gold set (a general query) has null evidence and
gold steps.

Per run identity (`analyse`, the table `trajectory`): the means of those figures over
the answered pairs that have them, the searches' quantiles and histogram, answers stopped, and
`per_correct`: tokens and dollars per correct answer (the answered pairs' totals over their
correct answers) and correct answers per search (over the answers that recorded their steps).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from freshrag.core.samples import answer_tokens, judge_scores
from freshrag.core.stats import mean
from freshrag.core.summary import AnswerSummary, Trajectory
from freshrag.reporting.answers import Answers
from freshrag.reporting.outcomes import CORRECT_AT, answered_well, hops, unreported
from freshrag.reporting.prices import row_cost
from freshrag.reporting.retrieval_metrics import (
    Metrics,
    gold_set,
    row_metrics,
)

Prices = dict[str, tuple[float, float]]
STEP_FIGURES = ("searches", "repeated", "first_gold_step", "last_gold_step", "wasted_steps")
MEANS = ("evidence_any", "evidence_all", "first_gold_step", "last_gold_step", "wasted_steps")


def gold_found(steps: Trajectory, gold: Sequence[str]) -> dict[str, int]:
    """Each gold article a search step returned, with the 1-based place in `steps` of the
    search that first returned it (every kind of step counted), in the order found: what the
    viewer marks on an answer's timeline."""
    first: dict[str, int] = {}
    wanted = set(gold)
    for place, titles in steps.searched():
        for title in titles:
            if title in wanted:
                first.setdefault(title, place)
    return first


def gold_steps(steps: Trajectory, gold: Sequence[str]) -> tuple[int | None, int | None]:
    """The 1-based place of the search step that first returned a gold article, and of the one
    after which every gold article had been returned (None: not yet)."""
    found = gold_found(steps, gold).values()
    return (min(found, default=None),
            max(found) if found and len(found) == len(set(gold)) else None)


def step_figures(row: AnswerSummary) -> dict[str, Any]:
    """STEP_FIGURES of one answer; all None when it recorded no steps."""
    steps = row.steps
    if not steps:
        return dict.fromkeys(STEP_FIGURES)
    gold = gold_set(row)
    first, last = gold_steps(steps, gold) if gold else (None, None)
    wasted = None if last is None else sum(step.kind != "answer" for step in steps[last:])
    return {"searches": steps.searches, "repeated": steps.repeated,
            "first_gold_step": first, "last_gold_step": last, "wasted_steps": wasted}


def evidence(metrics: list[Metrics | None]) -> list[tuple[float, float] | None]:
    """Per row of `metrics` (retrieval_metrics `row_metrics`), (any, all) gold articles found
    over its trajectory; None where it has no gold set or says nothing of what it retrieved
    (no steps, no retrieved chunks)."""
    return [None if values is None else (values["recall_any_traj"], values["recall_all_traj"])
            for values in metrics]


def answer_figures(rows: list[AnswerSummary], prices: Prices | None = None,
                   correct_at: int = CORRECT_AT,
                   costs: list[float | None] | None = None,
                   metrics: list[Metrics | None] | None = None) -> list[dict[str, Any]]:
    """Every answered pair's figures (module docstring), in the rows' order; `costs`: the
    answered pairs' dollars (`answer_costs`), `metrics`: the rows' retrieval metrics
    (`row_metrics`, evaluated once with the retrieval table's), where the caller has them."""
    table = []
    costs = answer_costs(rows, prices) if costs is None else costs
    seen_of = evidence(row_metrics(rows) if metrics is None else metrics)
    answered = [(row, seen) for row, seen in zip(rows, seen_of) if row.status == "ok"]
    for (row, seen), cost in zip(answered, costs):
        table.append({
            "dataset": row.dataset, "system": row.system,
            "question_id": row.question_id, "hops": hops(row), **step_figures(row),
            "evidence_any": None if seen is None else seen[0],
            "evidence_all": None if seen is None else seen[1],
            "stopped": row.stopped,
            "correct": answered_well(row, correct_at) if judge_scores(row) else None,
            "tokens": sum(answer_tokens(row)), "cost_usd": _rounded(cost)})
    return table


def answer_costs(rows: list[AnswerSummary], prices: Prices | None = None) -> list[float | None]:
    """The dollars of each answered pair (prices.py row_cost), in the rows' order."""
    return [row_cost(row, prices or {}) for row in rows if row.status == "ok"]


def per_correct(rows: list[AnswerSummary], prices: Prices | None = None,
                correct_at: int = CORRECT_AT,
                costs: list[float | None] | None = None) -> dict[str, Any]:
    """`correct` answers, `tokens_per_correct` and `cost_per_correct` (the answered pairs'
    tokens and dollars over their correct answers: null with none correct, with tokens a
    system did not report, or with a model that has no price), `correct_per_search` (over the
    answers that recorded their steps; null when they made no search)."""
    answered = [row for row in rows if row.status == "ok"]
    correct = sum(answered_well(row, correct_at) for row in answered)
    costs = answer_costs(rows, prices) if costs is None else costs
    unknown = unreported(rows, "input_tokens") or unreported(rows, "output_tokens")
    traced = [(row, row.steps) for row in answered if row.steps]
    made = sum(steps.searches for _, steps in traced)
    return {"correct": correct,
            "tokens_per_correct": None if unknown or not correct else round(
                sum(sum(answer_tokens(row)) for row in answered) / correct, 1),
            "cost_per_correct": None if unknown or not correct or None in costs or not costs
            else _rounded(sum(c for c in costs if c is not None) / correct),
            "correct_per_search": round(sum(answered_well(row, correct_at) for row, _ in traced)
                                        / made, 4) if made else None}


def analyse(answers: Answers, prices: Prices | None = None,
            correct_at: int = CORRECT_AT) -> dict[str, list[dict[str, Any]]]:
    """`trajectory`: per run identity with an answered pair that recorded its steps, the means,
    quantiles and counts of the module docstring; `trajectory_by_answer`: the figures of every
    answered pair that recorded its steps. Each answer's figures are computed once."""
    table, by_answer = [], []
    for key, group in answers.groups().items():
        costs = answer_costs(group, prices)  # each answer priced once
        figures = answer_figures(group, prices, correct_at, costs, answers.metrics(key))
        traced = [f for f in figures if f["searches"] is not None]
        if not traced:
            continue
        by_answer += traced
        made = sorted(f["searches"] for f in traced)
        table.append({
            **key.fields(), "answers": len(figures), "traced": len(traced),
            "searches": mean(made, places=4), "searches_p50": quantile(made, 50),
            "searches_p90": quantile(made, 90), "searches_max": made[-1],
            "searches_histogram": [made.count(n) for n in range(made[-1] + 1)],
            "repeated": mean([f["repeated"] for f in traced], places=4),
            **{name: mean([f[name] for f in figures if f[name] is not None], places=4)
               for name in MEANS},
            "stopped": sum(f["stopped"] is not None for f in figures),
            **per_correct(group, prices, correct_at, costs)})
    return {"trajectory": table, "trajectory_by_answer": by_answer}


def quantile(ordered: Sequence[int], q: int) -> int:
    """The `q`th percentile of sorted values, nearest rank."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _rounded(dollars: float | None) -> float | None:
    return None if dollars is None else round(dollars, 8)

"""The summary table, in the shape of the paper's Tables II and III, recomputed from samples.jsonl.

One row per run identity (harness/reporting/identity.py: dataset, system, the model of every role, and the
run directory, which is shown only when two rows would otherwise look alike), with:

- `n`, `scored`, `unscored` (failed pairs included);
- mean `truthfulness` and `relevance` over the scored answers;
- `input_tokens`, `output_tokens`: what the answered (ok) pairs spent, every role but the judge,
  as in the paper (the judge's cost is in the token chart by role);
- `retrievals`, and `no_decision`: answers an adaptive system gave with no usable retrieval
  decision (no tool call or unparseable arguments);
- `failed` (pairs that ended in an error), and `failed_input_tokens`, `failed_output_tokens`:
  what they spent before failing (every role but the judge), counted apart so that the answered
  pairs' figures are never inflated by failures;
- `tokens_per_correct`, `cost_per_correct`: the answered pairs' tokens and dollars (every role
  but the judge; dollars from the report's prices, null when a model has none) over their
  correct answers (truthfulness >= 4, `--correct-at`), and `correct_per_search` over the answers
  that recorded their steps (harness/reporting/trajectory.py);
- `searches_per_answer`, `repeated_search_share`, `stopped_max_steps`, `stopped_budget`: from
  the answers' trajectories (`steps`, docs/run-format.md#steps): search steps per answered pair
  that recorded its steps, the share of those searches that repeat an earlier query of the same
  answer (null when none was made or none recorded), answers an agent stopped, by reason;
- `models`: role -> model (shown as `answer, decision: m1; judge: m2`), and `run` when needed.

Unscored answers are counted, never averaged in; the pairs without a grade are counted by
reason (`unscored_reasons`). The table is rendered and written by harness/reporting/report.py.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from freshrag.core.arguments import check_arguments
from freshrag.core.samples import is_scored, judge_scores
from freshrag.core.stats import mean
from freshrag.core.summary import AnswerSummary
from freshrag.core.types import STOPS
from freshrag.reporting.identity import group_rows, labels
from freshrag.reporting.loading import READING
from freshrag.reporting.outcomes import CORRECT_AT, retrievals, spent, unreported
from freshrag.reporting.trajectory import Prices, per_correct

COLUMNS = ("dataset", "system", "n", "scored", "unscored", "truthfulness", "relevance",
           "input_tokens", "output_tokens", "retrievals", "no_decision", "failed",
           "failed_input_tokens", "failed_output_tokens", "searches_per_answer",
           "repeated_search_share", *(f"stopped_{reason}" for reason in STOPS),
           "tokens_per_correct", "cost_per_correct", "correct_per_search", "models")


def summarise(answers: list[AnswerSummary], prices: Prices | None = None,
              correct_at: int = CORRECT_AT) -> list[dict[str, Any]]:
    """One row per run identity (module docstring) of the answers' summaries
    (loading.load_summaries); dollars from `prices`, none: null."""
    check_arguments({"answers": answers, "prices": prices, "correct_at": correct_at}, READING)
    return [_summary_row(key.fields(), group, prices, correct_at)
            for key, group in group_rows(answers).items()]


def _summary_row(identity: dict[str, Any], rows: list[AnswerSummary], prices: Prices | None,
                 correct_at: int) -> dict[str, Any]:
    cost = per_correct(rows, prices, correct_at)
    scored = [scores for row in rows if (scores := judge_scores(row)) is not None]
    (ok_in, ok_out), (failed_in, failed_out) = spent(rows), spent(rows, "failed")
    return {
        "dataset": identity["dataset"], "system": identity["system"], "n": len(rows),
        "scored": len(scored), "unscored": len(rows) - len(scored),
        "truthfulness": mean([g["truthfulness"] for g in scored], places=4),
        "relevance": mean([g["relevance"] for g in scored], places=4),
        "input_tokens": None if unreported(rows, "input_tokens") else ok_in,
        "output_tokens": None if unreported(rows, "output_tokens") else ok_out,
        "retrievals": retrievals(rows),
        "no_decision": sum(row.decision == "none" for row in rows),
        "failed": sum(row.status == "failed" for row in rows),
        "failed_input_tokens": failed_in, "failed_output_tokens": failed_out,
        **_trajectory_columns(rows),
        **{name: cost[name] for name in ("tokens_per_correct", "cost_per_correct",
                                         "correct_per_search")},
        **{k: v for k, v in identity.items() if k not in ("dataset", "system")},
    }


def _trajectory_columns(rows: list[AnswerSummary]) -> dict[str, Any]:
    """What the answers' steps say of an identity: searches per answered pair that recorded its
    steps (rows written before steps existed, and a system outside freshrag that reported none,
    have none: unknown, not 0), the share of them repeated, and the answers stopped by reason."""
    traced = [row.steps for row in rows if row.status == "ok" and row.steps]
    made = [steps.searches for steps in traced]
    repeated = sum(steps.repeated for steps in traced)
    return {
        "searches_per_answer": mean(made, places=4),
        # the mean of a flag per search, counted: the same figure (sums of 0s and 1s are exact)
        "repeated_search_share": round(repeated / sum(made), 4) if sum(made) else None,
        **{f"stopped_{reason}": sum(row.stopped == reason for row in rows)
           for reason in STOPS},
    }


def unscored_reasons(rows: list[AnswerSummary]) -> tuple[Counter, Counter]:
    """The pairs without a grade, as two counts of (label, reason): the answers the judge did
    not score (why not), and the pairs that failed, answer or judge call (their error); the
    label names the run identity (harness/reporting/identity.py). Both are `unscored` in the
    summary, but a failed pair is never said to be an unscored answer."""
    unscored: Counter = Counter()
    failed: Counter = Counter()
    groups = group_rows(rows)
    names = labels(groups)
    for key, group in groups.items():
        for row in group:
            if is_scored(row):
                continue
            if row.status == "failed":
                failed[(names[key], row.error or "none recorded")] += 1
            else:
                grade = row.grade
                unscored[(names[key], (grade.unscored_reason if grade else None)
                          or "not graded")] += 1
    return unscored, failed

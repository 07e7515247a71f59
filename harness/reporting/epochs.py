"""The report's Epochs section (docs/reports.md#epochs): how far a system's grades and answers
move between the epochs of `freshrag run --epochs N` (docs/running.md#epochs), where nothing but
chance changed. Every other table reads the first epoch alone (`first_epoch`, once, where the
report loads its rows); this one reads them all.

Per run identity (harness/reporting/identity.py) with a question of more than one epoch, over its
questions with at least two scored epochs: the mean truthfulness and relevance of every scored
epoch, the mean over questions of their standard deviation across epochs, and three shares with
their 95% bootstrap intervals (core/stats.py): `judge_flips`, the questions whose truthfulness
grade differs between epochs; `answer_changed`, those whose answer text differs; and
`flips_same_answer`, the flips among the questions whose answer stayed the same, which only the
judge can have made.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from freshrag.core.records import SampleRow
from freshrag.core.samples import epoch_of, judge_scores
from freshrag.core.stats import bootstrap_interval, mean
from freshrag.reporting.identity import group_rows
from freshrag.reporting.report import columns_for, markdown_table

KEY = "epochs"  # in analysis.json
TITLE = ("Epochs: each pair asked again (--epochs); means and standard deviations across epochs, "
         "shares of questions whose truthfulness grade (judge_flips) or answer text changed, "
         "and the flips where the answer did not (95% intervals)")
COLUMNS = ("dataset", "system", "questions", "epochs", "truthfulness", "relevance",
           "sd_truthfulness", "sd_relevance", "judge_flips", "answer_changed", "flips_same_answer",
           "models")
FIELDS = ("truthfulness", "relevance")


def first_epoch(rows: list[SampleRow]) -> list[SampleRow]:
    """The rows of the first epoch: what every table but this section reads, one row per
    question and system."""
    return [row for row in rows if epoch_of(row) == 1]


def epoch_table(rows: list[SampleRow], seed: int = 0) -> list[dict[str, Any]]:
    """A row per identity whose rows (of every epoch) hold a question of more than one epoch;
    none when no run asked anything twice."""
    table = []
    for key, group in group_rows(rows).items():
        by_question: dict[str, list[SampleRow]] = defaultdict(list)
        for row in group:
            by_question[row["question_id"]].append(row)
        if max(len(asked) for asked in by_question.values()) > 1:
            table.append({**key.fields(), "epochs": max(epoch_of(row) for row in group),
                          **_spread(list(by_question.values()), seed)})
    return table


def _spread(questions: list[list[SampleRow]], seed: int) -> dict[str, Any]:
    """The figures over the questions with two scored epochs or more (module docstring)."""
    graded = [[(scores, row.get("answer")) for row in asked
               if (scores := judge_scores(row)) is not None] for asked in questions]
    graded = [epochs for epochs in graded if len(epochs) > 1]
    flips = [len({scores["truthfulness"] for scores, _ in epochs}) > 1 for epochs in graded]
    changed = [len({answer for _, answer in epochs}) > 1 for epochs in graded]
    spread: dict[str, Any] = {"questions": len(graded)}
    for field in FIELDS:
        spread[field] = mean([scores[field] for epochs in graded for scores, _ in epochs],
                             places=4)
        spread[f"sd_{field}"] = mean([statistics.stdev(scores[field] for scores, _ in epochs)
                                      for epochs in graded], places=4)
    spread["judge_flips"] = _share(flips, seed)
    spread["answer_changed"] = _share(changed, seed)
    spread["flips_same_answer"] = _share(
        [flip for flip, change in zip(flips, changed) if not change], seed)
    return spread


def _share(flags: list[bool], seed: int) -> list[float] | None:
    """[share, low, high]: the share of `flags` set, with its 95% bootstrap interval; None for
    no flags."""
    if not flags:
        return None
    values = [float(flag) for flag in flags]
    return [round(sum(values) / len(values), 4), *bootstrap_interval(values, mean, seed=seed)]


def render(details: dict[str, Any]) -> str:
    """The section as markdown, or "" when the report has no row of it."""
    table = details.get(KEY) or []
    if not table:
        return ""
    return f"### {TITLE}\n\n" + markdown_table(table, columns_for(COLUMNS, table))

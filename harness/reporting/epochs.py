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

`freshrag run`'s closing summary prints the same section (`section`), and the commands that read
the first epoch alone (export, score, gate, agreement) say so in one line (`first_epoch_note`)
when a run of theirs holds more, found by `highest_epoch` without reading the rows.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence, cast

from freshrag.core.jsonl import loads
from freshrag.core.records import SampleRow
from freshrag.core.row_check import sample_problem
from freshrag.core.samples import SAMPLES, epoch_of, judge_scores
from freshrag.core.stats import bootstrap_interval, mean
from freshrag.core.summary import AnswerSummary
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
# An `epoch` key in a row's line: JSON escapes a quote inside a string, so only a key matches
EPOCH_KEY = re.compile(rb'"epoch"\s*:\s*(\d{1,3})\b')


def first_epoch(rows: list[AnswerSummary]) -> list[AnswerSummary]:
    """The rows of the first epoch: what every table but this section reads, one row per
    question and system."""
    return [row for row in rows if row.epoch == 1]


def epoch_table(rows: list[AnswerSummary], seed: int = 0) -> list[dict[str, Any]]:
    """A row per identity whose rows (of every epoch) hold a question of more than one epoch;
    none when no run asked anything twice."""
    table = []
    for key, group in group_rows(rows).items():
        by_question: dict[str, list[AnswerSummary]] = defaultdict(list)
        for row in group:
            by_question[row.question_id].append(row)
        if max(len(asked) for asked in by_question.values()) > 1:
            table.append({**key.fields(), "epochs": max(row.epoch for row in group),
                          **_spread(list(by_question.values()), seed)})
    return table


def _spread(questions: list[list[AnswerSummary]], seed: int) -> dict[str, Any]:
    """The figures over the questions with two scored epochs or more (module docstring)."""
    graded = [[(scores, row.answer) for row in asked
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


def section(rows: list[AnswerSummary], seed: int = 0) -> str:
    """The section as markdown from rows of every epoch (`freshrag run`'s closing summary), ""
    when no question was asked twice."""
    return render({KEY: epoch_table(rows, seed)})


def highest_epoch(run_dir: Path) -> int:
    """The highest epoch among the rows of `run_dir` (1: a run of one epoch, whose rows name
    none), without reading the rows: a line is parsed only when it names an epoch above the
    highest so far, to check that the epoch is the row's own field."""
    highest = 1
    path = Path(run_dir) / SAMPLES
    if not path.is_file():
        return highest
    with path.open("rb") as lines:
        for line in lines:
            named = [int(found) for found in EPOCH_KEY.findall(line)]
            if named and max(named) > highest:
                highest = max(highest, _row_epoch(line))
    return highest


def _row_epoch(line: bytes) -> int:
    """The epoch of the row on `line`, 1 when it has none or is no row the readers keep."""
    try:
        row = loads(line)
    except (ValueError, RecursionError):
        return 1
    if not isinstance(row, dict) or sample_problem(row) is not None:
        return 1  # skipped by the readers (core/samples.py read_samples)
    return epoch_of(cast(SampleRow, row))


def first_epoch_note(run_dirs: Sequence[Path], reads: str) -> str | None:
    """One line saying that `reads` (e.g. "export writes the answers of") the first epoch only,
    when a run of `run_dirs` holds more (docs/running.md#epochs); None when none does."""
    several = {str(run_dir): epochs for run_dir in dict.fromkeys(run_dirs)
               if (epochs := highest_epoch(run_dir)) > 1}
    if not several:
        return None
    held = ", ".join(f"{name} holds {epochs}" for name, epochs in several.items())
    return (f"note: {held} epochs (--epochs); {reads} epoch 1 only, as every table of the "
            f"report does (`freshrag report` shows the spread across epochs)")

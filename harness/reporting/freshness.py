"""How much of a question set the answer model already knows
(docs/reports.md#what-the-model-already-knows).

For every run identity of the `baseline` system (harness/reporting/identity.py), which answers
with no retrieval: how many of its graded questions the answer model answered well from memory
(truthfulness at least KNOWN_AT), as a count and a share with its 95% Wilson interval. Those
questions are not fresh for that model; `freshrag filter` (builders/measured.py) writes the set
without them. Unscored and failed answers are left out of the share, and counted.
"""

from __future__ import annotations

from typing import Any, Callable

from freshrag.builders.measured import KNOWN_AT, SYSTEM
from freshrag.core.samples import judge_scores
from freshrag.core.summary import AnswerSummary
from freshrag.reporting.decisions import wilson
from freshrag.reporting.identity import group_rows, labels

NOTE = ("Questions known without retrieval are not fresh for that model: it answers them from "
        "memory. `freshrag filter` writes the set without them.")


def known_without_retrieval(rows: list[AnswerSummary]) -> list[dict[str, Any]]:
    """One row per baseline identity with a graded answer: `questions` graded, `known` of them,
    `share` [k/n, low, high], `ungraded` (unscored or failed), `known_at`, and its identity."""
    groups = {key: group for key, group in group_rows(rows).items() if key.system == SYSTEM}
    names = labels(groups)
    table = []
    for key, group in groups.items():
        graded = [scores["truthfulness"] for row in group
                  if (scores := judge_scores(row)) is not None]
        if not graded:
            continue
        known = sum(truth >= KNOWN_AT for truth in graded)
        table.append({**key.fields(), "label": names[key], "questions": len(graded),
                      "known": known, "share": wilson(known, len(graded)),
                      "ungraded": len(group) - len(graded), "known_at": KNOWN_AT})
    return table


def known_lines(table: list[dict[str, Any]], shown: Callable[[Any], str] = str) -> list[str]:
    """The report's lines: one per baseline identity, then NOTE; none without a graded baseline.
    `shown` writes each name (dataset, model, label): tables.cell for markdown, which escapes
    it; the HTML page escapes the whole line its own way."""
    lines = []
    for row in table:
        answerer = shown(row["models"].get("answer", "the answer model"))
        share, low, high = (f"{value:.1%}" for value in row["share"])
        ungraded = f"; {row['ungraded']:,} ungraded left out" if row["ungraded"] else ""
        rule = f"{shown(row['label'])}, truthfulness >= {row['known_at']}"
        lines.append(f"Known without retrieval: {answerer} answers {row['known']:,} of "
                     f"{row['questions']:,} graded questions of {shown(row['dataset'])} well "
                     f"with no retrieval ({rule}): {share} [{low}, {high}], 95% "
                     f"interval{ungraded}.")
    return lines + [NOTE] if lines else []

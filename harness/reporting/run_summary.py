"""A run's summary (docs/run-format.md): summary.json and summary.md written into the run
directory from its rows, the systems in the order the run gave them, as `freshrag run` and
`freshrag.evaluate` both leave it; what the command prints of it comes back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from freshrag.reporting import epochs, loading, report, summary_table
from freshrag.reporting.freshness import known_without_retrieval

if TYPE_CHECKING:
    from freshrag.core.summary import AnswerSummary


@dataclass(frozen=True)
class RunSummary:
    """What a run's summary shows: the table as markdown, and the epochs' spread ("" with one)."""

    table: str
    spread: str


def write_run_summary(out: Path, answers: list[AnswerSummary],
                      systems: Sequence[str]) -> RunSummary:
    """summary.json and summary.md of the run in `out` from its first epoch's `answers`."""
    summary = summary_table.summarise(loading.in_systems_order(
        answers, systems, lambda answer: (answer.dataset, answer.system)))
    known = known_without_retrieval(answers)  # how much of the set the answer model knows
    # `answers` are the first epoch's; the spread needs every epoch's, read again if there are
    spread = epochs.section(loading.load_summaries(out, every_epoch=True)) \
        if epochs.highest_epoch(out) > 1 else ""
    report.write_summary(out, summary, known=known, more=spread)
    return RunSummary(report.render(summary, "markdown", known=known), spread)

"""The answers one report's tables read, and the work those tables share
(docs/design.md#the-read-side): made once per report (analysis.analyse) and handed to every
table explicitly, so that the rows are grouped by identity once and each identity's retrieval
metrics are evaluated once, with no cache keyed by a list's address.
"""

from __future__ import annotations

from freshrag.core.summary import AnswerSummary
from freshrag.reporting.identity import Identity, group_rows
from freshrag.reporting.retrieval_metrics import Metrics, row_metrics


class Answers:
    """A report's answers, as their summaries (core/summary.py, reporting/loading.py
    load_summaries), grouped by identity (identity.group_rows) on first asking, and each
    identity's retrieval metrics (retrieval_metrics.row_metrics) on first asking."""

    def __init__(self, rows: list[AnswerSummary]) -> None:
        self.rows = rows
        self._groups: dict[Identity, list[AnswerSummary]] | None = None
        self._metrics: dict[Identity, list[Metrics | None]] = {}

    def groups(self) -> dict[Identity, list[AnswerSummary]]:
        """Answers by identity, as a new dict of new lists: a table that changes what it was
        handed changes no other table's."""
        return {key: list(group) for key, group in self._grouped().items()}

    def metrics(self, key: Identity) -> list[Metrics | None]:
        """The retrieval metrics of each row of identity `key`, in its group's order."""
        if key not in self._metrics:
            self._metrics[key] = row_metrics(self._grouped()[key])
        return self._metrics[key]

    def forget_metrics(self) -> None:
        """Let the metrics go once every table that reads them is made: a dict per answer,
        some 50 MB at 100,000 answers, that the rest of a report never reads."""
        self._metrics.clear()

    def _grouped(self) -> dict[Identity, list[AnswerSummary]]:
        if self._groups is None:
            self._groups = group_rows(self.rows)
        return self._groups

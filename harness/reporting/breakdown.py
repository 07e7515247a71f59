"""Every table of `freshrag report` broken down by a question field: `--by label`,
`--by information_need`, or any other field a question set gives (harness/core/fields.py: `kind`,
`need`, `group`, `criterion`) (docs/methods.md#question-labels: recall and scores differ by label;
docs/methods.md#information-needs: which needs are hardest to serve).

The rows of each value's questions (those without a value form the `unlabelled` group) go
through the very functions of the whole report: the summary (`summary_table.summarise`: scores,
tokens, retrievals, decisions made, failures) and the analysis (`analysis.analyse`: means and
token totals with 95% bootstrap intervals, failure attribution, decisions against need, quality
against cost, paired comparisons), the retrieval table with a bootstrap interval on each of
its metrics as well. Where answers have staleness verdicts, the changed facts' two tables
(harness/reporting/staleness.py) follow, made from each value's rows alone and, as in the whole
report, there only with rows (`--by premise`: the questions presuming the value then apart from
the plain ones). Each row of each table starts with the field's value; everything else,
identities and like-with-like rules included, is the whole report's. A field no row carries
gives a note and no tables.
"""

from __future__ import annotations

from typing import Any

from freshrag.core import tables
from freshrag.core.fields import grouped
from freshrag.core.summary import AnswerSummary
from freshrag.reporting import analysis, report, sections, staleness, summary_table
from freshrag.reporting.answers import Answers
from freshrag.reporting.table import Table
from freshrag.reporting.table import tables as report_tables

# The broken-down tables, in the order the report prints them: the summary, then the analysis's
SUMMARY = Table("summary", "Scores, tokens and failures", summary_table.COLUMNS)


def broken_down() -> list[Table]:
    """The broken-down tables: the summary, then the analysis's (harness/reporting/table.py)."""
    return [SUMMARY, *report_tables()]


def changed_tables() -> list[Table]:
    """The changed facts' tables, broken down too but kept only where a group has rows."""
    return report_tables(staleness.SECTION)


def breakdown(rows: list[AnswerSummary], field: str, prices: dict[str, tuple[float, float]] | None = None,
              seed: int = 0) -> dict[str, Any]:
    """`{"field", "groups": {value: questions}, "tables": {key: rows}, "notes"}` (module
    docstring); every table row carries `field` first."""
    document: dict[str, Any] = {"field": field, "groups": {},
                                "tables": {table.key: [] for table in broken_down()}, "notes": []}
    if not any(getattr(row, field) is not None for row in rows):
        document["notes"].append(f"no question of these runs carries `{field}`: "
                                 f"nothing to break down")
        return document
    for value, subset in grouped(rows, field, lambda row, name: getattr(row, name)).items():
        document["groups"][value] = len({(r.dataset, r.question_id) for r in subset})
        details = analysis.analyse(subset, prices, seed)
        details["retrieval"] = analysis.retrieval_quality(Answers(subset), with_intervals=True,
                                                          seed=seed)
        details["summary"] = summary_table.summarise(subset)
        for table in broken_down():
            document["tables"][table.key] += [{field: value, **entry}
                                              for entry in details[table.key]]
        for table in changed_tables():  # details has them only where a row has a verdict
            if entries := details.get(table.key):
                document["tables"].setdefault(table.key, []).extend(
                    {field: value, **entry} for entry in entries)
        document["notes"] += [f"{field} {value}: {note}" for note in details["notes"]]
    return document


def render(document: dict[str, Any]) -> str:
    """The breakdown as markdown: its groups, then every table that has rows (the changed
    facts' with their note), one line naming those of the analysis that have none, then its
    notes."""
    field = document["field"]
    groups = ", ".join(f"{tables.cell(value)} ({n:,} questions)"  # the questions' own values
                       for value, n in document["groups"].items())
    parts = [f"## By {field}" + (f": {groups}" if groups else "")]
    for table in broken_down() + changed_tables():
        entries = document["tables"].get(table.key) or []
        if entries:
            heading = table.title.format(low_score=analysis.LOW_SCORE)
            parts.append(f"### {heading}, by {field}\n\n" + report.markdown_table(
                entries, report.columns_for((field, *table.columns), entries)))
    if any(document["tables"].get(table.key) for table in changed_tables()):
        parts.append(staleness.NOTE)
    if document["groups"] and (empty := sections.nothing_to_show(document["tables"],
                                                                     report_tables())):
        parts.append(empty)
    if document["notes"]:
        parts.append("### Notes\n\n" + "\n".join(f"- {note}" for note in document["notes"]))
    return "\n\n".join(parts)


def summary_tables(breakdowns: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """What summary.json keeps of each breakdown: its summary table."""
    return {field: document["tables"]["summary"] for field, document in breakdowns.items()}

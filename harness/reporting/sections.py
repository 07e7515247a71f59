"""The analysis as the printed report shows it (docs/reports.md#what-a-report-holds): its tables
in order (harness/reporting/table.py `tables`, which the HTML page shows too) as markdown
sections (`render_analysis`), and the line naming the tables that have no rows
(`nothing_to_show`).
"""

from __future__ import annotations

from typing import Any, Sequence

from freshrag.reporting.report import columns_for, markdown_table
from freshrag.reporting.table import Table, tables


def nothing_to_show(document: dict[str, Any], shown: Sequence[Table]) -> str:
    """One line naming the tables of `shown` that `document` has no row for, which the printed
    report leaves out; "" when every table has rows."""
    empty = [table.name for table in shown if not document.get(table.key)]
    return f"Nothing to show in: {', '.join(empty)}." if empty else ""


def render_analysis(analysis: dict[str, Any]) -> str:
    """The analysis (harness/reporting/analysis.py) as markdown sections, each table followed by
    its note if it has one, then the analysis's notes (what could not be compared, and why)."""
    sections = []
    for table in tables():
        rows = analysis.get(table.key) or []
        if rows:
            heading = table.title.format(low_score=analysis.get("low_score", "?"))
            note = f"\n\n{table.note_in(analysis)}" if table.note else ""
            sections.append(f"### {heading}\n\n"
                            + markdown_table(rows, columns_for(table.columns, rows)) + note)
    if analysis.get("notes"):
        sections.append("### Notes\n\n" + "\n".join(f"- {note}" for note in analysis["notes"]))
    return "\n\n".join(sections)

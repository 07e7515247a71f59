"""What each table of a report needs before it has rows (docs/reports.md#what-a-report-holds):
the printed report and the HTML page name every empty table with it, so that "Nothing to show"
says how to get something to show (each table's `needs`: harness/reporting/table.py)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from freshrag.reporting.table import Table


def needs(table: Table, name: str) -> str:
    """`name` (an empty table's short name) with what `table` needs."""
    return f"{name} (needs {table.needs})" if table.needs else name


def needs_lines(document: dict[str, Any], shown: Sequence[Table]) -> str:
    """Per table of `shown` that `document` has no row for, what it needs, by the name the
    line of empty tables calls it, wrapped to 80 columns."""
    return "\n".join(textwrap.fill(
        f"{table.name}: needs {table.needs}", 80, initial_indent="  ",
        subsequent_indent="    ", break_on_hyphens=False)
        for table in shown if not document.get(table.key) and table.needs)

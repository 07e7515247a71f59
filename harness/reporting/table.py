"""A table of a report as one object, and the one registry of them (docs/reports.md#your-own-table):
its key in analysis.json, its title, its columns, what the line of empty tables calls it, what it
needs before it has rows, and, for a user's table, how its rows are made from the answers. The
printed report, the HTML page, the breakdowns and analysis.json all read `tables()`.

The built-ins are declared in harness/reporting/table_list.py (their rows are made together by
harness/reporting/analysis.py, which shares the work between them); a user's table plugs in by an
entry point in the group `freshrag.tables`, like a scorer:

    [project.entry-points."freshrag.tables"]
    long_answers = "mypkg.tables:LONG_ANSWERS"   # a Table whose `compute` makes its rows
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any, Callable, Literal

from freshrag.core.plugins import PluginError
from freshrag.core.registry import Registry
from freshrag.core.summary import AnswerSummary

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class Table:
    """One table of a report. `title` may name `{low_score}` or `{correct_at}`, filled from the
    analysis, and an analysis table's `note` `{correct_at}`; `run` (and `against`,
    `batch_calls`) join `columns` where the rows carry them."""

    key: str  # its key in analysis.json; a user's table: its entry point's name
    title: str
    columns: tuple[str, ...]
    short: str = ""  # what the line of empty tables calls it (default: the key, in words)
    needs: str | None = None  # what it needs before it has rows
    # printed after the analysis, or the scorers; "changed": its own section, shown only with
    # rows (harness/reporting/staleness.py)
    section: Literal["analysis", "scorers", "changed"] = "analysis"
    page_columns: tuple[str, ...] | None = None  # the HTML page's, where it has room for more
    note: str = ""  # a line under an analysis table with rows: what its words mean
    # its rows from the report's answers; None for a built-in (made by analysis.analyse)
    compute: Callable[[list[AnswerSummary]], Rows] | None = None

    @property
    def name(self) -> str:
        return self.short or self.key.replace("_", " ")

    def note_in(self, analysis: dict[str, Any]) -> str:
        """Its note as shown, `{correct_at}` filled from `analysis`; "" without one."""
        return self.note.format(correct_at=analysis.get("correct_at"))


def table_problem(thing: Any) -> str | None:
    """What keeps a user's `thing` from being a table, or None."""
    if not isinstance(thing, Table):
        return f"a {type(thing).__name__}, not a freshrag.reporting.table.Table"
    if not callable(thing.compute):
        return "a Table without a compute function (rows from the answers)"
    return None


BUILTIN = ("intervals", "retrieval", "attribution", "trajectory", "decisions", "cost", "latency",
           "paired", "decisions_by_kind", "known_decisions", "thresholds", "roc", "savings",
           "mixes", "router3", "savings_by_hops", "groups", "wording", "scorers",
           "scorer_correlations", "crag", "judge_spread", "staleness", "staleness_paired")
TABLES: Registry[Table] = Registry(
    "table", "freshrag.tables",
    {key: f"freshrag.reporting.table_list:{key.upper()}" for key in BUILTIN}, check=table_problem)


def tables(section: str = "analysis") -> list[Table]:
    """The tables of `section`, in the order shown: the built-ins, then the installed ones."""
    made = [TABLES[key] for key in TABLES]
    return [table for table in made + plugged()[0] if table.section == section]


def plugged() -> tuple[list[Table], list[PluginError]]:
    """Every installed table (`freshrag.tables`), keyed by its entry point's name, and why
    each one that cannot be loaded could not: left out, never the report's end."""
    found, broken = [], []
    for point in TABLES.installed().values():
        try:
            entry = TABLES.from_entry_point(point)
        except PluginError as err:
            broken.append(err)
            continue
        found.append(replace(entry.thing, key=entry.name))
    return found, broken


def computed(rows: list[AnswerSummary]) -> dict[str, Rows]:
    """The installed tables' rows, by key, for analysis.json; each table that cannot be loaded
    is named on stderr here, once per report (every other reader leaves it out in silence)."""
    found, broken = plugged()
    for err in broken:
        print(f"warning: {err}", file=sys.stderr)
    return {table.key: table.compute(rows) for table in found if table.compute is not None}

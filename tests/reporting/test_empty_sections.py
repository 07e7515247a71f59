"""Each empty section of a report says what it needs (harness/reporting/empty.py): every table the
printed report and the HTML page can leave empty has a need, the savings curve's names the traffic
commands, and the lines fit 80 columns."""

from __future__ import annotations

from freshrag.reporting import empty
from freshrag.reporting.scorers import SCORER_TABLES
from freshrag.reporting.sections import ANALYSIS_TABLES, nothing_to_show


def test_every_table_that_can_be_empty_says_what_it_needs():
    keys = [key for tables in (ANALYSIS_TABLES, SCORER_TABLES) for key, _, _ in tables]
    assert sorted(set(keys) - set(empty.NEEDS)) == []
    assert sorted(set(empty.NEEDS) - set(keys)) == []  # no need of a table that is gone


def test_an_empty_savings_curve_names_the_traffic_commands():
    document = {key: [{"x": 1}] for key, _, _ in ANALYSIS_TABLES if key != "savings"}
    assert nothing_to_show(document) == "Nothing to show in: savings curve."
    lines = empty.needs_lines(document, ANALYSIS_TABLES).splitlines()
    assert lines[0].startswith("  savings curve: needs a traffic mix")
    text = " ".join(line.strip() for line in lines)
    assert "freshrag build --control N --general N, or freshrag mix" in text
    assert empty.needs_lines({**document, "savings": [{"x": 1}]}, ANALYSIS_TABLES) == ""


def test_the_lines_of_needs_fit_80_columns():
    lines = empty.needs_lines({}, ANALYSIS_TABLES, SCORER_TABLES).splitlines()
    assert len(lines) >= len(ANALYSIS_TABLES) + len(SCORER_TABLES)
    assert max(map(len, lines)) <= 80


def test_the_html_page_names_an_empty_table_with_its_need():
    assert empty.needs("savings", "Savings curve").startswith("Savings curve (needs a traffic")
    assert empty.needs("not-a-table", "Other") == "Other"

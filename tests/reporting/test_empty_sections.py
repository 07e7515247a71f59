"""Each empty section of a report says what it needs (harness/reporting/table.py `needs`,
harness/reporting/empty.py): every built-in table the printed report and the HTML page can leave
empty has a need, the savings curve's names the traffic commands, and the lines fit 80
columns."""

from __future__ import annotations

from freshrag.reporting import empty, staleness
from freshrag.reporting.sections import nothing_to_show
from freshrag.reporting.table import TABLES, Table, tables


def test_every_table_that_can_be_empty_says_what_it_needs():
    shown = tables() + tables("scorers")
    # every built-in, in one place; the changed facts' section is printed only with rows
    assert [table.key for table in shown + tables(staleness.SECTION)] == list(TABLES)
    assert [table.key for table in shown if not table.needs] == []


def test_an_empty_savings_curve_names_the_traffic_commands():
    document = {table.key: [{"x": 1}] for table in tables() if table.key != "savings"}
    assert nothing_to_show(document, tables()) == "Nothing to show in: savings curve."
    lines = empty.needs_lines(document, tables()).splitlines()
    assert lines[0].startswith("  savings curve: needs a traffic mix")
    text = " ".join(line.strip() for line in lines)
    assert "freshrag build --control N --general N, or freshrag mix" in text
    assert empty.needs_lines({**document, "savings": [{"x": 1}]}, tables()) == ""


def test_the_lines_of_needs_fit_80_columns():
    shown = tables() + tables("scorers")
    lines = empty.needs_lines({}, shown).splitlines()
    assert len(lines) >= len(shown)
    assert max(map(len, lines)) <= 80


def test_the_html_page_names_an_empty_table_with_its_need():
    assert empty.needs(TABLES["savings"], "Savings curve").startswith(
        "Savings curve (needs a traffic")
    assert empty.needs(Table("other", "Other", ("dataset",)), "Other") == "Other"

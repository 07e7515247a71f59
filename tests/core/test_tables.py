"""One markdown cell escaper and one CSV writer (harness/core/tables.py): any text stays in its
cell and reads back as written; a CSV cell a spreadsheet would run as a formula is defused."""

import csv
import io

import pytest

from freshrag.core import tables
from tests.support.markdown import cells

NASTY = [
    "a | b", "back\\slash", "ends with a backslash\\", "\\| both", "<script>alert(1)</script>",
    '<img src="http://evil.example/x.png">', "Q&A &amp; more", "two\nlines", "crlf\r\nline",
    "unicode\u2028separator", "| leading pipe", "trailing pipe |", "",
]


@pytest.mark.parametrize("text", NASTY)
def test_a_cell_stays_in_its_column_and_reads_back_as_written(text):
    line = tables.row(["left", text, "right"])
    assert "\n" not in line and "\r" not in line and "\u2028" not in line
    assert "<" not in line and ">" not in line  # no HTML tag survives, escaped or not
    flat = " ".join(text.replace("\r\n", "\n").replace("\u2028", "\n").split("\n"))
    assert cells(line) == ["left", flat.strip(), "right"]


def test_markdown_made_on_purpose_passes_as_it_is():
    line = tables.row([tables.Markdown("**total**"), "a|b"])
    assert line == "| **total** | a\\|b |"


def test_the_header_aligns_as_asked():
    assert tables.header(["label", "n"], ["---", "---:"]) == ["| label | n |", "|---|---:|"]


@pytest.mark.parametrize("text, written", [
    pytest.param("=HYPERLINK(\"http://evil.example\")", "'=HYPERLINK(\"http://evil.example\")",
                 id="equals"),
    pytest.param("+1+1", "'+1+1", id="plus"),
    pytest.param("-2+3", "'-2+3", id="minus"),
    pytest.param("@SUM(A1)", "'@SUM(A1)", id="at"),
    pytest.param("\t=1", "'\t=1", id="tab"),
    pytest.param("\r=1", "'\r=1", id="carriage-return"),
    pytest.param("gpt-4o", "gpt-4o", id="plain-text"),
    pytest.param("a, \"quoted\"\nline", "a, \"quoted\"\nline", id="quoting"),
    pytest.param("cr\rinside", "cr\rinside", id="carriage-return-inside"),
])
def test_a_csv_cell_a_spreadsheet_would_run_is_defused(text, written):
    out = tables.csv_text([{"system": text, "score": -0.5, "n": None}], ["system", "score", "n"])
    header, row = list(csv.reader(io.StringIO(out)))
    assert header == ["system", "score", "n"]
    assert row == [written, "-0.5", ""]  # numbers stay numbers, even negative ones

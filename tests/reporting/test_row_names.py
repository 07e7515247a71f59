"""Every report row is named distinctly where it is read (docs/reports.md#how-runs-are-told-apart):
two runs of one system carry a short run label in the system cell of the HTML summary and of the
printed table, and a name too long for the terminal is cut in the middle, keeping the end that
tells it apart."""

from __future__ import annotations

import re

import pytest

from freshrag.cli.main import main
from freshrag.reporting.identity import short_run
from freshrag.reporting.render.terminal import _cut
from tests.support.markdown import table_rows
from tests.support.runs import sample, write_run


@pytest.mark.parametrize("run, others, short", [
    pytest.param("results/run-b", ["results/run-a"], "run-b", id="the directory's name"),
    pytest.param("results/a/run", ["results/b/run"], "a/run", id="two of one name"),
    pytest.param("/x/a/b/run", ["/y/a/b/run"], "x/a/b/run", id="as many parts as needed"),
    pytest.param("run", ["other"], "run", id="a bare name"),
])
def test_a_run_is_named_by_the_last_parts_of_its_path_that_tell_it_apart(run, others, short):
    assert short_run(run, others) == short


@pytest.mark.parametrize("text, width, cut", [
    pytest.param("naive [run: run-b]", 30, "naive [run: run-b]", id="fits: whole"),
    pytest.param("naive-with-a-long-name [run: run-b]", 20, "naive-with…n: run-b]",
                 id="cut in the middle"),
])
def test_a_name_too_long_is_cut_in_the_middle(text, width, cut):
    assert _cut(text, width) == cut and len(cut) <= width


@pytest.mark.parametrize("width", range(1, 20))
def test_no_escape_is_cut_in_two(width):
    cut = _cut("a|b|c|d|e|f [run: x]", width)
    assert len(cut) <= width and re.fullmatch(r"(?:[^\\|]|\\[|\\])*", cut)


def two_runs_of_naive(tmp_path):
    rows = [sample(f"q{q}", system, 4, 3) for system in ("baseline", "naive") for q in range(2)]
    return [write_run(tmp_path / "results" / name, rows) for name in ("run-a", "run-b")]


def summary_cells(page: str) -> list[str]:
    table = page[page.index('id="summary-table"'):]
    table = table[:table.index("</table>")]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row)[1]  # after the dataset
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table) if "<td" in row]


def test_two_runs_of_a_system_are_two_names_in_the_html_summary_and_the_printed_one(
        tmp_path, capsys):
    runs = two_runs_of_naive(tmp_path)
    page = tmp_path / "report.html"
    assert main(["report", *map(str, runs), "--html", str(page),
                 "--out", str(tmp_path / "out")]) == 0
    assert summary_cells(page.read_text()) == [
        "baseline [run: run-a]", "naive [run: run-a]", "baseline [run: run-b]",
        "naive [run: run-b]"]
    printed = capsys.readouterr().out
    table = table_rows("\n".join(line for line in printed.split("\n\n")[0].splitlines()
                                 if line.startswith("|")))
    assert [row[0] for row in table[1:]] == summary_cells(page.read_text())


def test_a_system_that_ran_once_keeps_its_bare_name(tmp_path):
    runs = two_runs_of_naive(tmp_path)[:1]
    page = tmp_path / "report.html"
    assert main(["report", *map(str, runs), "--html", str(page),
                 "--out", str(tmp_path / "out")]) == 0
    assert summary_cells(page.read_text()) == ["baseline", "naive"]

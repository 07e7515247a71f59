"""The printed report fits a terminal of 80 columns (docs/reports.md#what-a-report-holds): a table
too wide is split into tables that each repeat the columns naming its rows, other lines are
wrapped, and nothing is lost; redirected, and in the files, every table is whole."""

from __future__ import annotations

import pytest

from freshrag.cli.main import main
from freshrag.reporting.render.terminal import fit
from tests.support.fakes import varying_reply
from tests.support.markdown import table_rows

WIDE = "\n".join([
    "| dataset | system | " + " | ".join(f"column_{i}" for i in range(12)) + " |",
    "|---|---|" + "---:|" * 12,
    *(f"| A_f | sys\\|{n} | " + " | ".join(f"{n}.{i:03d}" for i in range(12)) + " |"
      for n in range(3)),
])


def test_a_wide_table_is_split_into_tables_that_repeat_the_names_of_its_rows():
    printed = fit(WIDE, 40)
    assert max(map(len, printed.splitlines())) <= 40
    parts = [table_rows(part) for part in printed.split("\n\n")]
    assert len(parts) > 1
    for part in parts:  # the dataset holds one value: left out; the system named in each
        assert part[0][0] == "system" and [row[0] for row in part[1:]] == [
            "sys|0", "sys|1", "sys|2"]
    columns = [name for part in parts for name in part[0][1:]]
    assert columns == [f"column_{i}" for i in range(12)]  # every column once, in order
    assert [cell for part in parts for cell in part[1][1:]] == [f"0.{i:03d}" for i in range(12)]
    assert all(line.endswith("---:|") for line in printed.splitlines() if line.startswith("|-"))


def test_a_cell_too_wide_is_cut_in_the_middle_keeping_its_end():
    printed = fit("| system | run |\n|---|---|\n| naive | " + "/tmp/x" * 20 + "/run-a |", 40)
    [row] = table_rows(printed)[1:]
    assert len(printed.splitlines()[-1]) <= 40 and "…" in row[1] and row[1].startswith("/tmp/x") and row[1].endswith("/run-a")


@pytest.mark.parametrize("text, width, lines", [
    pytest.param("short line", 80, ["short line"], id="fits"),
    pytest.param("- " + "word " * 30, 40, None, id="a list item: its continuation indented"),
    pytest.param("WARNING: " + "x" * 100, 40, None, id="a word longer than the line"),
    pytest.param("| x | y |\n|---|---|\n| " + "c" * 90 + " | d |", 40, None,
                 id="a naming cell too wide: the row as a wrapped line"),
])
def test_every_line_fits(text, width, lines):
    printed = fit(text, width).splitlines()
    assert max(map(len, printed)) <= width
    if lines:
        assert printed == lines
    if text.startswith("- "):
        assert all(line.startswith("  ") for line in printed[1:])
    if text.startswith("|"):
        assert printed[0].startswith("- ccc") and "y: d" in " ".join(printed)


def test_the_report_of_a_realistic_run_prints_within_80_columns(tmp_path, fake_server,
                                                                monkeypatch, capsys):
    fake_server(reply=varying_reply())
    monkeypatch.chdir(tmp_path)
    runs = [tmp_path / "results" / name for name in ("run-a", "run-b")]
    for run, systems in zip(runs, ("baseline,oracle,naive,boolean,advanced", "naive")):
        assert main(["run", "--systems", systems, "--limit", "4", "--no-probe",
                     "--out", str(run)]) == 0
    capsys.readouterr()
    # redirected (as here: no terminal), every table is printed whole, as markdown to keep
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "out")]) == 0
    whole = capsys.readouterr().out
    assert max(map(len, whole.splitlines())) > 80 and "| dataset | system | truthfulness" in whole
    # in a terminal of 80 columns, as --width 80 says
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "out"), "--width", "80"]) == 0
    printed = capsys.readouterr().out
    wide = [line for line in printed.splitlines() if len(line) > 80]
    assert wide == []
    assert len(printed.splitlines()) > 100  # the whole report, analysis tables too
    for column in ("recall_all_traj", "tokens_per_correct", "pareto_cost_usd", "p_holm"):
        assert f" {column} |" in printed
    # the two runs of naive, named apart wherever a system is named
    assert "naive [run: run-a]" in printed and "naive [run: run-b]" in printed
    assert "| naive |" not in printed

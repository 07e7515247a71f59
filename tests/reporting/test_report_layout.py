"""What the printed report looks like, whatever order the pairs finished in and however many
systems there are: tables in the order of the runs' --systems, a summary that reads at 80
columns (the whole table in summary.md), and one line naming the sections with nothing to show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.reporting import analysis, loading, report, sections, summary_table
from freshrag.reporting.identity import group_rows
from freshrag.reporting.table import tables
from tests.support.markdown import table_rows
from tests.support.rows import summaries
from tests.support.runs import sample, write_run

SYSTEMS = ["naive", "baseline", "boolean"]  # as given to --systems
GOLDEN_MANIFEST = Path(__file__).resolve().parents[1] / "data" / "golden" / "run" / "manifest.json"


def manifest(systems):
    """A run's manifest as freshrag writes it (the golden run's), naming these systems."""
    return {**json.loads(GOLDEN_MANIFEST.read_text()), "systems": systems}


def finished_out_of_order(systems, judge="judge-1", questions=3):
    """Rows in an order no one asked for: the last system's answers first, questions mixed."""
    return [sample(f"q{q}", system, 1 + (q + i) % 5, 4, judge=judge)
            for i, system in enumerate(reversed(systems)) for q in reversed(range(questions))]


def run_dir(tmp_path, name, systems, **kw):
    return write_run(tmp_path / name, finished_out_of_order(systems, **kw),
                     manifest(systems))


def test_every_table_follows_the_runs_systems_not_the_order_the_pairs_finished_in(tmp_path):
    rows = loading.load_runs([run_dir(tmp_path, "run", SYSTEMS)])
    assert [row["system"] for row in summary_table.summarise(summaries(rows))] == SYSTEMS
    details = analysis.analyse(summaries(rows))
    for key in ("intervals", "attribution", "cost"):
        assert [row["system"] for row in details[key]] == SYSTEMS, key
    assert [(row["a"], row["b"]) for row in details["paired"]] == [
        ("naive", "baseline"), ("naive", "boolean"), ("baseline", "boolean")]


def test_several_runs_come_as_given_each_in_its_own_order_imports_last(tmp_path):
    first = run_dir(tmp_path, "first", ["boolean", "naive"], judge="j1")
    second = run_dir(tmp_path, "second", ["naive", "baseline"], judge="j2")
    # an imported system no manifest names comes after the named ones, as first met
    imported = [sample("q0", "theirs", 3, 3, judge="j2"), sample("q1", "mine", 3, 3, judge="j2")]
    write_run(tmp_path / "second", finished_out_of_order(["naive", "baseline"], judge="j2")
              + imported, manifest(["naive", "baseline"]))
    rows = loading.load_runs([first, second])
    assert [(key.system, key.judge) for key in group_rows(summaries(rows))] == [
        ("boolean", "j1"), ("naive", "j1"), ("naive", "j2"), ("baseline", "j2"),
        ("theirs", "j2"), ("mine", "j2")]


def test_a_run_without_a_manifest_keeps_the_order_it_was_read_in(tmp_path):
    run = write_run(tmp_path / "run", finished_out_of_order(SYSTEMS))
    assert [row["system"] for row in summary_table.summarise(summaries(loading.load_runs([run])))] == \
        list(reversed(SYSTEMS))


def test_the_printed_summary_reads_at_80_columns_and_the_whole_table_is_written(tmp_path,
                                                                                capsys):
    # nine systems in two runs of two answering models: names must carry the model to differ
    systems = [f"decider-{i}" for i in range(9)]
    runs = [write_run(tmp_path / model, [
                sample(f"q{q}", system, 4, 3, answer=model, tokens=(123_456_789, 54_321))
                for system in systems for q in range(2)], manifest(systems))
            for model in ("a-rather-long-answer-model-name-v2", "another-model")]
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    table = [line for line in printed.split("\n\n")[0].splitlines() if line.startswith("|")]
    assert len(table) == 2 + 18 and max(map(len, table)) <= 80
    cells = table_rows("\n".join(table))
    assert cells[0] == ["system", "n", "truthfulness", "relevance", "tokens in / out"]
    assert {tuple(row[1:]) for row in cells[1:]} == {("2", "4.00", "3.00", "247M / 109k")}
    assert [row[0].split(" ")[0] for row in cells[1:]] == systems * 2  # in --systems order
    # the long model's names, cut in the middle: the end that tells them apart stays
    assert all("…" in row[0] and row[0].endswith("-v2]") for row in cells[1:10])
    assert cells[1][0] != cells[10][0] and cells[10][0].endswith("nother-model]")
    assert "summary.md" in printed
    wide = table_rows((tmp_path / "out" / report.SUMMARY_MD).read_text())
    assert wide[0] == list(summary_table.COLUMNS) and len(wide) == 1 + 18
    assert "a-rather-long-answer-model-name-v2" in wide[1][-1]


def test_sections_with_nothing_to_show_are_named_in_one_line(tmp_path, capsys):
    run = run_dir(tmp_path, "run", SYSTEMS)  # no retrieval, no decisions, no scorers, no kinds
    assert main(["report", str(run), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    # one sentence, wrapped at 80 columns as every printed line
    assert printed.count("Nothing to show in: ") == 1
    line = " ".join(printed.split("Nothing to show in: ", 1)[1].split(".", 1)[0].split())
    for name in ("retrieval", "latency", "scorers beyond the judge",
                 "CRAG outcomes", "judge spread", "wording"):
        assert name in line
    for shown in ("intervals", "failure attribution", "decisions against need",
                  "quality against cost", "paired comparisons"):
        assert shown not in line
    assert "### Retrieval: gold" not in printed and "### Means and token totals" in printed


@pytest.mark.parametrize("document, expected", [
    pytest.param({table.key: [{"x": 1}] for table in tables()}, "", id="all-shown"),
    pytest.param({table.key: [{"x": 1}] for table in tables()} | {"roc": []},
                 "Nothing to show in: ROC.", id="one-empty"),
])
def test_nothing_to_show_says_nothing_when_every_table_has_rows(document, expected):
    assert sections.nothing_to_show(document, tables()) == expected


def test_with_several_datasets_the_printed_summary_names_each_rows_dataset(tmp_path, capsys):
    runs = [write_run(tmp_path / name, [sample("q1", "naive", dataset=name)], manifest(["naive"]))
            for name in ("A_f", "A_r")]
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "out")]) == 0
    cells = table_rows(capsys.readouterr().out.split("\n\n")[0])
    assert [row[0] for row in cells] == ["dataset / system", "A_f / naive", "A_r / naive"]

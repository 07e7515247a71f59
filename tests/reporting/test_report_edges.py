"""The report's edges: runs with no rows, figure names that would collide, and the tokens that
failed pairs spent, counted apart from the answered ones."""

from __future__ import annotations

import csv
import io
import json

import pytest

from freshrag.cli.main import main
from freshrag.core.files import write_json
from freshrag.core.samples import SAMPLES
from freshrag.reporting import analysis, loading, report, summary_table
from freshrag.reporting.answers import Answers
from freshrag.reporting.render import figure_data, plots
from tests.support.markdown import table_rows
from tests.support.rows import summaries
from tests.support.runs import sample, write_run

# ------------------------------------------------------------------ item 4: a run with no rows

FAILED = [sample(f"q{i}", "naive", status="failed", answer=None, judge=None) for i in range(3)]
ANSWERED = [sample(f"q{i}", "baseline") for i in range(3)]

# (rows of each run directory; the line each must print about itself, None for none)
EMPTY_RUNS = [
    pytest.param([[]], ["no rows"], id="empty-samples"),
    pytest.param([FAILED], ["all 3 pairs failed"], id="every-pair-failed"),
    pytest.param([[], ANSWERED], ["no rows", None], id="empty-beside-a-full-run"),
    pytest.param([[], []], ["no rows", "no rows"], id="two-empty-runs"),
]


@pytest.mark.parametrize("fmt", ["markdown", "json"])
@pytest.mark.parametrize("runs, lines", EMPTY_RUNS)
def test_a_run_with_no_rows_is_reported_not_a_traceback(tmp_path, capsys, runs, lines, fmt):
    dirs = [write_run(tmp_path / f"run{i}", rows, {"dataset": {"name": "A_f"}})
            for i, rows in enumerate(runs)]
    page = tmp_path / "report.html"
    code = main(["report", *map(str, dirs), "--format", fmt, "--out", str(tmp_path / "out"),
                 "--html", str(page)])
    out, err = capsys.readouterr()
    assert code == 0
    said = out + err
    for run_dir, line in zip(dirs, lines):
        if line is not None:
            assert f"{run_dir}: {line}" in said
            assert f"{run_dir}: {line}" in page.read_text(encoding="utf-8")
        else:  # (the judge's verdict names every run directory)
            assert f"{run_dir}: no rows" not in said and f"{run_dir}: all" not in said
    if fmt == "json":  # the note goes to stderr; stdout stays parseable
        rows = json.loads(out)["rows"]
        assert sum(r["n"] for r in rows) == sum(len(r) for r in runs)


def test_a_directory_without_samples_is_still_refused(tmp_path):
    with pytest.raises(loading.ResultsError, match=SAMPLES):
        loading.load_runs([tmp_path])


# ------------------------------------------------------------------ item 11: figure names


def hist_names(paths):
    return [p.name for p in paths if p.name.startswith("hist-") and p.name != "hist-comparison.png"]


# rows of two groups whose plain slugs (hist-DATASET-SYSTEM.png) would be one name
COLLIDING = [
    pytest.param([sample("q1", "a/b"), sample("q1", "a_b")], id="slash-and-underscore"),
    pytest.param([sample("q1", "Naive"), sample("q1", "naive")], id="case-only"),
    pytest.param([sample("q1", "z", dataset="x-y"), sample("q1", "y-z", dataset="x")],
                 id="hyphen-in-dataset-or-system"),
    pytest.param([sample("q1", "naive", answer="m/1"), {**sample("q1", "naive", answer="m_1"),
                                                         "run": "other"}],
                 id="same-system-two-models-with-one-slug"),
]


@pytest.mark.parametrize("rows", COLLIDING)
def test_figures_of_two_groups_never_share_a_file(tmp_path, rows):
    paths = plots.write_figures(summaries(rows), tmp_path)
    names = hist_names(paths)
    assert len(names) == 2
    assert len({name.lower() for name in names}) == 2  # distinct on case-blind disks too
    assert all(p.exists() for p in paths)
    for name, row in zip(names, rows):
        assert figure_data.slug(row["system"]).lower() in name.lower()


def test_names_that_do_not_collide_stay_plain(tmp_path):
    paths = plots.write_figures(summaries([sample("q1", "naive"), sample("q1", "baseline")]), tmp_path)
    assert hist_names(paths) == ["hist-A_f-naive.png", "hist-A_f-baseline.png"]


# ------------------------------------------------------------------ item 8: failed pairs' tokens

OK_ROWS = [sample(f"q{i}", "boolean", 4, 3, decision="decider", tokens=(100 + i, 10))
           for i in range(4)]
FAILED_ROWS = [sample(f"q{i}", "boolean", status="failed", decision="decider", judge=None,
                      answer=None, tokens=(40 + i, 4)) for i in range(4, 6)]


def spent(rows):
    """Tokens of every role but the judge, summed as the fixture defines them."""
    return tuple(sum(u[kind] for r in rows for role, u in r.usage.items() if role != "judge")
                 for kind in ("input", "output"))


def test_failed_pairs_tokens_are_counted_apart():
    [row] = summary_table.summarise(summaries(OK_ROWS + FAILED_ROWS))
    assert (row["n"], row["failed"]) == (len(OK_ROWS) + len(FAILED_ROWS), len(FAILED_ROWS))
    assert (row["input_tokens"], row["output_tokens"]) == spent(summaries(OK_ROWS))
    assert (row["failed_input_tokens"], row["failed_output_tokens"]) == spent(summaries(FAILED_ROWS))
    assert all(spent(summaries(FAILED_ROWS)))  # the fixture's failed rows did spend tokens


def test_intervals_and_cost_count_the_answered_pairs_tokens_as_the_summary_does():
    rows = OK_ROWS + FAILED_ROWS
    [row] = summary_table.summarise(summaries(rows))
    [interval] = analysis.intervals(Answers(summaries(rows)))
    assert interval["input_tokens"][0] == row["input_tokens"]
    assert interval["output_tokens"][0] == row["output_tokens"]
    [cost] = analysis.quality_and_cost(Answers(summaries(rows)), {"decider": (1.0, 2.0), "model-a": (1.0, 2.0)})
    assert cost["input_tokens"] == row["input_tokens"] and cost["failed"] == len(FAILED_ROWS)
    ok_in, ok_out = spent(summaries(OK_ROWS))
    assert cost["cost_usd"] == pytest.approx((ok_in * 1.0 + ok_out * 2.0) / 1e6)


def test_a_group_of_failed_pairs_only_has_no_token_interval():
    [interval] = analysis.intervals(Answers(summaries(FAILED_ROWS)))
    assert interval["input_tokens"] is None and "truthfulness" not in interval


# ------------------------------------------------------------------ values that are markup

EVIL_SYSTEM = "naive|<script>alert(1)</script>\nsecond line"
FORMULA_SYSTEM = '=HYPERLINK("http://evil.example","click")'


def test_every_printed_table_keeps_its_columns_whatever_a_value_holds(tmp_path, capsys):
    rows = [sample(f"q{i}", system, dataset="A|f<b>") for i in range(2)
            for system in (EVIL_SYSTEM, "baseline")]
    run = write_run(tmp_path / "run", rows, {"dataset": {"name": "A|f<b>"}})
    assert main(["report", str(run), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "<script>" not in printed and "<b>" not in printed
    for table in printed.split("\n\n"):
        found = table_rows(table)
        if found:  # every row of a table has the header's number of cells
            assert {len(cells) for cells in found} == {len(found[0])}, table
    summary = table_rows(printed.split("\n\n")[0])
    systems = sorted(dict(zip(summary[0], cells))["system"] for cells in summary[1:])
    named = sorted(["baseline", EVIL_SYSTEM.replace("\n", " ")])  # cut to 80 columns if need be
    cut = [shown.partition("…") for shown in systems]  # in the middle: both ends kept
    assert [full.startswith(head) and full.endswith(tail)
            for (head, _, tail), full in zip(cut, named)] == [True, True]
    assert max(len(line) for line in printed.split("\n\n")[0].splitlines()
               if line.startswith("|")) <= 80


def test_csv_holds_the_values_and_no_formula(tmp_path, capsys):
    rows = [sample("q1", FORMULA_SYSTEM), sample("q1", "a,b\nc")]
    run = write_run(tmp_path / "run", rows, {"dataset": {"name": "A_f"}})
    assert main(["report", str(run), "--format", "csv", "--out", str(tmp_path / "out")]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted(row["system"] for row in table) == sorted(["'" + FORMULA_SYSTEM, "a,b\nc"])


# ------------------------------------------------------------------ statistics that overflow

HUGE = [sample(f"q{i}", "naive", truth=1e308, rel=1e308) for i in range(3)]  # finite, each


def strict(text):
    """JSON as any parser reads it: NaN and Infinity are no JSON."""
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} written"))


def test_a_mean_that_overflows_is_null_with_a_note_and_the_json_strict(tmp_path):
    summary = summary_table.summarise(summaries(HUGE))
    assert summary[0]["truthfulness"] == float("inf")  # the sum overflows: the case at hand
    notes = report.non_finite_notes("summary", summary)
    assert len(notes) == 1 and "A_f/naive.truthfulness, A_f/naive.relevance" in notes[0]
    written = strict(report.write_summary(tmp_path, summary).read_text())
    assert (written["rows"][0]["truthfulness"], written["rows"][0]["n"]) == (None, 3)
    details = analysis.analyse(summaries(HUGE))
    with pytest.raises(ValueError, match="not JSON compliant"):  # the writer is strict
        write_json(tmp_path / "analysis.json", details)
    assert report.non_finite_notes("analysis", details)
    strict(write_json(tmp_path / "analysis.json", report.finite(details)).read_text())
    assert "inf" not in report.render(report.finite(summary), "markdown")


@pytest.mark.parametrize("fmt", ["markdown", "json", "csv"])
def test_grades_that_would_overflow_are_skipped_before_any_statistic(tmp_path, capsys, fmt):
    # the first defence: a grade off the judge's 1-5 scale never reaches a mean, its row skipped
    # with a warning naming file, line and field (the second, above: a statistic that is not
    # finite is written as null)
    run = write_run(tmp_path / "run", HUGE, {"dataset": {"name": "A_f"}})
    out = tmp_path / "out"
    assert main(["report", str(run), "--format", fmt, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    for line in (1, 2, 3):
        assert (f"{run / 'samples.jsonl'}:{line}: skipped, a row this freshrag cannot read: "
                f"grade 'truthfulness' must be a number from 1 to 5") in err
    written = "".join(path.read_text() for path in out.rglob("*") if path.is_file())
    assert "Traceback" not in err and "1e+308" not in written and "Infinity" not in written


def test_a_small_p_value_reads_as_written_in_every_table():
    table = report.markdown_table([{"p_value": 0.0001}, {"p_value": 0.25}], ["p_value"])
    assert table.splitlines()[2:] == ["| < 0.001 |", "| 0.250 |"]

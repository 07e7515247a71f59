"""The report's Epochs section (harness/reporting/epochs.py, docs/reports.md#epochs): its figures
on rows whose flips are known by construction, and a report of a run of three epochs that is the
report of its first epoch's rows alone, but for the new section."""

import json
import math
import shutil

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.reporting.epochs import epoch_table, first_epoch, render
from tests.support.fakes import varying_reply
from tests.support.rows import summaries
from tests.support.runs import run_cli, sample


def asked(question, system, grades, answers=None, **fields):
    """One row per epoch of `question`: grades[i] = (truthfulness, relevance), or None for an
    unscored grade; answers[i] the answer text (the same for every epoch when not given)."""
    answers = answers or ["the same answer"] * len(grades)
    return [{**sample(question, system, *(grade or (None, 4))), "answer": answer,
             "epoch": epoch, **fields}
            for epoch, (grade, answer) in enumerate(zip(grades, answers), start=1)]


def naive_rows():
    """Five questions with two scored epochs or more, their flips known:
    q1 steady; q2 a flip on the same answer; q3 another answer, the same grade; q4 another
    answer and a flip; q7 steady. q5 was asked once and q6 has one scored epoch: left out."""
    return [*asked("q1", "naive", [(4, 4)] * 3),
            *asked("q2", "naive", [(4, 4), (2, 4), (4, 4)]),
            *asked("q3", "naive", [(5, 5), (5, 3), (5, 4)], ["a", "b", "c"]),
            *asked("q4", "naive", [(3, 4), (4, 4), (3, 4)], ["a", "b", "a"]),
            *asked("q5", "naive", [(1, 1)]),
            *asked("q6", "naive", [(2, 2), None]),
            *asked("q7", "naive", [(2, 4)] * 3)]


def test_the_section_s_figures_on_rows_whose_flips_are_known():
    rows = naive_rows() + asked("q1", "baseline", [(3, 3), (3, 3)], ["x", "y"])
    table = {entry["system"]: entry for entry in epoch_table(summaries(rows))}
    naive = table["naive"]
    assert (naive["questions"], naive["epochs"]) == (5, 3)
    assert naive["truthfulness"] == round(53 / 15, 4) and naive["relevance"] == 4.0
    # per question the sample standard deviation across epochs, then their mean
    assert naive["sd_truthfulness"] == pytest.approx(
        (math.sqrt(4 / 3) + math.sqrt(1 / 3)) / 5, abs=1e-4)
    assert naive["sd_relevance"] == pytest.approx(1.0 / 5, abs=1e-4)
    assert naive["judge_flips"][0] == 0.4  # q2, q4 of five
    assert naive["answer_changed"][0] == 0.4  # q3, q4 of five
    assert naive["flips_same_answer"][0] == round(1 / 3, 4)  # q2 of q1, q2, q7
    for share in ("judge_flips", "answer_changed", "flips_same_answer"):
        value, low, high = naive[share]
        assert 0 <= low <= value <= high <= 1 and low < high
    baseline = table["baseline"]
    assert baseline["judge_flips"] == [0.0, 0.0, 0.0]  # no grade moved: nothing to resample
    assert baseline["answer_changed"] == [1.0, 1.0, 1.0]
    assert baseline["flips_same_answer"] is None  # every answer changed
    assert (baseline["sd_truthfulness"], baseline["sd_relevance"]) == (0.0, 0.0)


@pytest.mark.parametrize("rows", [
    pytest.param([], id="no-rows"),
    pytest.param([sample("q1", "naive"), sample("q2", "naive")], id="one-epoch"),
    pytest.param(asked("q1", "naive", [(4, 4)]) + asked("q2", "naive", [(3, 3)]),
                 id="epoch-one-of-a-run-of-several"),
])
def test_no_section_where_nothing_was_asked_twice(rows):
    assert epoch_table(summaries(rows)) == [] and render({"epochs": epoch_table(summaries(rows))}) == ""


def test_a_question_asked_twice_but_scored_once_keeps_its_identity_with_no_figures():
    table = epoch_table(summaries(asked("q6", "naive", [(2, 2), None])))
    assert len(table) == 1 and table[0]["questions"] == 0 and table[0]["epochs"] == 2
    assert all(table[0][name] is None for name in ("truthfulness", "sd_truthfulness",
                                                     "judge_flips", "flips_same_answer"))


def test_the_tables_read_the_first_epoch_only():
    rows = naive_rows()
    assert {(row.question_id, row.epoch) for row in first_epoch(summaries(rows))} == {
        (f"q{n}", 1) for n in (1, 2, 3, 4, 5, 6, 7)}


def report(run_dir, out, capsys, *extra):
    """The printed report of `run_dir` into `out`, its paths made `OUT` and `RUN`."""
    capsys.readouterr()
    assert main(["report", str(run_dir), "--out", str(out), *extra]) == 0
    return capsys.readouterr().out.replace(str(out), "OUT").replace(str(run_dir), "RUN")


def test_a_report_of_three_epochs_is_the_report_of_the_first_plus_the_section(
        tmp_path, fake_server, capsys):
    fake_server(reply=varying_reply())
    assert run_cli(tmp_path, "--epochs", "3") == 0
    first = tmp_path / "first"
    shutil.copytree(tmp_path / "run", first)
    rows = [json.loads(line) for line in (first / "samples.jsonl").read_text().splitlines()]
    (first / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows
                                                 if row["epoch"] == 1))
    assert len(read_samples(first / "samples.jsonl")) == 6
    three = report(tmp_path / "run", tmp_path / "r3", capsys, "--html", str(tmp_path / "3.html"))
    one = report(first, tmp_path / "r1", capsys, "--html", str(tmp_path / "1.html"))
    section = three[three.index("### Epochs"):].split("\n\n")
    assert "### Epochs" not in one
    assert three.replace("\n\n".join(section[:2]) + "\n\n", "") == one.replace(
        "1.html", "3.html")
    assert "| baseline |" in section[1] and "| oracle |" in section[1]
    for name in ("summary.json", "summary.md"):
        assert (tmp_path / "r3" / name).read_text() == (tmp_path / "r1" / name).read_text()
    analysis3, analysis1 = (json.loads((tmp_path / out / "analysis.json").read_text().replace(
        str(run_dir), "RUN")) for out, run_dir in (("r3", tmp_path / "run"), ("r1", first)))
    spread = analysis3.pop("epochs")
    assert "epochs" not in analysis1 and analysis3 == analysis1
    assert [(e["system"], e["questions"], e["epochs"]) for e in spread] == [
        ("baseline", 3, 3), ("oracle", 3, 3)]
    html3, html1 = ((tmp_path / f"{n}.html").read_text() for n in (3, 1))
    assert 'id="epochs"' in html3 and 'id="epochs"' not in html1
    assert html3.count("<tr>") == html1.count("<tr>") + 1 + len(spread)  # its header and rows

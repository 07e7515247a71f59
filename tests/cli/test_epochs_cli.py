"""Runs of several epochs (--epochs, docs/running.md#epochs) as each command reads them:
`freshrag run`'s closing summary prints the report's Epochs section, the same text; export,
score, gate and agreement read the first epoch only and say so in one line. A run of one epoch
gets neither. Where a run holds more than one epoch is read from its rows without parsing them
all (harness/reporting/epochs.py `highest_epoch`)."""

import json
import shutil

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.reporting.epochs import highest_epoch
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fakes import varying_reply
from tests.support.runs import run_cli, sample, write_run

NOTE = "epochs (--epochs); {reads} epoch 1 only"
GATE_RULES = '[[gate.rule]]\nkind = "failed"\nat_most = 0.5\n'


def epochs_section(printed: str) -> str:
    """The Epochs section of printed output: its title and its table."""
    return "\n\n".join(printed[printed.index("### Epochs"):].split("\n\n")[:2])


def test_the_run_prints_the_reports_epochs_section_only_for_a_run_of_several(
        tmp_path, fake_server, capsys):
    fake_server(reply=varying_reply())
    assert run_cli(tmp_path / "one", "--epochs", "1") == 0
    assert "### Epochs" not in capsys.readouterr().out
    assert "### Epochs" not in (tmp_path / "one" / "run" / "summary.md").read_text()
    assert run_cli(tmp_path / "two", "--epochs", "2") == 0
    printed = capsys.readouterr().out
    # the whole table's file holds the section too
    written = (tmp_path / "two" / "run" / "summary.md").read_text()
    assert epochs_section(written).strip() == epochs_section(printed).strip()
    assert main(["report", str(tmp_path / "two" / "run"), "--out", str(tmp_path / "r")]) == 0
    reported = capsys.readouterr().out
    assert epochs_section(printed) == epochs_section(reported)
    assert "| baseline |" in epochs_section(printed) and "| oracle |" in epochs_section(printed)
    # a resume that lowers --epochs keeps epoch 2's rows, and the report reads them: so does it
    assert run_cli(tmp_path / "two", "--epochs", "1") == 0
    assert epochs_section(capsys.readouterr().out) == epochs_section(reported)


@pytest.fixture
def runs(tmp_path, fake_server, capsys):
    """`one`, a run of one epoch, `same`, a copy of it, and `two`, a run of two epochs, of
    baseline and oracle on three questions (epoch 1 of `two` from `one`'s cache: the same answers
    and grades); the gate's rules."""
    fake_server(reply=varying_reply())
    questions, articles = write_dataset(tmp_path / "data", content=bridges_and_mayor)
    for name, epochs in (("one", "1"), ("two", "2")):
        assert main(["run", "--questions", str(questions), "--articles", str(articles),
                     "--out", str(tmp_path / "results" / name), "--systems", "baseline,oracle",
                     "--epochs", epochs]) == 0
    shutil.copytree(tmp_path / "results" / "one", tmp_path / "results" / "same")
    (tmp_path / "gate.toml").write_text(GATE_RULES, encoding="utf-8")
    (tmp_path / "out").mkdir()
    capsys.readouterr()
    return {name: tmp_path / "results" / name for name in ("one", "same", "two")} | {
        "rules": tmp_path / "gate.toml", "out": tmp_path / "out"}


def export(paths, run, other):
    return ["export", str(paths[run]), "--format", "jsonl", "--out", str(paths["out"] / "x.jsonl")]


def score(paths, run, other):
    return ["score", str(paths[run]), "--scorers", "judge"]


def gate(paths, run, other):
    return ["gate", str(paths[other]), str(paths[run]), "--rules", str(paths["rules"])]


def agreement(paths, run, other):
    return ["agreement", str(paths[other]), str(paths[run]), "--out", str(paths["out"] / "a")]


def agreement_json(paths, run, other):
    return [*agreement(paths, run, other), "--format", "json"]


@pytest.mark.parametrize("command, reads, stream", [
    pytest.param(export, "export writes the answers of", "out", id="export"),
    pytest.param(score, "the scorers score the answers of", "out", id="score"),
    pytest.param(gate, "the gate pairs the answers of", "err", id="gate-beside-its-summary"),
    pytest.param(agreement, "agreement pairs the grades of", "out", id="agreement"),
    pytest.param(agreement_json, "agreement pairs the grades of", "err",
                 id="agreement-json-stays-parseable"),
])
def test_a_command_reading_the_first_epoch_says_so_for_a_run_of_several(
        runs, capsys, command, reads, stream):
    assert main(command(runs, "one", "same")) == 0
    printed = capsys.readouterr()
    assert "epoch 1 only" not in printed.out + printed.err
    assert main(command(runs, "two", "one")) == 0
    printed = capsys.readouterr()
    lines = [line for line in getattr(printed, stream).splitlines() if "epoch 1 only" in line]
    assert lines == [f"note: {runs['two']} holds 2 " + NOTE.format(reads=reads)
                     + ", as every table of the report does (`freshrag report` shows the spread "
                       "across epochs)" + ("; --every-epoch writes them all"
                                           if command is export else "")]
    if command is agreement_json:
        json.loads(printed.out)  # the note kept out of the JSON


def test_export_writes_the_first_epoch_only(runs, capsys):
    assert main(export(runs, "two", "one")) == 0
    records = (runs["out"] / "x.jsonl").read_text().splitlines()
    assert len(read_samples(runs["two"] / "samples.jsonl", every_epoch=True)) == 12
    assert len(records) == len(read_samples(runs["two"] / "samples.jsonl")) == 6
    assert {json.loads(record)["epoch"] for record in records} == {1}


@pytest.mark.parametrize("fmt", ["jsonl", "ragas"])
def test_export_every_epoch_writes_each_answer_with_its_epoch(runs, capsys, fmt):
    out = runs["out"] / f"every.{fmt}.jsonl"
    assert main(["export", str(runs["two"]), "--format", fmt, "--every-epoch",
                 "--out", str(out)]) == 0
    assert "epoch 1 only" not in capsys.readouterr().out
    records = [json.loads(line) for line in out.read_text().splitlines()]
    keys = [record if fmt == "jsonl" else record["user_input"][0]["metadata"]
            for record in records]
    rows = read_samples(runs["two"] / "samples.jsonl", every_epoch=True)
    assert sorted((k["system"], k["question_id"], k["epoch"]) for k in keys) == sorted(
        (row["system"], row["question_id"], row["epoch"]) for row in rows)
    assert {k["epoch"] for k in keys} == {1, 2}


def line_of(epoch=None, **fields):
    return {**sample("q1", "naive"), **fields, **({"epoch": epoch} if epoch is not None else {})}


@pytest.mark.parametrize("rows, highest", [
    pytest.param([line_of(), line_of()], 1, id="one-epoch-names-none"),
    pytest.param([line_of(1), line_of(3), line_of(2)], 3, id="the-highest-not-the-last"),
    pytest.param([line_of(answer='he said "epoch": 7')], 1, id="an-answer-quoting-an-epoch"),
    pytest.param([line_of(details={"epoch": 9})], 1, id="a-system-s-own-epoch-field"),
    pytest.param([line_of(details={"epoch": 9}, epoch=2)], 2, id="a-detail-beside-the-row-s"),
    pytest.param([line_of(epoch=None), {"epoch": 5}], 1, id="a-line-the-readers-skip"),
])
def test_the_highest_epoch_is_the_rows_own_field(tmp_path, rows, highest):
    assert highest_epoch(write_run(tmp_path / "run", rows)) == highest


def test_a_directory_without_samples_has_one_epoch(tmp_path):
    assert highest_epoch(tmp_path) == 1

"""Every command with an output file and input files refuses an output that would overwrite one
of its inputs (harness/core/outputs.py), in one line, before it reads a model, calls an endpoint
or writes a byte: the input is left as it was."""

import json
import pickle

import pytest

from freshrag.cli.main import main
from tests.support.datasets import write_dataset
from tests.support.legacy import row
from tests.support.runs import sample, write_run

LOG = '{"query": "who won the election"}\n'


def needs_over_its_log(tmp):
    log = tmp / "queries.jsonl"
    log.write_text(LOG, encoding="utf-8")
    return ["needs", "--queries", str(log), "--out", str(log)], log


def needs_json_over_its_log(tmp):
    log = tmp / "needs.json"  # --out needs.txt writes its .json beside it: this file
    log.write_text(LOG, encoding="utf-8")
    return ["needs", "--queries", str(log), "--out", str(tmp / "needs.txt")], log


def build_over_its_needs(tmp):
    needs = tmp / "dataset" / "needs.jsonl"  # the needs style's own record file
    needs.parent.mkdir()
    needs.write_text("Results of local elections\n", encoding="utf-8")
    return ["build", "--dump", str(tmp / "wiki.xml"), "--cutoff", "2021-09-30", "--out",
            str(tmp / "dataset"), "--needs", str(needs)], needs


def label_over_its_hand_labels(tmp):
    write_dataset(tmp / "dataset")
    hand = tmp / "dataset" / "labels.jsonl"
    hand.write_text('{"id": "q00001", "label": "fact_single"}\n', encoding="utf-8")
    return ["label", str(tmp / "dataset"), "--hand-labels", str(hand)], hand


def mix_into_its_dataset(tmp):
    questions, _ = write_dataset(tmp / "dataset")
    return ["mix", str(tmp / "dataset"), "--fresh", "1", "--n", "1",
            "--out", str(tmp / "dataset")], questions


def filter_into_its_dataset(tmp):
    questions, _ = write_dataset(tmp / "dataset")
    write_run(tmp / "run", [sample("q00001", "baseline", 2)])
    return ["filter", str(tmp / "run"), "--dataset", str(tmp / "dataset"),
            "--out", str(tmp / "dataset")], questions


def filter_over_its_run(tmp):
    write_dataset(tmp / "dataset")
    run = write_run(tmp / "run", [sample("q00001", "baseline", 2)], {"kind": "run"})
    return ["filter", str(run), "--dataset", str(tmp / "dataset"), "--out", str(run)], \
        run / "manifest.json"


def import_over_its_answers(tmp):
    write_dataset(tmp / "dataset")
    answers = tmp / "run" / "samples.jsonl"
    answers.parent.mkdir()
    answers.write_text(json.dumps({"question": "How many bridges does Town 0 have?",
                                   "answer": "Three."}) + "\n", encoding="utf-8")
    return ["import", str(answers), "--system", "mine", "--dataset", str(tmp / "dataset"),
            "--out", str(tmp / "run"), "--no-probe"], answers


def import_legacy_over_its_pickle(tmp):
    pickled = tmp / "run" / "samples.jsonl"
    pickled.parent.mkdir()
    pickled.write_bytes(pickle.dumps([row(0, 4, 4)]))
    return ["import-legacy", str(pickled), "--dataset", "A_f", "--system", "naive",
            "--out", str(tmp / "run")], pickled


def report_html_over_its_run(tmp):
    write_run(tmp / "run", [sample("q1", "naive")])
    return ["report", str(tmp / "run"), "--html", str(tmp / "run" / "samples.jsonl")], \
        tmp / "run" / "samples.jsonl"


@pytest.mark.parametrize("case", [
    needs_over_its_log, needs_json_over_its_log, build_over_its_needs,
    label_over_its_hand_labels, mix_into_its_dataset, filter_into_its_dataset,
    filter_over_its_run, import_over_its_answers,
    import_legacy_over_its_pickle, report_html_over_its_run,
], ids=lambda case: case.__name__.replace("_", "-"))
def test_an_output_over_an_input_is_refused_and_the_input_kept(tmp_path, monkeypatch, capsys,
                                                               case):
    monkeypatch.chdir(tmp_path)  # the response cache, if any, goes in ./results
    argv, given = case(tmp_path)
    before = given.read_bytes()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("freshrag: error: ") and err.count("\n") == 1, err
    assert "which this command reads: writing it would overwrite its own input" in err
    assert f"({given})" in err
    assert given.read_bytes() == before
    assert not (tmp_path / "results").exists()  # no cache opened, nothing written

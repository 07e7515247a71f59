"""`freshrag filter` (builders/measured.py) on a run made against the fake server: the questions
kept are exactly those the baseline answer was graded below the threshold for, the articles stay
whole, the manifest counts every verdict; and every refusal names its input."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from freshrag.cli.main import main
from freshrag.core.dataset import load_dataset_dir, sha256_file
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from tests.support.datasets import write_dataset, write_jsonl
from tests.support.fake_openai_server import FakeOpenAIServer, forced_tool_name
from tests.support.fakes import grade_call, use_endpoint
from tests.support.runs import sample, write_run

TOWNS = 8
FAILED_TOWN, UNSCORED_TOWN = 6, 7


def town(request) -> int:
    """The town a request is about (its question names it)."""
    return int(re.search(r"Town (\d+)", json.dumps(request["messages"])).group(1))


def reply(request):
    """Answers every question but FAILED_TOWN's (refused: the pair fails); a judge whose
    truthfulness runs 1..5 with the town's number, and no grade for UNSCORED_TOWN."""
    if forced_tool_name(request) == "submit_grade":
        if town(request) == UNSCORED_TOWN:
            return {"content": "I will not grade this."}
        return grade_call(town(request) % 5 + 1, 3)
    if town(request) == FAILED_TOWN:
        return {"error": {"status": 400, "message": "refused"}}
    return {"content": "It has some bridges."}


@pytest.fixture(scope="module")
def measured_run(tmp_path_factory):
    """A dataset of TOWNS towns and a run of baseline and oracle on it, with the fake server."""
    root = tmp_path_factory.mktemp("measured")
    write_dataset(root / "towns", TOWNS, fields=lambda i: {"id": f"t{i}", "category": "town"})
    with FakeOpenAIServer(reply=reply) as server, pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        use_endpoint(mp, server.base_url, "sk-measured")
        assert main(["run", "--dataset", str(root / "towns"), "--systems", "baseline,oracle",
                     "--out", str(root / "run"), "--no-probe", "--concurrency", "2"]) == 1  # a pair failed
    return root


def grades(run_dir, system="baseline"):
    """question id -> truthfulness (None: unscored or failed) of the run's rows of `system`."""
    return {row["question_id"]: (row["grade"] or {}).get("truthfulness")
            for row in read_samples(run_dir / "samples.jsonl") if row["system"] == system}


def filtered(root, tmp_path, *extra):
    out = tmp_path / "fresh"
    status = main(["filter", str(root / "run"), "--dataset", str(root / "towns"),
                   "--out", str(out), *extra])
    return status, out


@pytest.mark.parametrize("known_at", [2, 4, 5])
def test_the_kept_questions_are_those_graded_below_the_threshold(measured_run, tmp_path,
                                                                 known_at):
    status, out = filtered(measured_run, tmp_path, "--known-at", str(known_at))
    assert status == 0
    graded = grades(measured_run / "run")
    kept = [row["id"] for row in read_jsonl(out / "questions.jsonl")]
    assert kept == [qid for qid in (f"t{i}" for i in range(TOWNS))
                    if graded[qid] is not None and graded[qid] < known_at]
    assert 0 < len(kept) < TOWNS - 2  # the threshold cut some graded questions each way
    source = {row["id"]: row for row in read_jsonl(measured_run / "towns" / "questions.jsonl")}
    assert all(row == source[row["id"]] for row in read_jsonl(out / "questions.jsonl"))
    assert sha256_file(out / "articles.jsonl") == \
        sha256_file(measured_run / "towns" / "articles.jsonl")
    assert len(load_dataset_dir(out).questions) == len(kept)  # a dataset a run takes


def test_the_manifest_says_what_was_kept_and_why(measured_run, tmp_path, capsys):
    status, out = filtered(measured_run, tmp_path)
    said = capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    record = manifest["measured"]
    graded = grades(measured_run / "run")
    scored = [t for t in graded.values() if t is not None]
    assert record["counts"] == {"kept": sum(t < 4 for t in scored),
                                "known": sum(t >= 4 for t in scored),
                                "unscored": 1, "failed": 1, "not_in_run": 0}
    assert (record["system"], record["known_at"], record["answer_model"],
            record["matched_by"]) == ("baseline", 4, "fake-model", "questions sha256")
    assert record["run"] == str(measured_run / "run") and manifest["kind"] == "dataset"
    assert "not kept" in record["rule"]
    assert f"{record['counts']['kept']} of {TOWNS} questions kept" in said
    assert "1 unscored, 1 failed, 0 not in the run" in said


def test_questions_the_run_did_not_ask_are_counted_and_not_kept(measured_run, tmp_path):
    """A run of fewer questions (--limit) than the dataset holds, matched by its hashes."""
    run = shutil.copytree(measured_run / "run", tmp_path / "run")
    rows = [row for row in read_jsonl(run / "samples.jsonl") if row["question_id"] != "t0"]
    write_jsonl(run / "samples.jsonl", rows)
    assert main(["filter", str(run), "--dataset", str(measured_run / "towns"),
                 "--out", str(tmp_path / "fresh")]) == 0
    record = json.loads((tmp_path / "fresh" / "manifest.json").read_text())["measured"]
    assert record["counts"]["not_in_run"] == 1
    assert "t0" not in [row["id"] for row in read_jsonl(tmp_path / "fresh" / "questions.jsonl")]


def test_another_system_measures_when_named(measured_run, tmp_path):
    status, out = filtered(measured_run, tmp_path, "--system", "oracle")
    assert status == 0
    oracle = grades(measured_run / "run", "oracle")
    kept = [row["id"] for row in read_jsonl(out / "questions.jsonl")]
    assert kept == [qid for qid, t in sorted(oracle.items()) if t is not None and t < 4]


# --------------------------------------------------------------------------- refusals


def refused(capsys, *argv) -> str:
    assert main(list(map(str, argv))) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_a_run_without_the_system_is_refused(measured_run, tmp_path, capsys):
    err = refused(capsys, "filter", measured_run / "run", "--dataset", measured_run / "towns",
                  "--system", "naive", "--out", tmp_path / "fresh")
    assert str(measured_run / "run") in err and "no answers of system 'naive'" in err
    assert "baseline, oracle" in err and not (tmp_path / "fresh").exists()


def test_a_run_made_on_another_dataset_is_refused(measured_run, tmp_path, capsys):
    other = tmp_path / "other"
    write_dataset(other, TOWNS, fields=lambda i: {"id": f"x{i}"})
    err = refused(capsys, "filter", measured_run / "run", "--dataset", other,
                  "--out", tmp_path / "fresh")
    assert str(measured_run / "run") in err and "made on another dataset" in err
    assert str(other / "questions.jsonl") in err and "'t0'" in err


def test_a_dataset_of_the_same_ids_but_other_questions_is_refused(measured_run, tmp_path,
                                                                   capsys):
    other = tmp_path / "other"
    write_dataset(other, TOWNS, fields=lambda i: {"id": f"t{i}"},
                  content=lambda i: f"Town {i} has a river.")
    rows = [{**row, "question": row["question"].replace("bridges", "rivers")}
            for row in read_jsonl(other / "questions.jsonl")]
    write_jsonl(other / "questions.jsonl", rows)
    err = refused(capsys, "filter", measured_run / "run", "--dataset", other,
                  "--out", tmp_path / "fresh")
    assert "made on another dataset" in err and "reads otherwise there" in err


@pytest.mark.parametrize("where", ["the-dataset", "a-filled-directory"])
def test_an_out_that_would_overwrite_files_is_refused(measured_run, tmp_path, capsys, where):
    if where == "the-dataset":
        out = measured_run / "towns"
    else:
        out = tmp_path / "fresh"
        out.mkdir()
        (out / "questions.jsonl").write_text("mine\n")
    before = (out / "questions.jsonl").read_text()
    err = refused(capsys, "filter", measured_run / "run", "--dataset", measured_run / "towns",
                  "--out", out)
    assert str(out / "questions.jsonl") in err or f"{out}: holds questions.jsonl" in err
    assert (out / "questions.jsonl").read_text() == before


def hand_dataset(directory, count):
    """A dataset whose questions are those of tests/support/runs.py's `sample` rows, Q0.."""
    ids = [f"Q{i}" for i in range(count)]
    write_dataset(directory, questions=[{"id": q, "title": f"Gold {q}", "question": f"What is {q}?"}
                                        for q in ids],
                  articles=[{"title": f"Gold {q}", "content": f"{q} is a town."} for q in ids])
    return directory


def test_rows_from_two_answer_models_are_refused(tmp_path, capsys):
    write_run(tmp_path / "run", [sample("Q0", "baseline", 2, answer="model-a"),
                                 sample("Q1", "baseline", 2, answer="model-b")])
    err = refused(capsys, "filter", tmp_path / "run", "--dataset", hand_dataset(tmp_path / "d", 2),
                  "--out", tmp_path / "fresh")
    assert str(tmp_path / "run") in err and "2 answer models (model-a, model-b)" in err


def test_a_run_where_every_question_is_known_keeps_nothing_and_says_so(tmp_path, capsys):
    write_run(tmp_path / "run", [sample(f"Q{i}", "baseline", 5) for i in range(2)])
    err = refused(capsys, "filter", tmp_path / "run", "--dataset", hand_dataset(tmp_path / "d", 2),
                  "--out", tmp_path / "fresh")
    assert "nothing to keep" in err and "2 known" in err and not (tmp_path / "fresh").exists()


def test_a_hand_made_run_is_matched_by_question_id(tmp_path):
    """No manifest, so no hashes: the rows' ids and texts match the dataset's."""
    write_run(tmp_path / "run", [sample("Q0", "baseline", 2), sample("Q1", "baseline", 4)])
    assert main(["filter", str(tmp_path / "run"), "--dataset", str(hand_dataset(tmp_path / "d", 2)),
                 "--out", str(tmp_path / "fresh")]) == 0
    record = json.loads((tmp_path / "fresh" / "manifest.json").read_text())["measured"]
    assert (record["matched_by"], record["answer_model"]) == ("question ids", "model-a")
    assert [r["id"] for r in read_jsonl(tmp_path / "fresh" / "questions.jsonl")] == ["Q0"]


def test_a_directory_without_samples_is_refused(tmp_path, capsys):
    write_dataset(tmp_path / "towns", 2)
    (tmp_path / "run").mkdir()
    err = refused(capsys, "filter", tmp_path / "run", "--dataset", tmp_path / "towns",
                  "--out", tmp_path / "fresh")
    assert f"{tmp_path / 'run'}: no samples.jsonl" in err

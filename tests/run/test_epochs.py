"""`freshrag run --epochs N` (docs/running.md#epochs): each pair answered and graded N times, a row
per epoch, each epoch asked anew past the response cache, a resume asking only the epochs not
finished, the dry run counting every epoch, and the tables reading the first."""

import json

import pytest

from freshrag.core.dataset import load_dataset
from freshrag.core.errors import UserError
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.row_check import sample_problem
from freshrag.core.samples import read_samples, sample_row
from freshrag.core.types import Question, SystemAnswer
from freshrag.run.config import RunConfig
from freshrag.run.inputs import RunOptions
from freshrag.run.plan import make_plan
from tests.support.costs import table
from tests.support.fake_batches import FakeBatches
from tests.support.fakes import varying_reply
from tests.support.runs import run_cli, sample

PAIRS = 6  # three towns, baseline and oracle
SAMPLES = "samples.jsonl"


@pytest.fixture
def varying(fake_server):
    return fake_server(reply=varying_reply())


def run(tmp_path, *extra):
    return run_cli(tmp_path, "--no-probe", *extra)


def rows_of(tmp_path, name="run"):
    return read_samples(tmp_path / name / SAMPLES, every_epoch=True)


def test_three_epochs_write_three_rows_per_pair_each_asked_anew(tmp_path, varying):
    assert run(tmp_path, "--epochs", "3") == 0
    rows = rows_of(tmp_path)
    assert sorted((r["question_id"], r["system"], r["epoch"]) for r in rows) == sorted(
        (f"q{i:05d}", s, e) for i in range(1, 4) for s in ("baseline", "oracle")
        for e in (1, 2, 3))
    assert varying.calls == 2 * 3 * PAIRS  # an answer and a grade per pair and epoch
    assert len({r["answer"] for r in rows}) == 3 * PAIRS  # no epoch answered from another's cache
    assert not any(c["cache_hit"] for r in rows for c in r["calls"])
    first = read_samples(tmp_path / "run" / SAMPLES)  # what the tables read: the first epoch
    assert len(first) == PAIRS and {r["epoch"] for r in first} == {1}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["epochs"] == 3


def test_a_resume_asks_only_the_epochs_not_finished(tmp_path, varying):
    assert run(tmp_path, "--epochs", "3", "--no-cache") == 0
    samples = tmp_path / "run" / SAMPLES
    lines = samples.read_text().splitlines(keepends=True)
    kept = lines[:7]  # as a kill leaves it: the first rows, in the order the pairs finished
    samples.write_text("".join(kept))
    finished = {(r["question_id"], r["system"], r["epoch"]) for r in map(json.loads, kept)}
    varying.reset_counts()
    assert run(tmp_path, "--epochs", "3", "--no-cache") == 0  # no cache: every call is sent
    assert varying.calls == 2 * (3 * PAIRS - len(finished))
    rows = rows_of(tmp_path)
    assert len(rows) == 3 * PAIRS and len(samples.read_text().splitlines()) == 3 * PAIRS
    kept_rows = [json.loads(line) for line in kept]
    assert all(row in rows for row in kept_rows)  # the finished epochs' rows, untouched


def test_raising_the_epochs_asks_only_the_new_one_and_lowering_them_asks_nothing(tmp_path,
                                                                                 varying):
    assert run(tmp_path, "--epochs", "3") == 0
    varying.reset_counts()
    assert run(tmp_path, "--epochs", "4") == 0
    assert varying.calls == 2 * PAIRS
    rows = rows_of(tmp_path)
    assert sorted(r["epoch"] for r in rows) == sorted([1, 2, 3, 4] * PAIRS)
    varying.reset_counts()
    assert run(tmp_path, "--epochs", "2") == 0 and run(tmp_path) == 0
    assert varying.calls == 0
    assert len(rows_of(tmp_path)) == 4 * PAIRS  # the higher epochs' rows stay


def test_the_cache_serves_epoch_one_as_before_and_a_rerun_of_the_same_epochs(tmp_path, fake):
    assert run(tmp_path) == 0  # one epoch: the keys of a run before --epochs
    first = [json.dumps(request, sort_keys=True) for request in fake.requests]
    fake.reset_counts()
    assert run_cli(tmp_path, "--no-probe", "--epochs", "2", "--out", str(tmp_path / "b")) == 0
    # epoch 1 from the cache; epoch 2 asked, byte for byte the requests of epoch 1: the epoch is
    # in the key, never in the request
    assert sorted(json.dumps(request, sort_keys=True) for request in fake.requests) == sorted(first)
    fake.reset_counts()
    assert run_cli(tmp_path, "--no-probe", "--epochs", "2", "--out", str(tmp_path / "c")) == 0
    assert fake.calls == 0
    rows = rows_of(tmp_path, "c")
    assert len(rows) == 2 * PAIRS and all(c["cache_hit"] for r in rows for c in r["calls"])


def test_the_dry_run_counts_every_epoch_not_yet_asked(tmp_path, fake, capsys):
    assert run(tmp_path, "--epochs", "3", "--dry-run") == 0
    fresh = table(capsys.readouterr().out)
    assert {role: int(fresh[role][1]) for role in ("answer", "judge")} == {
        "answer": 3 * PAIRS, "judge": 3 * PAIRS}
    assert run(tmp_path) == 0
    capsys.readouterr()
    live = fake.calls
    assert run(tmp_path, "--epochs", "3", "--dry-run") == 0
    left = table(capsys.readouterr().out)
    assert {role: int(left[role][1]) for role in ("answer", "judge")} == {
        "answer": 2 * PAIRS, "judge": 2 * PAIRS}
    assert fake.calls == live  # a dry run sends nothing


@pytest.mark.parametrize("value", [
    pytest.param("0", id="zero"),
    pytest.param("101", id="over-the-bound"),
    pytest.param("two", id="not-a-number"),
    pytest.param("1.5", id="not-whole"),
])
def test_epochs_out_of_range_are_refused_before_any_call(tmp_path, fake, capsys, value):
    with pytest.raises(SystemExit) as exit_:
        run(tmp_path, "--epochs", value)
    assert exit_.value.code == 2 and "--epochs" in capsys.readouterr().err
    assert fake.calls == 0


@pytest.mark.parametrize("value", [pytest.param(0, id="zero"), pytest.param(101, id="over"),
                                   pytest.param(True, id="bool"), pytest.param("3", id="text")])
def test_run_options_refuse_epochs_out_of_range_naming_the_field(value):
    with pytest.raises(UserError, match="RunOptions.epochs"):
        RunOptions(epochs=value)


QUESTION = Question("q1", "When?", "Gold q1")


@pytest.mark.parametrize("epoch, problem", [
    pytest.param(None, None, id="absent"),
    pytest.param(1, None, id="first"),
    pytest.param(100, None, id="hundredth"),
    pytest.param(0, "field 'epoch' must be a count from 1, got 0", id="zero"),
    pytest.param(-2, "field 'epoch' must be a count from 1, got -2", id="negative"),
    pytest.param(True, "field 'epoch' must be a whole number or null, got True", id="bool"),
    pytest.param(2.0, "field 'epoch' must be a whole number or null, got 2.0", id="float"),
    pytest.param("2", "field 'epoch' must be a whole number or null, got '2'", id="text"),
])
def test_a_row_s_epoch_is_checked_on_reading(epoch, problem):
    row = sample_row("A_f", QUESTION, "naive", SystemAnswer("Then."), None, [], 0.1)
    assert "epoch" not in row  # a run of one epoch writes none
    if epoch is not None:
        row = {**row, "epoch": epoch}
    assert sample_problem(json.loads(json.dumps(row))) == problem


def test_the_last_row_of_each_epoch_wins_and_the_tables_read_the_first(tmp_path):
    rows = [{**sample("q1", "naive", 2), "epoch": 1}, {**sample("q1", "naive", 3), "epoch": 2},
            {**sample("q1", "naive", 4), "epoch": 2},  # epoch 2 tried again: this one wins
            sample("q2", "naive", 5),  # a row of a run of one epoch: epoch 1
            {**sample("q2", "naive", 1), "epoch": None}]  # null is 1 too: this one wins
    writer = JsonlWriter(tmp_path / SAMPLES)
    for row in rows:
        writer.write(row)
    writer.close()
    every = read_samples(tmp_path / SAMPLES, every_epoch=True)
    assert [(r["question_id"], r.get("epoch"), r["grade"]["truthfulness"]) for r in every] == [
        ("q1", 1, 2), ("q1", 2, 4), ("q2", None, 1)]
    assert [r["grade"]["truthfulness"] for r in read_samples(tmp_path / SAMPLES)] == [2, 1]


def test_the_scorers_beyond_the_judge_are_planned_for_the_first_epoch_only(tmp_path):
    data = tmp_path / "q.jsonl"
    data.write_text('{"id": "q1", "question": "What is q1?", "title": "Gold q1"}\n')
    articles = tmp_path / "a.jsonl"
    articles.write_text('{"title": "Gold q1", "content": "Gold q1 is a town."}\n')
    dataset = load_dataset(data, articles)
    config = RunConfig(out=tmp_path / "run", systems=("naive",), epochs=3,
                       scorers=("judge", "answer-relevance"))
    rows = [{**sample("q1", "naive"), "epoch": epoch} for epoch in (1, 3)]
    plan = make_plan(dataset, config, rows, None)
    assert [(q.id, name, epoch) for q, name, epoch in plan.pairs] == [("q1", "naive", 2)]
    assert [(row["epoch"], name) for row, name, _ in plan.scores] == [(1, "answer-relevance")]


def test_the_batch_pre_pass_sends_every_epoch_and_the_run_reads_them_from_the_cache(
        tmp_path, fake_server):
    batches = FakeBatches(polls=0)
    server = fake_server(batches=batches)
    batch = ("--batch", "--batch-poll", "0.05")
    assert run(tmp_path / "one", *batch) == 0  # its own directory, and cache: all sent
    one = set(batches.submitted)
    assert run(tmp_path / "two", "--epochs", "2", *batch) == 0
    assert server.calls == 0  # every chat call came from a batch, through the cache
    rows = rows_of(tmp_path / "two")
    assert sorted(r["epoch"] for r in rows) == sorted([1, 2] * PAIRS) and all(
        c["cache_hit"] for r in rows for c in r["calls"])
    # epoch 1 sent the one-epoch run's requests again, under its keys; epoch 2 as many new ones
    assert len(batches.submitted) == 2 * len(one)
    assert {key: n for key, n in batches.submitted.items() if key in one} == dict.fromkeys(one, 2)

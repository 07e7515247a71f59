"""A run's shard (harness/run/shard.py, docs/running.md#on-a-slurm-array-or-kubernetes-jobs): `--shard
i/N` read strictly, the plan's slice chosen by question and system alone (not by their places,
not by which other questions, systems or shards there are), every epoch of a pair with it, and a
run directory resumed with its own shard only."""

from __future__ import annotations

import dataclasses
import json

import pytest

import freshrag
from freshrag.cli.main import main
from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.run.config import RunConfig
from freshrag.run.inputs import InputError
from freshrag.run.plan import make_plan
from freshrag.run.shard import Shard, ShardError, parse_shard
from tests.support.runs import run_cli

SYSTEMS = ("baseline", "oracle", "naive")


def planned(config: RunConfig, dataset=None) -> set[tuple[str, str, int]]:
    plan = make_plan(dataset or load_dataset_dir(example_dir()), config, [], None)
    return {(question.id, name, epoch) for question, name, epoch in plan.pairs}


@pytest.mark.parametrize("text, shard", [
    pytest.param("2/3", Shard(2, 3), id="plain"),
    pytest.param(" 1 / 1 ", Shard(1, 1), id="spaces"),
    pytest.param("8/8", Shard(8, 8), id="last"),
])
def test_a_shard_is_read_as_i_of_n(text, shard):
    assert parse_shard(text) == shard and str(shard) == text.replace(" ", "")


@pytest.mark.parametrize("text, said", [
    pytest.param("0/3", "i must be from 1 to N (3)", id="zero"),
    pytest.param("4/3", "i must be from 1 to N (3)", id="past-n"),
    pytest.param("a/b", "expected i/N", id="letters"),
    pytest.param("1/0", "N must be at least 1", id="no-shards"),
    pytest.param("1/3/4", "expected i/N", id="three-parts"),
    pytest.param("-1/3", "expected i/N", id="negative"),
    pytest.param("", "expected i/N", id="empty"),
])
def test_a_bad_shard_is_a_usage_error_naming_the_option(text, said, capsys):
    with pytest.raises(ShardError, match=said.replace("(", r"\(").replace(")", r"\)")):
        parse_shard(text)
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--shard", text])
    assert stopped.value.code == 2
    assert "argument --shard: " in capsys.readouterr().err
    with pytest.raises(InputError, match="RunOptions.shard: "):
        freshrag.RunOptions(shard=text)


def test_run_options_take_a_shard_as_text_or_as_one():
    assert freshrag.RunOptions(shard="2/5").shard == Shard(2, 5)
    assert freshrag.RunOptions(shard=Shard(1, 2)).shard == Shard(1, 2)
    with pytest.raises(InputError, match="expected a Shard or 'i/N', got tuple"):
        freshrag.RunOptions(shard=(1, 2))  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_shards_of_n_split_the_plan_each_pair_once(tmp_path, count):
    whole = planned(RunConfig(out=tmp_path, systems=SYSTEMS, epochs=2))
    slices = [planned(RunConfig(out=tmp_path, systems=SYSTEMS, epochs=2,
                                shard=Shard(i, count))) for i in range(1, count + 1)]
    assert sum(len(part) for part in slices) == len(whole) == 40 * 3 * 2
    assert set().union(*slices) == whole
    for part in slices:  # every epoch of a pair goes with it
        assert {(q, s) for q, s, e in part if e == 1} == {(q, s) for q, s, e in part if e == 2}
        assert len(part) > len(whole) / count / 2  # the hash spreads the pairs


def test_a_shards_pairs_change_with_neither_the_order_nor_the_other_pairs(tmp_path):
    data = load_dataset_dir(example_dir())
    shard = Shard(2, 3)
    mine = planned(RunConfig(out=tmp_path, systems=("baseline", "oracle"), shard=shard), data)
    reordered = dataclasses.replace(data, questions=data.questions[::-1])
    more = planned(RunConfig(out=tmp_path, systems=("react", "oracle", "naive", "baseline"),
                             shard=shard), reordered)
    fewer = planned(RunConfig(out=tmp_path, systems=("baseline", "oracle"), limit=20,
                              shard=shard), data)
    assert {p for p in more if p[1] in ("baseline", "oracle")} == mine
    assert fewer == {p for p in mine if p[0] in {q.id for q in data.questions[:20]}}


def test_a_shard_is_recorded_and_resumed_with_itself_only(tmp_path, fake, capsys):
    assert run_cli(tmp_path, "--shard", "1/2") == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["shard"] == {"index": 1, "count": 2}
    fake.reset_counts()
    assert run_cli(tmp_path, "--shard", "1/2") == 0 and fake.calls == 0  # resumed: nothing left
    for again, said in ((("--shard", "2/2"), "holds shard 1/2 of a run, not shard 2/2"),
                        ((), "holds shard 1/2 of a run, not a whole run")):
        capsys.readouterr()
        assert run_cli(tmp_path, *again) == 2
        assert said in capsys.readouterr().err
    assert fake.calls == 0


def test_a_whole_run_is_not_resumed_as_a_shard(tmp_path, fake, capsys):
    assert run_cli(tmp_path, "--limit", "2") == 0
    capsys.readouterr()
    assert run_cli(tmp_path, "--shard", "1/2") == 2
    assert "holds pairs outside shard 1/2" in capsys.readouterr().err


def test_a_shard_whose_manifest_lost_the_record_resumes_by_its_rows(tmp_path, fake):
    """Between the runner's first write of a resumed manifest and the plan's, the record is not
    on disk: a kill there leaves rows that tell the shard instead."""
    assert run_cli(tmp_path, "--shard", "2/3") == 0
    path = tmp_path / "run" / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["shard"]
    path.write_text(json.dumps(manifest))
    fake.reset_counts()
    assert run_cli(tmp_path, "--shard", "2/3") == 0 and fake.calls == 0
    assert json.loads(path.read_text())["shard"] == {"index": 2, "count": 3}


def test_evaluate_and_its_estimate_take_the_shard_alone(tmp_path, fake, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = load_dataset_dir(example_dir())
    mine = {(q.id, name) for q in data.questions[:10] for name in ("baseline", "oracle")
            if Shard(3, 4).holds(q.id, name)}
    options = dict(systems="baseline,oracle", limit=10, probe=None, out=tmp_path / "run",
                   shard="3/4")
    assert f"dry run: {len(mine)} pairs" in freshrag.estimate(data, **options)
    result = freshrag.evaluate(data, **options)
    assert {(answer.question_id, answer.system) for answer in result.answers} == mine

"""`freshrag merge` (harness/workflows/merge.py; docs/running.md#on-a-slurm-array-or-kubernetes-jobs):
shards 1/3, 2/3 and 3/3 of the example set, each run by `freshrag run --shard`, merged into
a run whose report is the single run's byte for byte; a shard missing or unfinished named and the
run reported incomplete; shards of other runs, a shard twice, and an --out that is a shard, a run
or a symbolic link refused. All against the fake OpenAI-compatible server, each pair's clock a
fake one: a pair's latency is measured, and two runs measure it apart."""

from __future__ import annotations

import itertools
import json
import shutil
import types
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import SECRET, use_endpoint
from tests.support.links import PRECIOUS

COMMON = ("--systems", "baseline,oracle", "--concurrency", "1", "--today", "2024-06-01")
SHARDS = ("shards/s1", "shards/s2", "shards/s3")


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """The single run of the example set (single/run), its three shards (shards/s1..s3), and
    shard 2/3 of the same run with another seed (other/s2), all answered by the fake server."""
    root = tmp_path_factory.mktemp("made")
    with FakeOpenAIServer() as server, pytest.MonkeyPatch.context() as patch:
        use_endpoint(patch, server.base_url, SECRET)
        patch.chdir(root)
        for out, *extra in (("single/run",), *((SHARDS[i - 1], "--shard", f"{i}/3")
                                               for i in (1, 2, 3)),
                            ("other/s2", "--shard", "2/3", "--seed", "1")):
            clock = itertools.count(0, 0.25)  # each pair timed alike, in each run
            patch.setattr("freshrag.run.plan.time", types.SimpleNamespace(
                monotonic=lambda: next(clock)))
            assert main(["run", "--out", out, *COMMON, *extra]) == 0
    return root


@pytest.fixture
def work(made, tmp_path, monkeypatch) -> Path:
    """A copy of the runs to merge in, the working directory."""
    shutil.copytree(made, tmp_path / "work")
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "work"


def report(work: Path, where: str, capsys) -> str:
    """What `freshrag report run` prints in `where`, the run directory named alike in each."""
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work / where)
        assert main(["report", "run", "--out", "report"]) == 0
    return capsys.readouterr().out


def merged(capsys, *dirs: str, out: str = "merged/run") -> tuple[int, str]:
    """`freshrag merge`'s exit status, and what it printed on stdout and stderr."""
    capsys.readouterr()
    code = main(["merge", *dirs, "--out", out])
    printed = capsys.readouterr()
    return code, printed.out + printed.err


def test_three_shards_merged_report_as_the_single_run_byte_for_byte(work, capsys):
    code, printed = merged(capsys, "shards/s3", "shards/s1", "shards/s2")  # in any order
    assert code == 0 and "merged 3 of 3 shards (80 rows)" in printed
    assert report(work, "merged", capsys) == report(work, "single", capsys)
    pairs = [(row["question_id"], row["system"]) for row in
             read_samples(work / "single/run/samples.jsonl")]
    assert [(row["question_id"], row["system"]) for row in
            read_samples(work / "merged/run/samples.jsonl")] == pairs  # the single run's order
    single, joined = (json.loads((work / where / "run/manifest.json").read_text())
                      for where in ("single", "merged"))
    assert joined.pop("merged") == {"count": 3, "missing": [], "unfinished": [], "shards": [
        {"index": i, "dir": f"shards/s{i}", "finished": True} for i in (1, 2, 3)]}
    times = ("name", "started_at", "resumed_at", "finished_at")  # and the probe pass's:
    assert single["judge_probe"].pop("seconds") and joined["judge_probe"].pop("seconds")
    assert {k: v for k, v in joined.items() if k not in times} == {
        k: v for k, v in single.items() if k not in times}
    assert (work / "merged/run/summary.md").read_text() == (
        work / "single/run/summary.md").read_text()


def test_each_shard_holds_its_slice_and_records_it(work):
    seen = []
    for i, shard in enumerate(SHARDS, 1):
        assert json.loads((work / shard / "manifest.json").read_text())["shard"] == {
            "index": i, "count": 3}
        seen += [(row["question_id"], row["system"])
                 for row in read_samples(work / shard / "samples.jsonl")]
    assert sorted(seen) == sorted((row["question_id"], row["system"]) for row in
                                  read_samples(work / "single/run/samples.jsonl"))
    assert all(len(read_samples(work / shard / "samples.jsonl")) > 10 for shard in SHARDS)


def test_a_missing_shard_is_named_the_report_says_incomplete_and_a_rerun_completes(
        work, capsys):
    code, printed = merged(capsys, "shards/s1", "shards/s3")
    assert code == 1 and "missing: shard 2/3" in printed and "INCOMPLETE" in printed
    assert "run: INCOMPLETE: 2 of 3 shards merged (missing: 2/3): pairs are missing" in report(
        work, "merged", capsys)
    code, _ = merged(capsys, *SHARDS)  # the merge again, with the shard that came late
    assert code == 0
    assert report(work, "merged", capsys) == report(work, "single", capsys)


def test_a_shard_not_finished_is_named_and_merged_as_far_as_it_went(work, capsys):
    manifest = work / "shards/s2/manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "finished_at": None}))
    code, printed = merged(capsys, *SHARDS)
    assert code == 1 and "not finished: shard 2/3" in printed and "80 rows" in printed
    assert "INCOMPLETE: 3 of 3 shards merged (not finished: 2/3)" in report(
        work, "merged", capsys)


def test_shards_of_another_run_are_refused_naming_both_and_the_setting(work, capsys):
    code, err = merged(capsys, "shards/s1", "other/s2", "shards/s3")
    assert code == 2 and "shards/s1 and other/s2 are shards of different runs: seed is 0" in err
    assert not (work / "merged").exists()


def test_shards_of_another_count_are_refused(work, capsys):
    manifest = work / "shards/s2/manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()),
                                    "shard": {"index": 1, "count": 2}}))
    code, err = merged(capsys, "shards/s1", "shards/s2")
    assert code == 2 and "shards/s1 and shards/s2 are shards of different runs: the shard " \
        "count is 3 in shards/s1 and 2 in shards/s2" in err


@pytest.mark.parametrize("dirs, said", [
    pytest.param(("shards/s1", "shards/s1", "shards/s2"), "shards/s1: given twice", id="dir"),
    pytest.param(("shards/s1", "copy/s1"), "copy/s1: shard 1/3 is given twice, also as "
                 "shards/s1", id="copy"),
    pytest.param(("shards/s1", "single/run"), "single/run: holds a run that was not sharded",
                 id="not-a-shard"),
    pytest.param(("shards/s1", "nowhere"), "nowhere: no such run directory", id="absent"),
])
def test_a_shard_twice_or_no_shard_is_refused(work, capsys, dirs, said):
    shutil.copytree(work / "shards/s1", work / "copy/s1")
    code, err = merged(capsys, *dirs)
    assert code == 2 and said in err
    assert not (work / "merged").exists()


@pytest.mark.parametrize("out, said", [
    ("single/run", "holds a run that was not merged from shards"),
    ("shards/s2", "is one of the shards"),
    ("link", "a symbolic link"),
])
def test_an_out_that_is_no_merge_is_refused(work, capsys, out, said):
    (work / "link").symlink_to(work / "elsewhere", target_is_directory=True)
    before = (work / "single/run/samples.jsonl").read_bytes()
    code, err = merged(capsys, *SHARDS, out=out)
    assert code == 2 and said in err
    assert not (work / "elsewhere").exists()
    assert (work / "single/run/samples.jsonl").read_bytes() == before


@pytest.mark.parametrize("name", ["samples.jsonl", "summary.md"])
def test_a_link_among_the_merged_files_is_refused_before_a_write(work, capsys, target, name):
    (work / "merged/run").mkdir(parents=True)
    (work / "merged/run" / name).symlink_to(target)
    code, err = merged(capsys, *SHARDS)
    assert code == 2 and "symbolic link" in err
    assert target.read_text() == PRECIOUS
    assert sorted(path.name for path in (work / "merged/run").iterdir()) == [name]

"""The traffic stage of `freshrag build` (control questions about old A_r articles, general
queries from the shipped list) and `freshrag mix`, on a dump of released articles with the fake
OpenAI-compatible server as the builder; then a run over a mix with general queries."""

import json
from collections import Counter

import pytest

from freshrag.builders.traffic.general_queries import GENERAL_QUERIES
from freshrag.builders.traffic.mix import counts_for
from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from freshrag.scoring.judge import GENERAL_JUDGE_PROMPT, JUDGE_PROMPT
from tests.support.builds import CUTOFF, FRESH, OLD, traffic_build
from tests.support.wikidump import STAND_IN_CREATED


def test_build_adds_control_and_general_questions_with_kind_and_need(tmp_path, traffic_dump,
                                                                     fake):
    assert traffic_build(tmp_path, traffic_dump, "--control", "3", "--general", "4") == 0
    out = tmp_path / "dataset"
    questions = read_jsonl(out / "questions.jsonl")
    by_kind = {kind: [q for q in questions if q["kind"] == kind]
               for kind in ("fresh", "control", "general")}
    assert len(questions) == FRESH + 3 + 4
    assert [len(by_kind[k]) for k in by_kind] == [FRESH, 3, 4]
    assert all(q["need"] is True for q in by_kind["fresh"])
    assert all(q["need"] is False for q in by_kind["control"] + by_kind["general"])
    assert all(q["created"] == STAND_IN_CREATED and q["cutoff"] == CUTOFF
               for q in by_kind["control"])
    assert sorted(q["title"] for q in by_kind["control"]) == \
        sorted((out / "control.txt").read_text().splitlines())
    shipped = {text: category for category, text in GENERAL_QUERIES}
    assert all(q["title"] is None and shipped[q["question"]] == q["category"]
               for q in by_kind["general"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["traffic"]["counts"] == {"fresh": FRESH, "control": 3, "general": 4}
    assert manifest["traffic"]["control_created_before"] == "2020-09-30"  # 365 days before
    assert manifest["settings"]["control"] == 3 and manifest["settings"]["general"] == 4

    calls = fake.calls
    assert traffic_build(tmp_path, traffic_dump, "--control", "3", "--general", "4") == 0
    assert fake.calls == calls and len(read_jsonl(out / "questions.jsonl")) == len(questions)


def test_control_articles_must_exist_and_settings_must_match(tmp_path, traffic_dump, fake, capsys):
    assert traffic_build(tmp_path, traffic_dump, "--control", str(OLD + 1)) == 2
    assert f"--control {OLD + 1} asks for more articles than A_r holds created by 2020-09-30 " \
           f"({OLD}" in capsys.readouterr().err
    # the dataset is tied to its settings
    assert traffic_build(tmp_path, traffic_dump, "--general", "2") == 2
    assert "this dataset was built with control 9 (now 0), general 0 (now 2)" in \
        capsys.readouterr().err
    with pytest.raises(SystemExit):  # refused when parsed, before anything is built
        traffic_build(tmp_path, traffic_dump, "--general", str(len(GENERAL_QUERIES) + 1))
    assert f"argument --general: expected a whole number from 0 to {len(GENERAL_QUERIES)}" in \
        capsys.readouterr().err


@pytest.mark.parametrize("shares, n, counts", [
    pytest.param((0.1, 0.6, 0.3), 10, (1, 6, 3), id="exact"),
    pytest.param((1 / 3, 1 / 3, 1 / 3), 10, (4, 3, 3), id="largest-remainder"),
    pytest.param((0.0, 0.0, 1.0), 7, (0, 0, 7), id="one-kind"),
])
def test_mix_counts_add_up(shares, n, counts):
    got = counts_for(dict(zip(("fresh", "control", "general"), shares)), n)
    assert tuple(got.values()) == counts


def mix(dataset, out, shares, n, seed="1"):
    return main(["mix", str(dataset), "--fresh", str(shares[0]), "--control", str(shares[1]),
                 "--general", str(shares[2]), "--n", str(n), "--seed", seed, "--out", str(out)])


def test_mix_writes_the_composition_nested_and_runs(tmp_path, traffic_dump, fake, capsys):
    assert traffic_build(tmp_path, traffic_dump, "--control", "4", "--general", "4") == 0
    dataset = tmp_path / "dataset"
    small, large = tmp_path / "small", tmp_path / "large"
    assert mix(dataset, small, (0.5, 0.25, 0.25), 4) == 0
    assert mix(dataset, large, (0.5, 0.25, 0.25), 8) == 0
    rows = {d: read_jsonl(d / "questions.jsonl") for d in (small, large)}
    assert Counter(r["kind"] for r in rows[small]) == {"fresh": 2, "control": 1, "general": 1}
    assert {r["id"] for r in rows[small]} <= {r["id"] for r in rows[large]}  # nested
    assert (small / "articles.jsonl").read_bytes() == (dataset / "articles.jsonl").read_bytes()
    record = json.loads((small / "mix.json").read_text())
    assert record["counts"] == {"fresh": 2, "control": 1, "general": 1} and record["seed"] == 1
    assert mix(dataset, small, (0.5, 0.25, 0.25), 4) == 0  # the same mix again: nothing to do
    assert "written already" in capsys.readouterr().out

    run = tmp_path / "run"
    assert main(["run", "--dataset", str(small), "--systems", "baseline,oracle", "--out",
                 str(run), "--no-probe"]) == 0
    samples = read_samples(run / "samples.jsonl")
    general = [s for s in samples if s["kind"] == "general"]
    assert len(general) == 2 and all(s["status"] == "ok" and s["gold_title"] is None
                                     for s in general)
    assert all(s["details"] == {"gold_article": None} for s in general if s["system"] == "oracle")
    for row in samples:
        judge = [c for c in row["calls"] if c["role"] == "judge"][0]
        prompt = judge["messages"][0]["content"]
        assert prompt == (GENERAL_JUDGE_PROMPT if row["kind"] == "general" else JUDGE_PROMPT)
        assert ("Wikipedia article:" in judge["messages"][1]["content"]) == (row["kind"] != "general")


@pytest.mark.parametrize("shares, n, message", [
    pytest.param((0.5, 0.6, 0.3), 4, "--fresh 0.5 + --control 0.6 + --general 0.3 = 1.4; the "
                 "shares must add up to 1", id="shares-over-one"),
    pytest.param((1.0, 0.0, 0.0), 50, "the mix needs 50 fresh questions, the dataset holds 6",
                 id="too-few-of-a-kind"),
    pytest.param((1.5, 0.0, 0.0), 4, "argument --fresh: expected a share between 0 and 1",
                 id="share-out-of-range"),
])
def test_bad_mixes_are_refused_naming_the_option_or_kind(tmp_path, traffic_dump, fake, capsys,
                                                         shares, n, message):
    assert traffic_build(tmp_path, traffic_dump, "--general", "2") == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) if "argument" in message else _nothing():
        code = mix(tmp_path / "dataset", tmp_path / "m", shares, n)
        assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_traffic_stage_alone_on_a_dataset_made_elsewhere(tmp_path, capsys):
    """A directory holding questions and articles but no manifest (e.g. a released set):
    `--stage traffic` adds general queries (no model needed) and starts the manifest."""
    out = tmp_path / "released"
    out.mkdir()
    (out / "articles.jsonl").write_text(json.dumps({"title": "T", "content": "x" * 1200}) + "\n")
    (out / "questions.jsonl").write_text(json.dumps(
        {"id": "A_f-00000-0", "title": "T", "question": "What?", "kind": "fresh", "need": True}) + "\n")
    (out / "A_r.txt").write_text("T\n")
    assert main(["build", "--stage", "traffic", "--out", str(out), "--cutoff", CUTOFF,
                 "--general", "2"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert "traffic" in manifest["stages"] and manifest["traffic"]["counts"] == {
        "fresh": 1, "general": 2}
    assert "traffic: 1 fresh, 2 general" in capsys.readouterr().out


@pytest.mark.parametrize("cutoff, named", [
    ("0001-01-01", "is before 1990-01-01"),  # its control day was an OverflowError
    ("9999-12-31", "is not in the past (today is"),  # built an empty A_d without a word
    ("2021-W39-4", "is not a date (expected YYYY-MM-DD)"),  # read as 2021-09-30
])
def test_a_cutoff_outside_the_calendar_or_the_past_is_refused_before_anything_is_built(
        tmp_path, traffic_dump, fake, capsys, cutoff, named):
    status = traffic_build(tmp_path, traffic_dump, "--control", "1", "--general", "1",
                           "--cutoff", cutoff)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1, err  # one line, no traceback
    assert lines[0].startswith("freshrag: error: --cutoff: ") and cutoff in lines[0]
    assert named in lines[0]
    assert not (tmp_path / "dataset").exists() and fake.calls == 0

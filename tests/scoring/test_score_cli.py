"""`freshrag score` and `freshrag run --scorers` end to end against the fake OpenAI-compatible
server, whose replies are scripted per forced function: every scorer writes its rows into
scores.jsonl with its own role's tokens, a finished pass makes no call when run again, a pass
cut short resumes from the cache, judge repeats send distinct seeds, and the report and
`agreement` read the scores."""

import json

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from freshrag.scoring.store import SCORES, read_scores
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.dom import parse, viewer_samples
from tests.support.fake_openai_server import FakeOpenAIServer, forced_tool_name
from tests.support.fakes import SECRET, scorers_reply, use_endpoint

EVERY = "judge,faithfulness,answer-relevance,context-relevance,claims,abstention"


@pytest.fixture
def fake(fake_server):
    return fake_server(reply=scorers_reply)


def make_run(tmp_path, *extra):
    q, a = write_dataset(tmp_path, n=2, content=bridges_and_mayor)
    assert main(["run", "--questions", str(q), "--articles", str(a), "--out",
                 str(tmp_path / "run"), "--systems", "baseline,naive", "--no-probe",
                 "--index-dir", str(tmp_path / "index"), "--concurrency", "2", *extra]) == 0
    return tmp_path / "run"


def test_score_adds_every_scorer_and_a_rerun_makes_no_call(tmp_path, fake, capsys):
    run = make_run(tmp_path)
    samples = (run / "samples.jsonl").read_bytes()
    fake.reset_counts()
    assert main(["score", str(run), "--scorers", EVERY]) == 0
    scores = read_scores(run)
    assert len(scores) == 4 * 6  # 2 questions x 2 systems x 6 scorers
    by = {(s["system"], s["scorer"]): s for s in scores if s["question_id"] == "q00001"}
    for scorer in ("faithfulness", "context-relevance"):
        assert by["baseline", scorer]["status"] == "not_applicable"
        assert by["baseline", scorer]["reason"] == "nothing was retrieved"
        assert by["baseline", scorer]["calls"] == [] and by["baseline", scorer]["metrics"] == {}
        assert by["naive", scorer]["status"] == "scored"
    assert by["naive", "faithfulness"]["metrics"] == {"faithfulness": 1.0}
    # the verdicts were asked against the extracts the answer was given
    verdicts = by["naive", "faithfulness"]["calls"][1]["messages"][1]["content"]
    assert "Title: Town" in verdicts and "bridges" in verdicts
    assert by["naive", "claims"]["metrics"] == {"claims_precision": 1.0, "claims_recall": 1.0}
    assert 0 < by["baseline", "answer-relevance"]["metrics"]["answer_relevance"] <= 1
    assert by["naive", "abstention"]["details"]["source"] == "model"
    for score in scores:  # tokens per scorer role, apart from the system's and the run judge's
        roles = set(score["usage"])
        assert roles == ({"judge"} if score["scorer"] == "judge" else {"scorer"}) or not score["calls"]
    assert (run / "samples.jsonl").read_bytes() == samples  # the answers are never touched
    calls = fake.calls
    assert calls > 0
    assert main(["score", str(run), "--scorers", EVERY]) == 0
    assert fake.calls == calls  # everything finished: nothing asked again
    assert "0 scores asked now, 24 finished before" in capsys.readouterr().out


def test_a_pass_cut_short_resumes_from_the_cache(tmp_path, fake):
    run = make_run(tmp_path)
    assert main(["score", str(run), "--scorers", "faithfulness,claims"]) == 0
    lines = (run / SCORES).read_text().splitlines(keepends=True)
    (run / SCORES).write_text("".join(lines[:3]) + lines[3][:20])  # a kill mid-write
    calls = fake.calls
    assert main(["score", str(run), "--scorers", "faithfulness,claims"]) == 0
    assert fake.calls == calls  # the lost rows came back from the response cache
    assert len(read_scores(run)) == 8
    assert main(["score", str(run), "--scorers", "faithfulness,claims", "--no-cache"]) == 0
    assert fake.calls == calls  # and finished rows are never asked again, cache or not


def test_malformed_replies_are_unscored_with_the_reason_and_raw_reply(tmp_path, monkeypatch):
    with FakeOpenAIServer(reply=lambda r: scorers_reply(r, malformed={"submit_verdicts",
                                                                 "submit_abstention"})) as server:
        use_endpoint(monkeypatch, server.base_url, SECRET)
        run = make_run(tmp_path)
        assert main(["score", str(run), "--scorers", "faithfulness,abstention"]) == 0
    by = {(s["system"], s["scorer"]): s for s in read_scores(run) if s["question_id"] == "q00001"}
    for key in (("naive", "faithfulness"), ("naive", "abstention")):
        assert by[key]["status"] == "unscored" and by[key]["metrics"] == {}
        assert "invalid JSON" in by[key]["reason"]
        assert '{"oops": ' in by[key]["raw"]


def test_judge_repeats_send_distinct_seeds_and_report_their_spread(tmp_path, fake, capsys):
    run = make_run(tmp_path)
    fake.requests.clear()
    # without the cache: the run's own judge call (seed 0 too) would answer repeat 0
    assert main(["score", str(run), "--scorers", "judge", "--repeats", "3", "--no-cache"]) == 0
    seeds = sorted({r["seed"] for r in fake.requests if forced_tool_name(r) == "submit_grade"})
    assert seeds == [0, 2, 4]  # repeat k: seed + 2k
    out = capsys.readouterr().out
    assert "judge spread over repeats: 4 of 4 answers graded differently" in out
    assert "1/3 3/3 5/3" in out  # truthfulness follows the scripted seed
    assert main(["agreement", str(run), str(run), "--repeat-a", "0", "--repeat-b", "1",
                 "--format", "json", "--out", str(tmp_path / "agree")]) == 0
    document = json.loads((tmp_path / "agree" / "agreement.json").read_text())
    assert document["pairs"]["compared"] == 4
    assert document["fields"]["truthfulness"]["exact"] == 0.0
    assert document["fields"]["relevance"]["exact"] == 1.0
    capsys.readouterr()
    assert main(["report", str(run), "--format", "json", "--out", str(tmp_path / "rep")]) == 0
    analysis = json.loads((tmp_path / "rep" / "analysis.json").read_text())
    spread = {row["system"]: row for row in analysis["judge_spread"]}
    assert spread["naive"]["repeats"] == 3 and spread["naive"]["range_truthfulness"] == 4
    assert spread["naive"]["differ"] == 1.0


def test_run_with_scorers_scores_after_its_pairs_and_reports_them(tmp_path, fake, capsys):
    run = make_run(tmp_path, "--scorers", "judge,faithfulness,abstention")
    assert {(s["scorer"], s["status"]) for s in read_scores(run)} == {
        ("faithfulness", "not_applicable"), ("faithfulness", "scored"), ("abstention", "scored")}
    capsys.readouterr()
    assert main(["report", str(run), "--out", str(tmp_path / "rep"), "--correct-at", "1",
                 "--html", str(tmp_path / "rep" / "r.html")]) == 0
    out = capsys.readouterr().out
    assert "Scorers beyond the judge" in out and "CRAG outcomes (correct: judge truthfulness >= 1" in out
    analysis = json.loads((tmp_path / "rep" / "analysis.json").read_text())
    faith = {r["system"]: r for r in analysis["scorers"] if r["metric"] == "faithfulness"}
    assert faith["naive"]["scored"] == 2 and faith["naive"]["mean"][0] == 1.0
    assert faith["naive"]["input_tokens"] > 0
    crag = {r["system"]: r for r in analysis["crag"]}
    assert crag["naive"]["correct"] == 2 and crag["naive"]["score"] == 1.0  # every grade >= 1
    names = {p.name for p in (tmp_path / "rep").iterdir()}
    assert {"scores-faithfulness-faithfulness.png", "scores-abstention-abstained.png"} <= names
    page = (tmp_path / "rep" / "r.html").read_text()
    assert 'id="scorers-crag"' in page
    faithful = [a["record"]["scores"]["faithfulness"] for a in viewer_samples(parse(page))
                if a["label"] == "naive"]  # each answer's scores, in the viewer's records
    assert {"faithfulness": 1.0} in [score["metrics"] for score in faithful]


@pytest.mark.parametrize("argv, message", [
    pytest.param(["--scorers", "judge,vibes"], "unknown scorer(s) ['vibes']", id="unknown"),
    pytest.param(["--scorers", ","], "unknown scorer(s) []", id="empty"),
])
def test_bad_scorers_are_refused_before_any_call(tmp_path, fake, capsys, argv, message):
    run = make_run(tmp_path)
    calls = fake.calls
    assert main(["score", str(run), *argv]) == 2
    assert message in capsys.readouterr().err and fake.calls == calls
    assert not (run / SCORES).exists()


def test_an_import_needs_its_articles_for_the_judge(tmp_path, fake, capsys):
    from tests.support.legacy import import_rows, row
    out = tmp_path / "paper"
    import_rows(tmp_path, [row(1, 4, 5)], "A_f", "naive", out)
    assert main(["score", str(out), "--scorers", "judge"]) == 2
    assert "give them with --articles FILE" in capsys.readouterr().err
    assert main(["score", str(out), "--scorers", "abstention"]) == 0  # needs no article
    assert read_jsonl(out / SCORES)[0]["status"] == "scored"


def test_sigkill_mid_pass_then_resume_asks_no_finished_call_again(tmp_path, fake):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests import ROOT

    run = make_run(tmp_path)
    fake.delay = 0.1
    fake.requests.clear()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "freshrag", "score", str(run), "--scorers",
               "faithfulness,claims,abstention", "--concurrency", "2"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    scores = run / SCORES
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not scores.exists()
                                           or len(scores.read_text().splitlines()) < 4):
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = len(read_scores(run))
    assert 4 <= finished < 12
    first = [json.dumps(r, sort_keys=True) for r in fake.requests]
    fake.requests.clear()
    resumed = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    again = [json.dumps(r, sort_keys=True) for r in fake.requests]
    # only the calls in flight at the kill (at most one per worker) are asked twice
    assert len(set(first) & set(again)) <= 2
    assert len(read_scores(run)) == 12 and len(scores.read_text().splitlines()) == 12


def test_a_pass_with_another_scorer_model_is_refused_before_any_call(tmp_path, fake, capsys,
                                                                      monkeypatch):
    run = make_run(tmp_path)
    assert main(["score", str(run), "--scorers", "faithfulness"]) == 0
    before, calls = (run / SCORES).read_bytes(), fake.calls
    monkeypatch.setenv("FRESHRAG_SCORER_MODEL", "another-model")
    capsys.readouterr()
    assert main(["score", str(run), "--scorers", "faithfulness,claims"]) == 2
    err = capsys.readouterr().err
    assert "faithfulness was scored with the scorer model" in err and "'another-model'" in err
    assert fake.calls == calls and (run / SCORES).read_bytes() == before


def reasoning_judge(request):
    """scorers_reply, with the judge saying why: its reason names the truthfulness it gave."""
    reply = scorers_reply(request)
    if forced_tool_name(request) == "submit_grade":
        arguments = json.loads(reply["tool_call"]["arguments"])
        arguments["reason"] = f"Truthfulness {arguments['truthfulness']} by the article."
        reply["tool_call"]["arguments"] = json.dumps(arguments)
    return reply


def test_the_judges_reason_reaches_the_rows_the_scores_and_the_agreement(tmp_path, fake_server,
                                                                          capsys):
    fake_server(reply=reasoning_judge)
    run = make_run(tmp_path)
    rows = list(read_jsonl(run / "samples.jsonl"))
    assert [row["grade"]["reason"] for row in rows] == [
        f"Truthfulness {row['grade']['truthfulness']} by the article." for row in rows]
    assert main(["score", str(run), "--scorers", "judge", "--repeats", "2"]) == 0
    judged = [s for s in read_scores(run) if s["scorer"] == "judge"]
    assert len(judged) == 8 and all(
        s["details"]["reason"] == f"Truthfulness {s['metrics']['truthfulness']} by the article."
        for s in judged)
    capsys.readouterr()
    assert main(["agreement", str(run), str(run), "--repeat-a", "0", "--repeat-b", "1",
                 "--out", str(tmp_path / "agree")]) == 0
    printed = capsys.readouterr().out
    document = json.loads((tmp_path / "agree" / "agreement.json").read_text())
    [first, *_] = document["divergent"]  # repeats 0 and 1 grade truthfulness 1 and 3
    assert (first["a"]["truthfulness"], first["b"]["truthfulness"]) == (1, 3)
    assert first["a"]["reason"] == "Truthfulness 1 by the article."
    assert first["b"]["reason"] == "Truthfulness 3 by the article."
    assert "| 1/3 | 3/3 | Truthfulness 1 by the article. | Truthfulness 3 by the article. |" \
        in printed

"""The scorers beyond the judge under `--dry-run`, `--batch` and `--max-cost`, for `freshrag
score` and `freshrag run --scorers`, against the fake OpenAI-compatible server (its Batch API in
tests/support/fake_batches.py): the estimate counts the calls the live pass then sends, and sends none
itself; a batch pass sends every scorer chat call through batches and resumes; a cap stops the
pass resumably."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from freshrag.cli.main import main
from freshrag.llm.tokens import count_messages
from freshrag.scoring.store import SCORES, read_scores
from tests import ROOT
from tests.support.costs import PRICE, table
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fake_batches import FakeBatches, kill_while_polling
from tests.support.fake_openai_server import FakeOpenAIServer, forced_tool_name
from tests.support.fakes import SECRET, scorers_reply, use_endpoint

SCORER_TOOLS = ("submit_statements", "submit_verdicts", "submit_needed_sentences",
                "submit_questions", "submit_abstention")


def empty_lists(request):
    """The scorers' replies with every list empty: statements found in no text."""
    name = forced_tool_name(request)
    if name in ("submit_statements", "submit_questions", "submit_needed_sentences"):
        key = {"submit_statements": "statements", "submit_questions": "questions",
               "submit_needed_sentences": "needed"}[name]
        return {"tool_call": {"name": name, "arguments": json.dumps({key: []})}}
    return scorers_reply(request)


def serve(monkeypatch, reply=scorers_reply, batches=None):
    server = FakeOpenAIServer(reply=reply, batches=batches).start()
    use_endpoint(monkeypatch, server.base_url, SECRET)
    return server


def make_run(tmp_path, *extra, n=2):
    """A finished run of baseline and naive (naive retrieves), and a config with a price."""
    q, a = write_dataset(tmp_path, n=n, content=bridges_and_mayor, prices=PRICE)
    assert main(["run", "--questions", str(q), "--articles", str(a), "--out",
                 str(tmp_path / "run"), "--systems", "baseline,naive", "--no-probe",
                 "--index-dir", str(tmp_path / "index"), "--concurrency", "1", *extra]) == 0
    return tmp_path / "run"


def score(run, scorers, *extra, config=True):
    return main(["score", str(run), "--scorers", scorers, "--concurrency", "1", *extra]
                + (["--config", str(run.parent / "freshrag.toml")] if config else []))


def scorer_requests(server) -> list[dict]:
    return [r for r in server.requests if forced_tool_name(r) in SCORER_TOOLS]


def span(cell: str) -> tuple[int, int]:
    low, _, high = cell.replace(",", "").partition("–")
    return int(low), int(high or low)


@pytest.mark.parametrize("reply, end", [
    pytest.param(scorers_reply, 1, id="statements-found-every-call-made"),
    pytest.param(empty_lists, 0, id="no-statements-no-verdict-call"),
])
def test_score_dry_run_counts_what_the_pass_then_sends(tmp_path, monkeypatch, capsys, reply,
                                                       end):
    """Faithfulness and claims make later calls only if the first finds statements: the
    estimate is a range whose ends are those two cases, and the live pass lands on one."""
    with serve(monkeypatch, reply) as server:
        run = make_run(tmp_path)
        before = sorted(p.name for p in run.iterdir())
        server.reset_counts()
        embedded = server.embedding_calls
        capsys.readouterr()
        assert score(run, "faithfulness,claims", "--dry-run") == 0
        assert server.calls == 0 and server.embedding_calls == embedded
        assert sorted(p.name for p in run.iterdir()) == before  # nothing written, no lock
        estimated = span(table(capsys.readouterr().out)["scorer"][1])
        # The fake echoes the question, so baseline and naive gave one answer text per question:
        # one request for both, sent once. Claims per answer text: 2 calls when the answer
        # states nothing (split, key claims) to 4 (each list checked); faithfulness shares the
        # split and checks naive's statements against its extracts: 0 to 1 more call per row.
        assert estimated == (2 * 2, 2 * 4 + 2)
        assert score(run, "faithfulness,claims") == 0
        assert server.calls == estimated[end]


def test_score_dry_run_tokens_are_the_requests_sent_and_repeats_count(tmp_path, monkeypatch,
                                                                      capsys):
    """One call per score (context-relevance, abstention): input tokens are exactly tiktoken's
    count of the requests the pass sends; `--repeats` multiplies the calls."""
    with serve(monkeypatch) as server:
        run = make_run(tmp_path)
        server.reset_counts()
        capsys.readouterr()
        # the fake echoes the question, so baseline's and naive's answers are one text: one
        # abstention request for both, sent once and then read from the cache
        assert score(run, "context-relevance,abstention", "--dry-run", "--repeats", "3") == 0
        assert table(capsys.readouterr().out)["scorer"][1:4] == [str(3 * (2 + 2)), "0", str(3 * 2)]
        assert score(run, "context-relevance,abstention", "--dry-run") == 0
        row = table(capsys.readouterr().out)["scorer"]
        assert score(run, "context-relevance,abstention") == 0
        sent = scorer_requests(server)
        assert row[1] == str(server.calls) == "4"  # naive's 2 context-relevance, 2 abstention
        assert int(row[4].replace(",", "")) == sum(
            count_messages(r["messages"], r["model"], r.get("tools")) for r in sent)
        low = (int(row[4].replace(",", "")) * PRICE[0] + span(row[5])[0] * PRICE[1]) / 1e6
        assert row[6].startswith(f"${low:,.4f}")
        assert score(run, "context-relevance,abstention,faithfulness", "--dry-run") == 0
        left = table(capsys.readouterr().out)["scorer"]
        assert left[1] == "2–4"  # only faithfulness is still to score


def test_score_dry_run_counts_cached_calls_as_free(tmp_path, monkeypatch, capsys):
    with serve(monkeypatch) as server:
        run = make_run(tmp_path)
        assert score(run, "abstention") == 0
        copy = run.parent / "copy"  # the same answers beside the same response cache
        shutil.copytree(run, copy)
        (copy / SCORES).unlink()
        capsys.readouterr()
        calls = server.calls
        assert score(copy, "abstention", "--dry-run") == 0
        row = table(capsys.readouterr().out)["scorer"]
        assert (row[1], row[2], row[6]) == ("0", "4", "$0.0000")  # 2 requests, each twice
        assert server.calls == calls


def test_run_dry_run_with_scorers_counts_the_run_and_its_score_pass(tmp_path, monkeypatch,
                                                                    capsys):
    with serve(monkeypatch) as server:
        q, a = write_dataset(tmp_path, n=2, content=bridges_and_mayor)
        argv = ["run", "--questions", str(q), "--articles", str(a), "--out",
                str(tmp_path / "run"), "--systems", "baseline,naive", "--no-probe",
                "--index-dir", str(tmp_path / "index"), "--concurrency", "1",
                "--scorers", "judge,faithfulness"]
        assert main([*argv, "--dry-run"]) == 0
        assert server.calls == 0 and server.embedding_calls == 0
        assert not (tmp_path / "run").exists()
        rows = table(capsys.readouterr().out)
        assert main(argv) == 0
        # faithfulness on naive's 2 answers (baseline retrieved nothing): 1 to 2 calls each,
        # and the fake finds a statement in each answer
        assert span(rows["scorer"][1]) == (2, 4) and len(scorer_requests(server)) == 4
        assert len(read_scores(tmp_path / "run")) == 4


def test_score_batch_sends_every_scorer_chat_call_through_batches(tmp_path, monkeypatch, capsys):
    fake = FakeBatches(polls=1)
    with serve(monkeypatch, batches=fake) as server:
        run = make_run(tmp_path)
        server.reset_counts()
        assert score(run, "faithfulness,claims,answer-relevance", "--batch",
                     "--batch-poll", "0.05") == 0
        assert server.calls == 0  # every chat call came from a batch, through the cache
        assert server.embedding_calls > 0  # answer-relevance's embeddings are live
    scores = read_scores(run)
    assert len(scores) == 4 * 3 and all(c["cache_hit"] for s in scores for c in s["calls"])
    assert {s["status"] for s in scores} == {"scored", "not_applicable"}
    assert max(fake.submitted.values()) == 1
    # stage by stage: the answers' statements, then claims' verdicts on them and faithfulness's
    # against the extracts, then the gold article's key claims, then their verdicts
    log = [json.loads(line) for line in (run / "batches.jsonl").read_text().splitlines()]
    assert max(e["round"] for e in log if e["event"] == "uploaded") == 4


def test_run_batch_with_scorers_batches_the_scorer_calls_too(tmp_path, monkeypatch):
    fake = FakeBatches(polls=0)
    with serve(monkeypatch, batches=fake) as server:
        run = make_run(tmp_path, "--scorers", "judge,faithfulness", "--batch",
                       "--batch-poll", "0.05")
        assert server.calls == 0
    scores = read_scores(run)
    assert len(scores) == 4 and {s["status"] for s in scores} == {"scored", "not_applicable"}
    assert all(c["cache_hit"] for s in scores for c in s["calls"])


def test_a_killed_batch_score_pass_resumes_polling_without_resubmitting(tmp_path, monkeypatch):
    fake = FakeBatches(failed=0.10, expired=0.05, polls=40, seed=2)
    with serve(monkeypatch, batches=fake) as server:
        run = make_run(tmp_path, n=3)
        server.reset_counts()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "freshrag", "score", str(run), "--scorers",
                   "faithfulness,abstention", "--batch", "--batch-poll", "0.05"]
        kill_while_polling(command, env, tmp_path, fake)  # polling the first batch
        open_at_kill = set(fake.batches)
        assert open_at_kill and not (run / SCORES).exists()
        fake.polls = 1
        done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        exhausted = [k for k, o in fake.outcomes.items() if o[-1] != "ok"]
        assert server.calls == len(exhausted)  # only what no batch answered went live
    assert len(read_scores(run)) == 6 * 2
    log = [json.loads(line) for line in (run / "batches.jsonl").read_text().splitlines()]
    collected = {e["batch_id"] for e in log if e["event"] == "collected"}
    assert open_at_kill <= collected and fake.created == len(collected)
    for key, outcomes in fake.outcomes.items():  # sent again only after a failure
        assert len(outcomes) == fake.submitted[key]
        assert all(o != "ok" for o in outcomes[:-1])


def test_max_cost_stops_a_score_pass_resumably(tmp_path, monkeypatch, capsys):
    with serve(monkeypatch) as server:
        run = make_run(tmp_path)
        server.reset_counts()
        capsys.readouterr()
        # an abstention call reserves about $0.0014 (its input and max_tokens) and costs about
        # $0.0004: room for one; the other answer's request is the same one (cached, free)
        assert score(run, "abstention", "--max-cost", "0.0015") == 3
        assert "CAPPED" in capsys.readouterr().out
        assert len(read_scores(run)) == 2 and server.calls == 1
        assert score(run, "abstention") == 0
        assert len(read_scores(run)) == 4
        assert server.calls == 2 == len({json.dumps(r, sort_keys=True) for r in server.requests})


@pytest.mark.parametrize("extra, environment, message", [
    pytest.param(["--no-cache"], {}, "drop --no-cache", id="no-cache"),
    pytest.param([], {"FRESHRAG_SCORER_BASE_URL": "local"},
                 "the scorer role(s) use the embedded server", id="embedded-server"),
])
def test_score_batch_refuses_what_cannot_work_before_any_call(tmp_path, monkeypatch, capsys,
                                                              extra, environment, message):
    with serve(monkeypatch) as server:
        run = make_run(tmp_path)
        server.reset_counts()
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        assert score(run, "abstention", "--batch", *extra) == 2
        assert message in capsys.readouterr().err
        assert server.calls == 0 and not (run / SCORES).exists()


@pytest.mark.parametrize("extra", [
    pytest.param(["--dry-run"], id="dry-run"),
    pytest.param(["--batch", "--batch-poll", "0.05"], id="batch"),
])
def test_another_scorer_model_is_refused_before_any_upload(tmp_path, monkeypatch, capsys, extra):
    fake = FakeBatches(polls=0)
    with serve(monkeypatch, batches=fake) as server:
        run = make_run(tmp_path)
        assert score(run, "faithfulness") == 0
        before, calls = (run / SCORES).read_bytes(), server.calls
        monkeypatch.setenv("FRESHRAG_SCORER_MODEL", "another-model")
        capsys.readouterr()
        assert score(run, "faithfulness,claims", *extra) == 2
        assert "faithfulness was scored with the scorer model" in capsys.readouterr().err
        assert server.calls == calls and fake.created == 0 and not fake.files
        assert (run / SCORES).read_bytes() == before and not (run / "batches.jsonl").exists()

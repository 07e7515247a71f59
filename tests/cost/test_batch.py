"""`freshrag run --batch` against the fake server's Files and Batch APIs (tests/support/fake_batches.py):
stage by stage, failed and expired lines sent again, a killed process resuming its polls."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.cost.batch import TRIES
from tests import ROOT
from tests.support.datasets import write_dataset
from tests.support.fake_batches import FakeBatches, kill_while_polling
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import use_endpoint

SYSTEMS = "baseline,advanced"  # advanced: three calls in turn, the third only if it retrieves


def batch_run(directory: Path, n: int) -> list[str]:
    """The arguments of `freshrag run --batch` on n towns written into `directory`."""
    write_dataset(directory, n, content=lambda i: f"Town {i} has {i + 3} bridges and a mayor "
                  f"named Ola {i}. It lies on the river Aa.")
    return ["--dataset", str(directory), "--systems", SYSTEMS, "--out", str(directory / "run"),
            "--batch", "--batch-poll", "0.05", "--no-probe"]


def test_batch_run_advances_stage_by_stage_and_the_live_run_replays_it(tmp_path, monkeypatch):
    fake = FakeBatches(polls=1)
    with FakeOpenAIServer(batches=fake) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-x")
        assert main(["run", *batch_run(tmp_path, 4)]) == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 8 and all(r["status"] == "ok" and r["grade"]["truthfulness"] for r in rows)
    assert server.calls == 0  # every chat call came from a batch, through the cache
    assert all(c["cache_hit"] for r in rows for c in r["calls"])
    # The fake answers forced calls with `true`, so advanced retrieves: answer, decide, answer
    # with chunks, each waiting for the one before. Its first call is baseline's (the same
    # request, one cache key), and the fake echoes the question, so both systems' answers, and
    # their judge calls, are one request too: round 1 the shared answers, round 2 the judge
    # and the decisions, round 3 the answers with chunks.
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["batch"]["rounds"] == 3
    assert max(fake.submitted.values()) == 1
    assert len(fake.submitted) == 4 + 4 * 2 + 4


def assert_sent_again_only_after_a_failure(fake: FakeBatches) -> None:
    """No duplicate submission: a request goes into another batch only after the one before
    failed or expired it, and after TRIES failures it is left to the live run."""
    assert set(fake.outcomes) == set(fake.submitted)
    for key, outcomes in fake.outcomes.items():
        assert len(outcomes) == fake.submitted[key]
        assert all(o != "ok" for o in outcomes[:-1]), (key, outcomes)
        assert outcomes[-1] == "ok" or len(outcomes) == TRIES, (key, outcomes)


def test_failed_and_expired_lines_go_into_the_next_batch(tmp_path, monkeypatch):
    fake = FakeBatches(failed=0.10, expired=0.05, polls=0, seed=3)
    with FakeOpenAIServer(batches=fake) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-x")
        assert main(["run", *batch_run(tmp_path, 10)]) == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 20 and all(r["status"] == "ok" for r in rows)
    log = [json.loads(line) for line in (tmp_path / "run" / "batches.jsonl").read_text().splitlines()]
    collected = [e for e in log if e["event"] == "collected"]
    assert sum(e["failed"] for e in collected) > 0 and sum(e["expired"] for e in collected) > 0
    assert_sent_again_only_after_a_failure(fake)
    assert max(fake.submitted.values()) > 1
    # what no batch answered was asked live, once
    exhausted = [k for k, o in fake.outcomes.items() if o[-1] != "ok"]
    assert server.calls >= len(exhausted)


def test_a_process_killed_mid_poll_resumes_polling_without_resubmitting(tmp_path):
    fake = FakeBatches(failed=0.10, expired=0.05, polls=40, seed=1)
    with FakeOpenAIServer(batches=fake) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "FRESHRAG_BASE_URL": server.base_url,
               "FRESHRAG_API_KEY": "sk-x", "FRESHRAG_MODEL": "fake-model"}
        command = [sys.executable, "-m", "freshrag", "run", *batch_run(tmp_path, 20)]
        kill_while_polling(command, env, tmp_path, fake)  # polling the first batch
        open_at_kill = set(fake.batches)  # round 1: one batch per role, none finished yet
        assert open_at_kill and all(b["object"]["status"] == "in_progress"
                                    for b in fake.batches.values())
        fake.polls = 2
        done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 40 and all(r["status"] == "ok" for r in rows)
    log = [json.loads(line) for line in (tmp_path / "run" / "batches.jsonl").read_text().splitlines()]
    collected = [e for e in log if e["event"] == "collected"]
    assert open_at_kill <= {e["batch_id"] for e in collected}  # the resumed process polled them
    assert sum(e["failed"] for e in collected) > 0 and sum(e["expired"] for e in collected) > 0
    assert_sent_again_only_after_a_failure(fake)  # none resubmitted by the resumed process
    assert fake.created == len(collected)


@pytest.mark.parametrize("extra, environment, message", [
    pytest.param(["--no-cache"], {"FRESHRAG_BASE_URL": "http://127.0.0.1:9/v1"},
                 "drop --no-cache", id="no-cache"),
    pytest.param([], {}, "the answer, decision, judge role(s) use the embedded server",
                 id="embedded-server"),
])
def test_batch_refuses_what_cannot_work_before_any_call(tmp_path, monkeypatch, capsys, extra,
                                                        environment, message):
    for name in ("FRESHRAG_BASE_URL", "FRESHRAG_MODEL", "FRESHRAG_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert main(["run", *batch_run(tmp_path, 2), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("fake, named", [
    pytest.param(FakeBatches(stuck="paused"), "has the status 'paused', which the Batch API does "
                 "not document", id="unknown-status"),
    pytest.param(FakeBatches(stuck="in_progress", age_s=26 * 3600), "is still in_progress 26 h "
                 "after it was created", id="past-its-window"),
])
def test_a_batch_that_cannot_end_stops_the_run_naming_it(tmp_path, monkeypatch, capsys, fake,
                                                        named):
    with FakeOpenAIServer(batches=fake) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-x")
        assert main(["run", *batch_run(tmp_path, 2)]) == 2
        assert fake.retrieves == 1  # one poll, then named: never polled forever
        url = server.base_url
    err = capsys.readouterr().err
    assert re.search(rf"batch batch_\d+ on {re.escape(url)} \((answer|decision)\) {named}", err)
    assert "Traceback" not in err
    assert "without --batch" in err
    assert server.calls == 0


def test_a_damaged_results_file_counts_its_bad_lines_as_failed_and_sends_them_again(
        tmp_path, monkeypatch):
    damage = ["once"]

    def damaged(rows):  # the first results of 3 lines or more: the first line cut, the second
        lines = [json.dumps(row) for row in rows]  # one's request renamed, a 5,000-digit number
        if len(rows) < 3 or not damage:
            return "\n".join(lines) + "\n"
        damage.pop()
        other = json.dumps({**rows[1], "custom_id": "not-ours"})
        return "\n".join([lines[0][:30], other, "9" * 5000, *lines[2:]]) + "\n"

    fake = FakeBatches(results=damaged)
    with FakeOpenAIServer(batches=fake) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-x")
        assert main(["run", *batch_run(tmp_path, 4)]) == 0
    assert sorted(fake.submitted.values()).count(2) == 2  # the two lost requests, sent again
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 8 and all(r["status"] == "ok" for r in rows)
    log = [json.loads(line) for line in (tmp_path / "run" / "batches.jsonl").read_text().splitlines()]
    assert sum(event["failed"] for event in log if event["event"] == "collected") == 3


def test_a_general_query_is_graded_through_the_batch_and_counted_by_the_dry_run(tmp_path,
                                                                               monkeypatch,
                                                                               capsys):
    """A general query (no gold article, kind general): the walk grades it with the judge's
    prompt for no article, as the live run does; it was a KeyError: None."""
    questions = [{"id": "f", "title": "Town 0", "question": "How many bridges has Town 0?",
                  "kind": "fresh", "need": True},
                 {"id": "g", "title": None, "question": "What is 17 times 23?",
                  "kind": "general", "need": False}]
    write_dataset(tmp_path / "d", 1, questions=questions)
    args = ["run", "--dataset", str(tmp_path / "d"), "--systems", "baseline", "--no-probe",
            "--out", str(tmp_path / "run")]
    fake = FakeBatches(polls=1)
    with FakeOpenAIServer(batches=fake) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-x")
        assert main([*args, "--dry-run"]) == 0
        assert "| judge | fake-model | 2 |" in capsys.readouterr().out
        assert main([*args, "--batch", "--batch-poll", "0.05"]) == 0
    rows = {r["question_id"]: r for r in read_samples(tmp_path / "run" / "samples.jsonl")}
    assert server.calls == 0 and len(fake.submitted) == 4  # two answers, two grades
    assert rows["g"]["gold_title"] is None and rows["g"]["grade"]["truthfulness"] is not None

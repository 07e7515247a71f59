"""A run against an endpoint that misbehaves (issue 25, root causes 1–3): whatever one call gets
back, that pair is a `failed` row with the reason and the run goes on; a refused key stops the run
at once; a signal ends a run stuck in requests within seconds, and the resume finishes it."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.llm.replies import MAX_REPLY_CHARS
from tests import ROOT
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer, default_reply
from tests.support.fakes import SECRET, is_call_of
from tests.support.runs import run_cli

# What a broken proxy or server sends instead of a completion; one kind per question.
FAULTS = {
    "Town 1": {"raw": {"body": "<html><h1>502 Bad Gateway</h1></html>"}},
    "Town 2": {"raw": {"body": '{"id": "x", "choices": [{"ind', "content_type": "application/json"}},
    "Town 3": {"content": "x" * (MAX_REPLY_CHARS + 10)},
}
REASONS = {"Town 1": "not a chat completion", "Town 2": "not an OpenAI response",
           "Town 3": "more than the 1,000,000"}


def test_each_bad_reply_fails_its_pair_with_the_reason_and_the_resume_asks_again(tmp_path,
                                                                                  monkeypatch):
    broken = {"on": True}

    def reply(request):
        prompt = json.dumps(request["messages"])
        town = next((t for t in FAULTS if f"{t} " in prompt), None)
        if broken["on"] and town and not request.get("tools"):
            return FAULTS[town]
        return default_reply(request)

    write_dataset(tmp_path, n=4, content=bridges_and_mayor)
    with FakeOpenAIServer(reply=reply) as server:
        monkeypatch.setenv("FRESHRAG_BASE_URL", server.base_url)
        assert run_cli(tmp_path) == 1  # some pairs failed: the run finished, and says so
        rows = read_samples(tmp_path / "run" / "samples.jsonl")
        assert len(rows) == 8  # every pair has its row
        for row in rows:  # both systems' answer calls name their town
            town = row["gold_title"]
            if town in FAULTS:
                assert row["status"] == "failed", row
                assert REASONS[town] in row["error"] and server.base_url in row["error"]
            else:
                assert row["status"] == "ok"
        finished = [row for row in rows if row["status"] == "ok"]
        broken["on"] = False
        server.reset_counts()
        assert run_cli(tmp_path) == 0
        redone = [request for request in server.requests for row in finished
                  if is_call_of(request, row)]
    assert redone == []
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 8 and all(row["status"] == "ok" for row in rows)


def test_a_refused_key_stops_the_run_at_the_first_refusal(tmp_path, monkeypatch, capsys):
    refusal = {"error": {"status": 401, "message": "Incorrect API key provided: sk-...",
                         "type": "invalid_request_error"}}
    write_dataset(tmp_path, n=12, content=bridges_and_mayor)
    with FakeOpenAIServer(reply=lambda request: refusal) as server:
        monkeypatch.setenv("FRESHRAG_BASE_URL", server.base_url)
        monkeypatch.setenv("FRESHRAG_API_KEY", SECRET)
        assert run_cli(tmp_path, "--concurrency", "2", "--no-probe") == 2
        assert server.calls <= 2  # the calls already in flight; none after
        url = server.base_url
    err = capsys.readouterr().err
    assert f"answer endpoint {url} refused the key" in err and "HTTP 401" in err
    assert SECRET not in err
    assert read_samples(tmp_path / "run" / "samples.jsonl") == []  # no pair blamed for it


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_a_run_stuck_in_requests_within_seconds_then_it_resumes(tmp_path, signum):
    q, a = write_dataset(tmp_path, n=6, content=bridges_and_mayor)
    stuck = {"on": True}

    def reply(request):  # Town 3 to 5: answered only after 60 s, which no test waits for
        prompt = json.dumps(request["messages"])
        if stuck["on"] and any(f"Town {n} " in prompt for n in (3, 4, 5)):
            return {"raw": {"json": {}, "delay": 60}}
        return default_reply(request)

    with FakeOpenAIServer(reply=reply) as server:
        env = {**os.environ, "FRESHRAG_BASE_URL": server.base_url, "FRESHRAG_API_KEY": SECRET}
        command = [sys.executable, "-m", "freshrag", "run", "--questions", str(q), "--articles",
                   str(a), "--out", str(tmp_path / "run"), "--systems", "baseline,oracle",
                   "--concurrency", "4", "--no-probe"]
        # SIGINT as from a terminal: a test started in the background of a non-interactive
        # shell would hand the run SIGINT ignored, which freshrag then leaves ignored
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(
                                       signal.SIGINT, signal.SIG_DFL))
        samples = tmp_path / "run" / "samples.jsonl"
        waited = time.monotonic() + 60
        while time.monotonic() < waited and (not samples.exists() or
                                             len(samples.read_text().splitlines()) < 6):
            time.sleep(0.05)
        time.sleep(0.5)  # the pairs of Town 3 to 5 are now waiting on their replies
        process.send_signal(signum)
        sent = time.monotonic()
        _, err = process.communicate(timeout=30)
        took = time.monotonic() - sent
        assert process.returncode == 128 + signum, err
        assert took < 5, f"the run took {took:.1f} s to stop"
        assert "stopped; finished work is kept" in err and "Traceback" not in err
        finished = read_samples(samples)
        assert len(finished) == 6 and all(row["status"] == "ok" for row in finished)
        stuck["on"] = False
        server.reset_counts()
        resumed = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        assert resumed.returncode == 0, resumed.stderr
        redone = [request for request in server.requests for row in finished
                  if is_call_of(request, row)]
    assert redone == []
    rows = read_samples(samples)
    assert len(rows) == 12 and all(row["status"] == "ok" for row in rows)


RUNAWAY = '''
from freshrag import SystemAnswer


class Runaway:
    """Answers Town 1's question with two million characters, the others with a short text;
    with details of a million characters for Town 2."""

    def __init__(self, context):
        pass

    def answer(self, question):
        if "Town 1 " in question.text:
            return SystemAnswer("x" * 2_000_000)
        details = {"notes": "y" * 1_000_000} if "Town 2 " in question.text else {}
        return SystemAnswer("It has some bridges.", details=details)
'''


def test_an_answer_or_a_row_too_long_to_keep_fails_its_pair_and_the_rest_run(tmp_path, fake,
                                                                             monkeypatch):
    (tmp_path / "runaway.py").write_text(RUNAWAY)
    monkeypatch.setattr("freshrag.core.jsonl.MAX_LINE_BYTES", 500_000)  # rows of 1 MB too long
    q, a = write_dataset(tmp_path, n=4, content=bridges_and_mayor)
    status = main(["run", "--questions", str(q), "--articles", str(a), "--out",
                   str(tmp_path / "run"), "--systems", f"big={tmp_path / 'runaway.py'}:Runaway",
                   "--no-probe"])
    assert status == 1  # finished, with failed pairs
    rows = {row["gold_title"]: row for row in read_samples(tmp_path / "run" / "samples.jsonl")}
    assert set(rows) == {"Town 0", "Town 1", "Town 2", "Town 3"}
    assert "answered with 2,000,000 characters, more than the 1,000,000" in rows["Town 1"]["error"]
    assert rows["Town 1"]["answer"] is None
    assert "its row was not kept" in rows["Town 2"]["error"] and rows["Town 2"]["details"] == {}
    assert rows["Town 0"]["status"] == rows["Town 3"]["status"] == "ok"
    assert max(map(len, (tmp_path / "run" / "samples.jsonl").read_text().splitlines())) < 500_000

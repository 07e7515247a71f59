"""`freshrag run --executor ray` on a real two-node Ray cluster on this machine
(tests/support/ray_cluster.py) against the fake OpenAI-compatible server: the same report as
the local executor; a worker node killed mid-run costs no finished pair and redoes none; an
actor killed while it builds its systems is replaced, and one whose build raises ends the run
with that error at once; a driver killed resumes; Ctrl-C ends the cluster's work within seconds; an address that does not
answer fails at once, naming it; no key is ever in what a worker is sent."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import pytest

from freshrag.cli.main import main
from freshrag.core.config import load_settings
from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.core.samples import read_samples
from freshrag.run.config import RunConfig
from freshrag.run.on_ray import RayPairs, keyed, keyless
from freshrag.run.plan import make_plan
from freshrag.systems import SYSTEMS
from freshrag.workflows.evaluate import evaluate
from tests import ROOT
from tests.support.fake_openai_server import (
    FakeOpenAIServer,
    default_reply,
    forced_tool_name,
)
from tests.support.fakes import SECRET, grade_call, is_call_of

SYSTEMS_RUN = "baseline,oracle,naive,advanced"


def varied(request: dict) -> dict:
    """Grades that differ by a hash of the request, so that the tables hold more than one value."""
    digest = int(hashlib.sha256(json.dumps(request["messages"]).encode()).hexdigest()[:8], 16)
    if forced_tool_name(request) == "submit_grade":
        return grade_call(1 + digest % 5, 1 + digest // 5 % 5)
    return default_reply(request)


def run_args(out, *extra: str) -> list[str]:
    return ["run", "--dataset", str(example_dir()), "--out", str(out), "--systems", SYSTEMS_RUN,
            "--limit", "8", "--no-cache", "--probe-k", "2", *extra]


def report(run_dir, out, capsys) -> list[str]:
    """What `freshrag report` prints and writes (summary.md, analysis.json) for `run_dir`, the
    latency table's times left out: two runs on one executor differ there too."""
    capsys.readouterr()
    assert main(["report", str(run_dir), "--format", "markdown", "--out", str(out)]) == 0
    analysis = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    for row in analysis["latency"]:
        row["p50_s"] = row["p95_s"] = "time"
    return [timeless(capsys.readouterr().out.replace(str(run_dir.parent), "WORK")),
            (out / "summary.md").read_text(encoding="utf-8"), json.dumps(analysis, indent=1)]


def timeless(markdown: str) -> str:
    """`markdown` with the times of its latency table's rows left out."""
    lines, latency = [], False
    for line in markdown.splitlines():
        latency = latency and line.startswith("|") or "| p50_s | p95_s |" in line
        if latency and not line.startswith(("|---", "| dataset")):
            cells = line.split("|")
            cells[4:6] = [" time ", " time "]
            line = "|".join(cells)
        lines.append(line)
    return "\n".join(lines)


def pairs_of(rows) -> list[tuple[str, str]]:
    return sorted((row["question_id"], row["system"]) for row in rows)


def test_the_ray_run_gives_the_local_runs_report(tmp_path, fake_server, ray_cluster, capsys):
    # one pair at a time: the rows are then in the plan's order on both executors (at more, in
    # the order they finish, on either), and a report's bootstrap intervals follow that order
    fake_server(reply=varied)
    # no probes: the second run would reuse the first's (.judge-probes), and say so
    assert main(run_args(tmp_path / "local", "--concurrency", "1", "--no-probe")) == 0
    assert main(run_args(tmp_path / "ray", "--concurrency", "1", "--no-probe",
                         "--executor", "ray")) == 0
    local, on_ray = (read_samples(tmp_path / name / "samples.jsonl") for name in ("local", "ray"))
    assert pairs_of(on_ray) == pairs_of(local) and len(local) == 32
    made = report(tmp_path / "ray", tmp_path / "ray-report", capsys)
    expected = [text.replace("local", "ray") for text in report(
        tmp_path / "local", tmp_path / "local-report", capsys)]
    assert made == expected


def test_the_pairs_are_answered_by_the_actors_not_the_driver(tmp_path, fake, ray_cluster,
                                                              monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("a pair was answered on the driver")

    monkeypatch.setattr("freshrag.run.runner.answer_and_grade", refused)
    assert main(run_args(tmp_path / "ray", "--executor", "ray", "--no-probe")) == 0
    assert len(read_samples(tmp_path / "ray" / "samples.jsonl")) == 32


def distinct(request: dict) -> dict:
    """`varied`, with an answer of its own for every prompt, so that each judge call names its
    pair (`is_call_of`)."""
    if forced_tool_name(request) is None:
        return {"content": "answer " + hashlib.sha256(
            json.dumps(request["messages"]).encode()).hexdigest()[:12]}
    return varied(request)


def two_systems(out, *extra: str) -> list[str]:
    return ["run", "--dataset", str(example_dir()), "--out", str(out), "--systems",
            "baseline,oracle", "--limit", "20", "--no-cache", "--no-probe", "--executor", "ray",
            *extra]


def rows_written(samples) -> int:
    return len(samples.read_text().splitlines()) if samples.exists() else 0


def wait_for_rows(samples, count: int, alive=lambda: True) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and alive() and rows_written(samples) < count:
        time.sleep(0.05)


def redone(server: FakeOpenAIServer, since: int, finished: list[dict]) -> list[dict]:
    """The requests after `since` that belong to a pair already `finished`."""
    return [request for request in server.requests[since:] for row in finished
            if is_call_of(request, row)]


def test_a_worker_node_killed_mid_run_costs_no_finished_pair_and_redoes_none(
        tmp_path, fake_server, ray_cluster):
    server = fake_server(reply=distinct, delay=0.3)
    samples = tmp_path / "run" / "samples.jsonl"
    at_loss: dict = {}

    def lost():
        at_loss.update(finished=read_samples(samples), since=len(server.requests))

    # the library call, on a thread (a command takes the signals)
    failed = ray_cluster.lose_a_node(
        lambda: evaluate(example_dir(), "baseline,oracle", out=tmp_path / "run", limit=20,
                         cache=False, probe=None, executor="ray").failed,
        lambda: rows_written(samples) >= 6, lost)
    assert failed == 0
    finished = at_loss["finished"]
    rows = read_samples(samples)
    assert pairs_of(rows) == sorted({(row["question_id"], row["system"]) for row in rows})
    assert len(rows) == 40 and all(row["status"] == "ok" for row in rows)
    assert redone(server, at_loss["since"], finished) == []
    assert rows[:len(finished)] == finished  # nothing written before the loss was rewritten
    answers = [json.dumps(request["messages"]) for request in server.requests
               if forced_tool_name(request) is None]
    assert len(answers) > len(set(answers))  # the pairs in flight on the node were asked again


def test_a_driver_killed_mid_run_resumes_without_redoing_a_pair(tmp_path, fake_server,
                                                                ray_cluster):
    server = fake_server(reply=distinct, delay=0.3)
    samples = tmp_path / "run" / "samples.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "freshrag",
                                *two_systems(tmp_path / "run", "--address", ray_cluster.address)],
                               cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL,
                               stderr=(tmp_path / "stderr").open("w"))
    try:
        wait_for_rows(samples, 6, lambda: process.poll() is None)
        process.kill()
        process.wait(timeout=30)
    finally:
        process.kill()
    finished = read_samples(samples)
    since = len(server.requests)
    assert 6 <= len(finished) < 40, (tmp_path / "stderr").read_text()[-3000:]
    assert main(two_systems(tmp_path / "run")) == 0
    rows = read_samples(samples)
    assert len(rows) == 40 and all(row["status"] == "ok" for row in rows)
    assert pairs_of(rows) == sorted({(row["question_id"], row["system"]) for row in rows})
    assert redone(server, since, finished) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_ends_the_clusters_work_within_seconds(tmp_path, fake_server, ray_cluster,
                                                      signum):
    server = fake_server(reply=distinct, delay=1.0)
    samples = tmp_path / "run" / "samples.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "freshrag",
                                *two_systems(tmp_path / "run", "--address", ray_cluster.address)],
                               cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for_rows(samples, 2, lambda: process.poll() is None)
        process.send_signal(signum)
        sent = time.monotonic()
        _, err = process.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        process.kill()
    assert process.returncode == 128 + signum, err
    assert "stopped; finished work is kept" in err
    assert took < 10, f"the run took {took:.1f} s to stop"
    calls = server.calls
    time.sleep(2.5)  # more than a call's delay: an actor still working would have called
    assert server.calls == calls


class Starting:
    """The baseline, built by a factory that on a Ray actor (a process but `driver`) notes its
    start in `where`: the first start to begin sleeps there for a minute (its pid in `sleeper`),
    a start with `broken` raises; an actor's answer waits (10 s at most) until two actors are
    built, so that the pairs outlast a replacement's start, and notes its pid."""

    def __init__(self, context, where, driver: int, broken: bool = False):
        self.where, self.here = where, os.getpid() != driver
        self.system = SYSTEMS["baseline"](context)
        if not self.here:
            return
        (where / f"begun-{os.getpid()}").touch()
        if broken:
            raise ValueError(f"no index at {where / 'index'}")
        try:
            with (where / "sleeper").open("x") as sleeper:
                sleeper.write(str(os.getpid()))
            time.sleep(60)  # killed here
        except FileExistsError:
            pass
        (where / f"built-{os.getpid()}").touch()

    def answer(self, question):
        if self.here:
            deadline = time.monotonic() + 10
            while len(list(self.where.glob("built-*"))) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            (self.where / f"answered-{os.getpid()}").touch()
        return self.system.answer(question)


def pids(where, kind: str) -> set[int]:
    return {int(path.name.split("-")[1]) for path in where.glob(f"{kind}-*")}


def timeless_row(value):
    """A row (or a part of one) without its times: latencies, the time it was finished."""
    if isinstance(value, dict):
        return {key: timeless_row(part) for key, part in value.items()
                if "latency" not in key and key != "finished_at"}
    return [timeless_row(part) for part in value] if isinstance(value, list) else value


def kept(rows) -> list[dict]:
    """`rows` without their times, in the plan's order."""
    return sorted(map(timeless_row, rows), key=lambda row: (row["question_id"], row["system"]))


def test_an_actor_killed_while_it_builds_its_systems_is_replaced_and_the_run_is_whole(
        tmp_path, fake, ray_cluster):
    where = tmp_path / "starts"
    where.mkdir()
    systems = {"starting": functools.partial(Starting, where=where, driver=os.getpid())}
    run = {"limit": 8, "cache": False, "probe": None, "concurrency": 2}
    evaluate(example_dir(), systems, out=tmp_path / "local", **run)
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(evaluate(
        example_dir(), systems, out=tmp_path / "ray", executor="ray", **run)))
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not (where / "sleeper").exists() or not (where / "sleeper").read_text():
            assert time.monotonic() < deadline, "no actor started"
            time.sleep(0.05)
        killed = int((where / "sleeper").read_text())
        os.kill(killed, signal.SIGKILL)  # the actor, while it builds its systems
    finally:
        thread.join(timeout=120)
    assert outcome and outcome[0].failed == 0
    assert kept(read_samples(tmp_path / "ray" / "samples.jsonl")) == kept(
        read_samples(tmp_path / "local" / "samples.jsonl"))
    assert len(pids(where, "begun")) == 3 and killed not in pids(where, "built")
    assert pids(where, "answered") == pids(where, "built") and len(pids(where, "built")) == 2


def test_an_actor_whose_systems_cannot_be_built_ends_the_run_naming_the_error(
        tmp_path, fake, ray_cluster):
    where = tmp_path / "starts"
    where.mkdir()
    systems = {"starting": functools.partial(Starting, where=where, driver=os.getpid(),
                                             broken=True)}
    started = time.monotonic()
    with pytest.raises(ValueError, match=f"no index at {where / 'index'}"):
        evaluate(example_dir(), systems, out=tmp_path / "ray", limit=8, cache=False, probe=None,
                 concurrency=2, executor="ray")
    assert time.monotonic() - started < 30
    assert len(pids(where, "begun")) <= 2  # the run's two actors at most: none started again
    assert rows_written(tmp_path / "ray" / "samples.jsonl") == 0


def test_an_address_that_does_not_answer_fails_at_once_naming_it(tmp_path, fake, capsys):
    started = time.monotonic()
    assert main(run_args(tmp_path / "run", "--executor", "ray",
                         "--address", "ray://127.0.0.1:9")) == 2
    assert time.monotonic() - started < 10
    assert "Ray cluster at ray://127.0.0.1:9 cannot be reached" in capsys.readouterr().err
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_no_key_is_in_what_a_worker_is_sent(tmp_path, fake):
    dataset = load_dataset_dir(example_dir())
    settings = load_settings()
    assert settings.role("answer").key() == SECRET
    config = RunConfig(out=tmp_path / "run", systems=("baseline", "naive"))
    plan = make_plan(dataset, config, [], None)
    pairs = RayPairs(None, settings, 0, tmp_path / "cache.sqlite", None)
    work = pairs.work(plan, dict(SYSTEMS))
    import ray.cloudpickle

    for sent in (work, *plan.pairs):
        assert SECRET.encode() not in ray.cloudpickle.dumps(sent)
        assert SECRET.encode() not in pickle.dumps(sent)
    # a worker takes its key from its own environment
    assert keyed(work.settings, {"FRESHRAG_API_KEY": "sk-worker"}).role("judge").key() \
        == "sk-worker"
    assert keyed(work.settings, {}).role("judge").key() == "no-key"
    assert keyless(settings).role("answer").base_url == settings.role("answer").base_url

"""Stops that wait for other people's code (docs/faults.md): `freshrag run` as a real process, with
a plugged-in system blocked in its own code (its own lock, its own socket) or a service that does
not reply, ends within seconds of SIGINT or SIGTERM at concurrency 1 and at the default, keeping
the finished rows; the resume asks the abandoned pairs again and no finished one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from freshrag.core.concurrency import GRACE_S, map_with_progress
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.samples import read_samples
from tests import ROOT
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import is_call_of

STUCK = ("Town 3", "Town 4", "Town 5")  # the pairs that never end while `stuck` is on
# Before, a blocked system held the stop forever at the default concurrency and a service that
# does not reply held it for its deadline and retries (minutes): the bound is the behaviour under
# test, generous for a shared machine.
STOP_BOUND_S = 5.0

SYSTEM = '''
import os
import socket
import threading

from freshrag import SystemAnswer

_lock = threading.Lock()
_lock.acquire()  # held for good: acquiring it again waits forever
_quiet, _ = socket.socketpair()  # nothing is ever sent on it


class Stuck:
    """Answers at once, except that while {flag} exists it blocks on the pairs of {stuck}."""

    def __init__(self, context):
        pass

    def answer(self, question):
        if os.path.exists({flag!r}) and question.gold_title in {stuck!r}:
            if {how!r} == "lock":
                _lock.acquire()
            else:
                _quiet.recv(1)
        return SystemAnswer(question.gold_title + " has four bridges.")
'''


def _system_spec(tmp_path, how):
    flag = tmp_path / "stuck"
    flag.touch()
    source = tmp_path / "stuck_system.py"
    source.write_text(SYSTEM.format(flag=str(flag), stuck=STUCK, how=how))
    return f"mine={source}:Stuck", flag.unlink


def _service_spec(tmp_path, server, stuck):
    def route(request, headers):
        if stuck["on"] and any(f"{town} " in request["question"] for town in STUCK):
            return {"json": {"answer": "late"}, "delay": 120}
        return {"json": {"answer": "Four bridges."}}

    server.services["/rag"] = route
    (tmp_path / "freshrag.toml").write_text(f'[systems.slow]\nurl = "http://127.0.0.1:'
                                            f'{server.port}/rag"\n')
    return "slow", lambda: stuck.update(on=False)


def _started(command, env):
    # SIGINT as from a terminal: a test started in the background of a non-interactive shell
    # would hand the run SIGINT ignored, which freshrag then leaves ignored
    return subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_rows(samples, count, process):
    waited = time.monotonic() + 60
    while time.monotonic() < waited and process.poll() is None and (
            not samples.exists() or len(samples.read_text().splitlines()) < count):
        time.sleep(0.05)
    time.sleep(0.5)  # the stuck pairs are now inside the system's code or the service's wait


@pytest.mark.parametrize("what, concurrency, signum", [
    pytest.param("lock", "1", signal.SIGINT, id="own-lock-serial-SIGINT"),
    pytest.param("lock", "8", signal.SIGTERM, id="own-lock-default-SIGTERM"),
    pytest.param("socket", "8", signal.SIGINT, id="own-socket-default-SIGINT"),
    pytest.param("service", "1", signal.SIGTERM, id="slow-service-serial-SIGTERM"),
    pytest.param("service", "8", signal.SIGINT, id="slow-service-default-SIGINT"),
])
def test_a_stop_abandons_code_that_blocks_and_the_resume_asks_it_again(tmp_path, what,
                                                                      concurrency, signum):
    q, a = write_dataset(tmp_path, n=6, content=bridges_and_mayor)
    with FakeOpenAIServer() as server:
        spec, unstick = (_service_spec(tmp_path, server, {"on": True}) if what == "service"
                         else _system_spec(tmp_path, what))
        env = {**os.environ, "FRESHRAG_BASE_URL": server.base_url, "FRESHRAG_API_KEY": "sk-x"}
        samples = tmp_path / "run" / "samples.jsonl"
        command = [sys.executable, "-m", "freshrag", "run", "--questions", str(q), "--articles",
                   str(a), "--out", str(tmp_path / "run"), "--systems", spec, "--no-probe",
                   "--concurrency", concurrency, "--config", str(tmp_path / "freshrag.toml")]
        (tmp_path / "freshrag.toml").touch()
        process = _started(command, env)
        _wait_for_rows(samples, 3, process)
        process.send_signal(signum)
        sent = time.monotonic()
        try:
            _, err = process.communicate(timeout=60)
        finally:
            process.kill()
        took = time.monotonic() - sent
        assert took < STOP_BOUND_S, f"the run took {took:.1f} s to stop"
        assert process.returncode == 128 + signum, err
        assert "stopped; finished work is kept" in err and "Traceback" not in err
        finished = read_samples(samples)
        assert sorted(row["gold_title"] for row in finished) == ["Town 0", "Town 1", "Town 2"]
        assert all(row["status"] == "ok" for row in finished)
        unstick()
        server.reset_counts()
        asked = len(server.service_requests)
        resumed = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                                 timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        redone = [request for request in server.requests for row in finished
                  if is_call_of(request, row)]
        services_asked = [json.dumps(request) for _, request, _ in
                          server.service_requests[asked:]]
    assert redone == []
    assert all(any(town in request for town in STUCK) for request in services_asked)
    rows = read_samples(samples)
    assert len(rows) == 6 and all(row["status"] == "ok" for row in rows)


def test_a_stop_abandons_an_item_blocked_in_its_own_code_after_the_grace():
    release = threading.Event()

    def item(n):
        if n == 0:
            release.wait()  # someone else's code, waiting on its own event
        if n == 1:
            time.sleep(0.2)
            raise KeyboardInterrupt  # the stop, as the signal's handler raises it
        return n

    raised: list[BaseException] = []

    def mapping():  # on a thread of its own, so that a map that never gives up fails the test
        try:
            map_with_progress(item, range(6), concurrency=3)
        except BaseException as err:
            raised.append(err)

    runner = threading.Thread(target=mapping, daemon=True)
    started = time.monotonic()
    runner.start()
    runner.join(timeout=5)
    took = time.monotonic() - started
    release.set()
    assert not runner.is_alive(), "the map waited for the blocked item"
    assert [type(err) for err in raised] == [KeyboardInterrupt]
    assert took < 0.2 + GRACE_S + 0.5, f"the map took {took:.2f} s to give up"


def test_a_row_written_after_the_writer_closed_goes_nowhere(tmp_path):
    writer = JsonlWriter(tmp_path / "samples.jsonl")
    writer.close()
    other = os.open(tmp_path / "other", os.O_WRONLY | os.O_CREAT)  # may take the closed number
    try:
        with pytest.raises(ValueError, match=r"samples.jsonl: closed, the row is not written"):
            writer.write({"a": 1})
        writer.close()  # twice: nothing happens, whichever file has the number now
    finally:
        os.close(other)
    assert (tmp_path / "other").read_bytes() == b""
    assert (tmp_path / "samples.jsonl").read_bytes() == b""

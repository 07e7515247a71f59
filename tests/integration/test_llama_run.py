"""The real thing: `freshrag run` on the embedded llama.cpp server with SmolLM2-135M.

Two questions of the paper's A_f set, systems baseline and oracle, the judge included. The run
is killed with SIGKILL half-way (two of its four pairs written) and resumed; nothing that
finished may be done again, and the embedded server must not outlive the killed run.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from freshrag.core.samples import read_samples
from tests import WIKIRAG
from tests.support.fakes import clean_env

pytestmark = pytest.mark.integration

DATA = WIKIRAG
ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = 2  # four pairs: killed after two, two left for the resumed run


def freshrag_run(out: Path) -> list[str]:
    return [sys.executable, "-m", "freshrag", "run", "--questions", str(DATA / "questions-A_f.jsonl"),
            "--articles", str(DATA / "articles.jsonl"), "--limit", str(QUESTIONS), "--out", str(out),
            "--systems", "baseline,oracle", "--concurrency", "1", "--seed", "7",
            "--no-probe"]  # the judge probes have their own test (test_probe_judge.py)


def wait_for_rows(samples: Path, count: int, process: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if samples.exists() and len(samples.read_text().splitlines()) >= count:
            return
        assert process.poll() is None, "run ended before it could be killed"
        time.sleep(0.5)
    raise AssertionError(f"fewer than {count} rows after {timeout_s} s")


def server_answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2):
            return True
    except OSError:
        return False


def server_processes(port: int) -> list[int]:
    """Pids of embedded servers started for `port`, either runtime (from /proc, Linux)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue  # the process ended while we looked
        runtime = b"llama_cpp.server" in args or b"freshrag.llm.embedded_server" in args
        if runtime and str(port).encode() in args:
            found.append(int(cmdline.parent.name))
    return found


def test_killed_run_resumes_without_redoing_finished_pairs(tmp_path):
    out = tmp_path / "run"
    samples = out / "samples.jsonl"
    first = subprocess.Popen(freshrag_run(out), env=clean_env(), cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_rows(samples, QUESTIONS, first, timeout_s=600)
    first.send_signal(signal.SIGKILL)
    first.wait()
    before = {(r["question_id"], r["system"]): r for r in read_samples(samples)}
    local_url = json.loads((out / "manifest.json").read_text())["llm"]["resolved_base_urls"]["answer"]
    port = urlsplit(local_url).port
    deadline = time.monotonic() + 15
    while (server_answers(local_url) or server_processes(port)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not server_answers(local_url), "embedded server outlived its killed parent"
    # gone, not just deaf: a server that stops listening but finishes its queue burns the cores
    assert not server_processes(port), "embedded server process outlived its killed parent"

    resumed = subprocess.run(freshrag_run(out), env=clean_env(), cwd=tmp_path,
                             capture_output=True, text=True, timeout=1200)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = [line.split("|")[1].strip() for line in resumed.stdout.splitlines()
               if line.startswith("| ")]
    assert "baseline" in summary and "oracle" in summary

    lines = samples.read_text().splitlines()
    rows = read_samples(samples)
    assert len(lines) == len(rows) == 2 * QUESTIONS  # no pair was written twice
    assert [json.loads(line) for line in lines[:len(before)]] == list(before.values())  # untouched
    for row in rows:
        assert row["status"] == "ok", row["error"]
        usage = row["usage"]["answer"]
        assert usage["input"] > 0 and usage["output"] > 0 and not usage["estimated"]
        assert row["usage"]["judge"]["input"] > 0
        grade = row["grade"]
        if grade["unscored_reason"] is None:
            assert 1 <= grade["truthfulness"] <= 5 and 1 <= grade["relevance"] <= 5
        else:
            assert grade["truthfulness"] is None and grade["raw"]
        if row["system"] == "oracle":
            assert row["gold_title"] in row["calls"][0]["messages"][0]["content"]


def test_a_server_killed_by_hand_mid_run_is_named_and_finished_pairs_are_kept(tmp_path):
    out = tmp_path / "run"
    samples = out / "samples.jsonl"
    run = subprocess.Popen(freshrag_run(out), env=clean_env(), cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_rows(samples, 1, run, timeout_s=600)
        local_url = json.loads((out / "manifest.json").read_text())["llm"]["resolved_base_urls"]["answer"]
        (server,) = server_processes(urlsplit(local_url).port)
        os.kill(server, signal.SIGKILL)
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 2, stderr[-2000:]
    assert "embedded llama.cpp server" in stderr and "killed by signal 9 (SIGKILL)" in stderr
    assert "freshrag-llama-" in stderr and ".log" in stderr  # where its log is
    assert "Traceback" not in stderr
    assert read_samples(samples), "finished pairs were lost"

"""Chaos benchmark: `freshrag run` against a server that mixes every reply fault at random, then
a resume against the same server healthy (docs/faults.md).

    python tests/benchmarks/bench_chaos.py [--pairs 1000] [--fault-rate 0.3] [--seed 0]

A dataset of pairs/2 invented questions, systems baseline and oracle (two calls a pair: answer,
judge), concurrency 32, `timeout_s = 2`, `max_attempts = 2`, probes off. In the first run a seeded
draw per request sends, at `--fault-rate`, one of the faults below instead of a completion; the
resume sends none. (A 401 or 403 is left out: it stops the run by design, tests/run/
test_run_faults.py.) Printed (and written as JSON to stdout's last line): pairs ok and failed after
the first run, the failures by reason, tracebacks (0), hangs (0: each run ends within its bound),
rows lost (0: every pair has one row, none written twice, no finished pair asked again), the
resume's calls (those of the failed pairs only) and every pair ok after the resume.

It never fails because a figure is off; it says so in the JSON (`ok`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `tests.` is importable when run as a script

from freshrag.core.samples import SAMPLES, read_samples  # noqa: E402
from freshrag.llm.replies import MAX_REPLY_CHARS  # noqa: E402
from tests.support.datasets import write_dataset  # noqa: E402
from tests.support.fake_openai_server import FakeOpenAIServer, default_reply  # noqa: E402
from tests.support.fakes import is_call_of  # noqa: E402

COMPLETION = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "fine"}}]}
# name -> the raw reply (tests/support/fake_openai_server.py `_send_raw`), and the words of the
# reason a failed row gives for it
FAULTS = {
    "html page": ({"raw": {"body": "<html><h1>502 Bad Gateway</h1></html>"}},
                  "not a chat completion"),
    "cut JSON": ({"raw": {"body": json.dumps(COMPLETION)[:50],
                          "content_type": "application/json"}}, "not an OpenAI response"),
    "body shorter than its length": ({"raw": {"json": COMPLETION, "length": 5000}},
                                     "APIConnectionError"),
    "5,000-digit number": ({"raw": {"body": '{"choices": [], "created": ' + "9" * 5000 + "}",
                                    "content_type": "application/json"}},
                           "not an OpenAI response"),
    "no choices": ({"raw": {"json": {**COMPLETION, "choices": []}}}, "no choices"),
    "text is a number": ({"raw": {"json": {**COMPLETION, "choices": [
        {"index": 0, "message": {"role": "assistant", "content": 7}}]}}}, "text is int"),
    "over-long text": ({"content": "x" * (MAX_REPLY_CHARS + 1)}, "more than the 1,000,000"),
    "a byte at a time": ({"raw": {"json": COMPLETION, "drip": 0.05}}, "APITimeoutError"),
    "no reply": ({"raw": {"json": COMPLETION, "delay": 60}}, "APITimeoutError"),
    "HTTP 500": ({"error": {"status": 500, "message": "boom", "type": "server_error"}},
                 "HTTP 500"),
    "HTTP 429": ({"error": {"status": 429, "message": "slow down", "type": "rate_limit_error"}},
                 "HTTP 429"),
}
CONFIG = "timeout_s = 2\nmax_attempts = 2\n"


def log(message: str) -> None:
    print(f"[chaos] {message}", file=sys.stderr, flush=True)


def chaotic(rate: float, seed: int, on: dict[str, bool], sent: Counter):
    """A reply function: a fault for a seeded share of requests while `on["faults"]`."""
    names = sorted(FAULTS)

    def reply(request: dict) -> dict:
        digest = hashlib.sha256((json.dumps(request, sort_keys=True) + str(seed)).encode())
        draw = random.Random(digest.digest())
        if on["faults"] and draw.random() < rate:
            name = draw.choice(names)
            sent[name] += 1
            return FAULTS[name][0]
        return default_reply(request)

    return reply


def reason_of(error: str) -> str:
    """The words of freshrag's reason (two faults may share them: a cut body and a huge number
    are both unreadable), or "other"."""
    return next((words for _, words in FAULTS.values() if words in error), "other")


def run(command: list[str], env: dict[str, str], bound_s: float) -> tuple[int | None, str, float]:
    """(exit status or None if it had to be killed, stderr, seconds)."""
    started = time.monotonic()
    try:
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=bound_s)
        return done.returncode, done.stderr, time.monotonic() - started
    except subprocess.TimeoutExpired as err:
        stderr = err.stderr.decode() if isinstance(err.stderr, bytes) else (err.stderr or "")
        return None, stderr, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--fault-rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="freshrag-chaos-"))
    questions, articles = write_dataset(work, n=args.pairs // 2)
    (work / "chaos.toml").write_text(CONFIG)
    on, sent = {"faults": True}, Counter()
    with FakeOpenAIServer(reply=chaotic(args.fault_rate, args.seed, on, sent)) as server:
        env = {**os.environ, "FRESHRAG_BASE_URL": server.base_url, "FRESHRAG_API_KEY": "sk-chaos"}
        command = [sys.executable, "-m", "freshrag", "run", "--questions", str(questions),
                   "--articles", str(articles), "--out", str(work / "run"), "--systems",
                   "baseline,oracle", "--concurrency", "32", "--no-probe", "--config",
                   str(work / "chaos.toml")]
        bound = 600.0
        log(f"first run: {args.pairs} pairs, faults at {args.fault_rate:.0%} of requests")
        first, first_err, first_s = run(command, env, bound)
        rows = read_samples(work / "run" / SAMPLES)
        failed = [row for row in rows if row["status"] == "failed"]
        finished = [row for row in rows if row["status"] == "ok"]
        on["faults"] = False
        server.reset_counts()
        log(f"resume: {len(failed)} failed pairs to ask again")
        second, second_err, second_s = run(command, env, bound)
        resumed_requests = list(server.requests)
        resume_calls = server.calls
    after = read_samples(work / "run" / SAMPLES)
    lines = (work / "run" / SAMPLES).read_text().splitlines()
    redone = sum(1 for request in resumed_requests for row in finished if is_call_of(request, row))
    figures = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "pairs": args.pairs, "fault_rate": args.fault_rate, "seed": args.seed,
        "faults_sent": dict(sorted(sent.items())),
        "first_run": {"exit": first, "seconds": round(first_s, 1), "ok": len(finished),
                      "failed": len(failed),
                      "failed_by_reason": dict(Counter(reason_of(r["error"]) for r in failed))},
        "tracebacks": first_err.count("Traceback") + second_err.count("Traceback"),
        "hangs": (first is None) + (second is None),
        "rows_lost": args.pairs - len(after),
        # the first run's rows, then one more for each pair that had failed
        "rows_written_twice": len(lines) - len(rows) - len(failed),
        "finished_pairs_asked_again": redone,
        "resume": {"exit": second, "seconds": round(second_s, 1), "calls": resume_calls,
                   "calls_of_failed_pairs_at_most": 2 * len(failed),
                   "ok": sum(row["status"] == "ok" for row in after)},
    }
    figures["ok"] = (figures["tracebacks"] == 0 and figures["hangs"] == 0
                     and figures["rows_lost"] == 0 and redone == 0
                     and figures["resume"]["ok"] == args.pairs and second == 0
                     and resume_calls <= 2 * len(failed))
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

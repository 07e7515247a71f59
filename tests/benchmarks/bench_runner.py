"""Benchmark of `freshrag run` against the fake OpenAI-compatible server
(docs/measurements.md#runner).

Run it from anywhere:

    python tests/benchmarks/bench_runner.py [--calls 2000] [--quick]

It prints ONE JSON object on stdout (progress and the runs' own output go to stderr) and never
fails because a target is missed: every target is reported with a boolean "met". What it measures,
on a synthetic dataset of N = calls/2 invented questions, system `baseline` (each pair makes
exactly two LLM calls: one answer, one judge), fake server answering after 0.25 s:

1. throughput: N pairs at concurrency 32 (cache on, so that step 2 can replay it);
   efficiency = (calls x 0.25 s / 32) / wall, target >= 0.8; then a few pairs at concurrency 1,
   speedup = per-call wall at concurrency 1 / per-call wall at concurrency 32, target >= 20x;
2. cache: the same job into a new run directory sharing the cache: 0 server calls, wall <= 10 s;
3. faults: 10% of calls answered 429, 10% answered 500, 5% hanging 30 s, client timeout 2 s
   and 10 attempts: no pair lost, retries visible in the server's call count;
4. kill and resume: `python -m harness run` killed with SIGKILL at about half the pairs, then
   run again: no call of a pair finished before the kill is made again, every pair ends exactly
   once with status ok.

Steps 1-3 call `freshrag.cli.main.main` in this process (timed around the call, so Python start-up and
imports are not counted; the fake server shares this process); step 4 needs a real process.
`--quick` scales everything down ~10x for a smoke check.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `tests.` is importable when run as a script

from freshrag.cli.main import main as freshrag_main  # noqa: E402
from freshrag.core.samples import SAMPLES, read_samples  # noqa: E402
from tests.support.datasets import write_dataset  # noqa: E402
from tests.support.fake_openai_server import FakeOpenAIServer, FaultPlan  # noqa: E402
from tests.support.fakes import is_call_of  # noqa: E402

DELAY = 0.25       # seconds the fake server takes per call
CONCURRENCY = 32
SERIAL_PAIRS = 40  # pairs at concurrency 1: 80 calls, about 20 s
FAULTS = FaultPlan(rate_limit=0.10, server_error=0.10, timeout=0.05, hang_seconds=30)
FAULT_CONFIG = "timeout_s = 2\nmax_attempts = 10\n"
COMMAND = "python tests/benchmarks/bench_runner.py"


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def town_article(i: int) -> str:
    """Town i's short article: bridges, a river, a mayor and the year of the mayor's election."""
    return (f"Town {i} lies on the river Ves and has {i % 9 + 2} bridges. Its mayor, Ola Brenn "
            f"{i}, was elected in 20{i % 30 + 10:02d}.")


def point_at(server: FakeOpenAIServer, env: dict[str, str]) -> dict[str, str]:
    """env without any FRESHRAG_* setting but the three that aim every role at the fake server."""
    env = {k: v for k, v in env.items() if not k.startswith("FRESHRAG_")}
    return {**env, "FRESHRAG_BASE_URL": server.base_url, "FRESHRAG_API_KEY": "bench-key",
            "FRESHRAG_MODEL": "fake-model"}


def run_args(data: tuple[Path, Path], out: Path, concurrency: int, config: Path,
             *extra: str) -> list[str]:
    return ["run", "--questions", str(data[0]), "--articles", str(data[1]), "--out", str(out),
            "--systems", "baseline", "--concurrency", str(concurrency), "--config", str(config),
            *extra]


def timed_run(server: FakeOpenAIServer, args: list[str]) -> tuple[float, int]:
    """`freshrag ARGS` in this process against the server: (wall seconds, exit code)."""
    env = point_at(server, dict(os.environ))
    os.environ.clear()
    os.environ.update(env)
    server.reset_counts()
    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # the run's report must not mix with our JSON
        code = freshrag_main(args)
    return time.perf_counter() - started, code


def bench_throughput_and_cache(data, tmp: Path, n: int, serial: int, config: Path) -> tuple[dict, dict]:
    with FakeOpenAIServer(delay=DELAY) as server:
        log(f"throughput: {n} pairs at concurrency {CONCURRENCY}")
        wall32, code32 = timed_run(server, run_args(data, tmp / "cached" / "run-a", CONCURRENCY, config))
        calls32 = server.calls
        log(f"throughput: {serial} pairs at concurrency 1")
        wall1, code1 = timed_run(server, run_args(data, tmp / "serial" / "run", 1, config,
                                                  "--limit", str(serial)))
        calls1 = server.calls
        log(f"cache: the {n} pairs again into a new run directory sharing the cache")
        wall_c, code_c = timed_run(server, run_args(data, tmp / "cached" / "run-b", CONCURRENCY, config))
        calls_c = server.calls
    rows_c = read_samples(tmp / "cached" / "run-b" / SAMPLES)
    ideal = calls32 * DELAY / CONCURRENCY
    efficiency = ideal / wall32
    per_call_32, per_call_1 = wall32 / max(calls32, 1), wall1 / max(calls1, 1)
    speedup = per_call_1 / per_call_32
    throughput = {
        "concurrency_32": {"pairs": n, "calls_expected": 2 * n, "server_calls": calls32,
                           "wall_s": round(wall32, 2), "ideal_wall_s": round(ideal, 2),
                           "per_call_s": round(per_call_32, 4), "exit_code": code32},
        "concurrency_1": {"pairs": serial, "calls_expected": 2 * serial, "server_calls": calls1,
                          "wall_s": round(wall1, 2), "per_call_s": round(per_call_1, 4),
                          "exit_code": code1},
        "efficiency": round(efficiency, 3), "speedup": round(speedup, 1),
        "met": {"efficiency >= 0.8": efficiency >= 0.8, "speedup >= 20": speedup >= 20},
    }
    cache = {"pairs": n, "server_calls": calls_c, "wall_s": round(wall_c, 2),
             "rows": len(rows_c), "rows_all_cache_hits": all(c["cache_hit"] for r in rows_c
                                                              for c in r["calls"]),
             "exit_code": code_c,
             "met": {"server calls == 0": calls_c == 0, "wall <= 10 s": wall_c <= 10}}
    return throughput, cache


def bench_faults(data, tmp: Path, n: int, n_total: int) -> dict:
    config = tmp / "faults.toml"
    config.write_text(FAULT_CONFIG, encoding="utf-8")
    out = tmp / "faults" / "run"
    with FakeOpenAIServer(delay=DELAY, faults=FAULTS) as server:
        log(f"faults: {n} pairs at concurrency {CONCURRENCY}, {FAULTS}")
        wall, code = timed_run(server, run_args(data, out, CONCURRENCY, config,
                                                "--limit", str(n)))
        calls = server.calls
    rows = read_samples(out / SAMPLES)
    ok = sum(r["status"] == "ok" for r in rows)
    failed = [r for r in rows if r["status"] == "failed"]
    missing = n - len(rows)
    return {"fault_plan": {"rate_limit_429": FAULTS.rate_limit, "server_error_500": FAULTS.server_error,
                           "timeout": FAULTS.timeout, "hang_s": FAULTS.hang_seconds},
            "client": {"timeout_s": 2, "max_attempts": 10, "backoff": "default (1 s, random exponential)"},
            "pairs_expected": n, "calls_expected_without_faults": 2 * n,
            "scaled_down": n < n_total, "rows_ok": ok, "rows_failed": len(failed),
            "rows_missing": missing, "server_calls": calls, "wall_s": round(wall, 2),
            "exit_code": code, "failed_errors": sorted({r["error"][:200] for r in failed})[:5],
            "met": {"no pair lost (rows missing == 0)": missing == 0,
                    "retries seen (server calls > calls expected)": calls > 2 * n,
                    "every pair ok": ok == n}}


def bench_kill_resume(data, tmp: Path, n: int, config: Path) -> dict:
    out = tmp / "kill" / "run"
    samples = out / SAMPLES
    command = [sys.executable, "-m", "freshrag", *run_args(data, out, CONCURRENCY, config)]
    with FakeOpenAIServer(delay=DELAY) as server:
        env = point_at(server, dict(os.environ))
        log(f"kill/resume: {n} pairs in a subprocess, SIGKILL at about {n // 2}")
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 180
        while process.poll() is None and time.monotonic() < deadline and line_count(samples) < n // 2:
            time.sleep(0.02)
        exited_before_kill = process.poll() is not None
        process.send_signal(signal.SIGKILL)
        process.wait()
        lines_at_kill = line_count(samples)
        finished = [r for r in read_samples(samples) if r["status"] == "ok"]
        server.reset_counts()
        log(f"kill/resume: {len(finished)} pairs finished before the kill; resuming")
        started = time.perf_counter()
        resumed = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, timeout=300)
        wall = time.perf_counter() - started
        after, calls_after = list(server.requests), server.calls
    by_question = {r["question"]: r for r in finished}  # questions are unique: index, then confirm
    redone = [req for req in after if any(is_call_of(req, row) for row in _candidates(req, by_question))]
    rows = read_samples(samples)
    keys = [(r["question_id"], r["system"]) for r in rows]
    lines = line_count(samples)
    lost = n - len(set(keys))
    return {"pairs": n, "process_exited_before_kill": exited_before_kill,
            "rows_at_kill": lines_at_kill, "finished_before_kill": len(finished),
            "calls_after_resume": calls_after,
            "calls_after_resume_max": 2 * (n - len(finished)),
            "redone_calls": len(redone), "lost_pairs": lost,
            "final_rows": len(rows), "final_lines": lines, "duplicate_lines": lines - len(rows),
            "final_all_ok": all(r["status"] == "ok" for r in rows),
            "resume_wall_s": round(wall, 2), "resume_exit_code": resumed.returncode,
            "resume_stderr_tail": resumed.stderr[-500:] if resumed.returncode else "",
            "met": {"redone calls == 0": not redone, "lost pairs == 0": lost == 0,
                    "every pair exactly once, ok": (len(rows) == lines == n and
                                                    all(r["status"] == "ok" for r in rows))}}


def _candidates(request: dict, by_question: dict[str, dict]) -> list[dict]:
    """The finished rows a request could belong to (its question text), to keep matching linear."""
    user = request["messages"][1]["content"]
    if user.startswith("Query: "):
        user = user[len("Query: "):].split("\n\nChatbot's answer: ", 1)[0]
    return [by_question[user]] if user in by_question else []


def line_count(path: Path) -> int:
    try:
        return sum(1 for line in path.read_bytes().split(b"\n") if line.strip())
    except FileNotFoundError:
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="LLM calls per job (default: 2000)")
    parser.add_argument("--fault-calls", type=int, help="calls in the fault job (default: --calls)")
    parser.add_argument("--quick", action="store_true", help="everything ~10x smaller (smoke check)")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    n = max(2, args.calls // 2 // scale)
    n_faults = min(n, max(2, (args.fault_calls or args.calls) // 2 // scale))
    serial = max(2, SERIAL_PAIRS // scale)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="freshrag-bench-") as name:
        tmp = Path(name)
        data = write_dataset(tmp, n, content=town_article)
        config = tmp / "plain.toml"  # explicit, so that no ./freshrag.toml is picked up
        config.write_text("", encoding="utf-8")
        throughput, cache = bench_throughput_and_cache(data, tmp, n, serial, config)
        faults = bench_faults(data, tmp, n_faults, n)
        kill_resume = bench_kill_resume(data, tmp, n, config)
    sections = {"throughput": throughput, "cache": cache, "faults": faults, "kill_resume": kill_resume}
    result = {
        "machine": {"cpus": os.cpu_count(), "cpus_usable": len(os.sched_getaffinity(0)),
                    "python": platform.python_version(), "platform": platform.platform()},
        "setup": {"calls": 2 * n, "pairs": n, "system": "baseline", "calls_per_pair": 2,
                  "server_delay_s": DELAY, "concurrency": CONCURRENCY, "quick": args.quick,
                  "steps_1_to_3": "in-process freshrag.cli.main.main, fake server in the same process",
                  "step_4": "python -m harness run subprocesses"},
        **sections,
        "all_met": all(all(s["met"].values()) for s in sections.values()),
        "total_wall_s": round(time.perf_counter() - started, 1),
        "command": " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])]),
    }
    if args.quick:
        result["setup"]["note"] = "quick: jobs too small for the throughput targets to mean much"
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

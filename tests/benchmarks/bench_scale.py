"""Scale benchmark: what freshrag itself costs per call and per answer as runs grow
(docs/measurements.md#scale, issue 29).

    python tests/benchmarks/bench_scale.py [--sizes 1000,10000,100000] [--slow-max 10000]
                                           [--concurrency 128] [--latency 0.25]
                                           [--system baseline|react]

For each N it writes a synthetic dataset of N questions, then:

1. `freshrag run` with system `baseline` (two calls a pair: the answer and the judge's grade),
   `--no-probe --no-cache`, at `--concurrency`, against the project's fake OpenAI-compatible server
   answering at once (latency 0). The server runs in its own process, so that what is measured of
   the run's process (its wall time, its CPU time in user and system mode, its peak resident
   memory, from `os.wait4`) is freshrag's alone;
2. the same at `--latency` seconds per call, for N up to `--slow-max` (a 250 ms endpoint at
   concurrency 128 takes 2N x 0.25 / 128 s at best: 6.5 min for N = 100,000): efficiency is that
   ideal over the wall time;
3. `freshrag report RUN --format json` on the first run's directory: wall time and peak memory.

With `--system react` the pairs are the ReAct agent's on a scripted 3-step model (two searches,
then an answer: tests/support/agent_script.py) and the judge's, 4 calls a pair, N questions over
50 articles whose index is built before the timed run (a `--limit 1` run into another directory),
so that what is measured is freshrag's cost per call of an agent's steps, not the index's (an
embedded Qdrant query scans every vector: tests/benchmarks/bench_index.py; issue 38).

It prints a table and, as its last line, one JSON object; per N: the run's wall time, calls/s,
CPU per call (ms), peak memory, the slow run's efficiency, the report's wall time and peak memory;
then the slope of each against N between consecutive sizes (per 1,000 answers) and the exponent of
a power law through them (1.0: cost grows in proportion to the work). Targets (issue 29): CPU per
call <= 2 ms, slow efficiency >= 0.9, report on 100,000 answers < 30 s and < 500 MB. It never
fails because a figure is off: each target is reported with "met".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `tests.` is importable when run as a script

from tests.support.datasets import write_dataset  # noqa: E402

CPU_MS_PER_CALL = 2.0
SLOW_EFFICIENCY = 0.9
REPORT_S, REPORT_MB = 30.0, 500.0
REPORT_AT = 100_000
# calls a pair: baseline's answer and the judge's grade; react's two searching calls, its answer
# and the judge's grade
CALLS_PER_PAIR = {"baseline": 2, "react": 4}
SEARCHES = 2  # the scripted agent's searches before it answers
CORPUS = 50  # articles of react's datasets: what the harness costs a step, not the index a query

# The fake server in a process of its own: it prints its port, then serves until stdin closes.
SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.support.agent_script import searches_then_answers
from tests.support.fake_openai_server import FakeOpenAIServer
server = FakeOpenAIServer(reply=searches_then_answers({searches!r}), delay={delay!r},
                          capture=False).start()
print(server.port, flush=True)
sys.stdin.read()
server.stop()
"""


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def measured(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    """Run argv to its end; its wall time, CPU seconds (user + system) and peak memory (MB), from
    the kernel's account of that one child (os.wait4)."""
    with tempfile.TemporaryFile() as log_file:  # not a pipe: a progress bar would fill it
        started = time.perf_counter()
        child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log_file)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        log_file.seek(0)
        stderr = log_file.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:4])}... failed:\n{stderr[-3000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mb": usage.ru_maxrss / 1024}


class Server:
    """The fake OpenAI-compatible server answering after `delay` seconds, in its own process."""

    def __init__(self, delay: float):
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER.format(root=str(ROOT), delay=delay, searches=SEARCHES)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = f"http://127.0.0.1:{int(self.process.stdout.readline())}/v1"

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def freshrag(*args: str) -> list[str]:
    return [sys.executable, "-m", "freshrag", *args]


def run_once(data: Path, out: Path, delay: float, concurrency: int, system: str,
             *extra: str) -> dict[str, float]:
    with Server(delay) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRESHRAG_")}
        # the embeddings too: a query's vector from the fake server, as a chat reply is, and not
        # the local MiniLM's forward pass (a model's compute, not freshrag's: about 15 ms a query)
        env.update(FRESHRAG_BASE_URL=server.base_url, FRESHRAG_API_KEY="bench-key",
                   FRESHRAG_MODEL="fake-model", FRESHRAG_EMBEDDINGS_MODEL="fake-model")
        return measured(freshrag(
            "run", "--dataset", str(data), "--out", str(out), "--systems", system,
            "--concurrency", str(concurrency), "--no-probe", "--no-cache",
            "--config", str(data / "freshrag.toml"), *extra), env)


def measure_size(n: int, work: Path, args: argparse.Namespace) -> dict[str, float]:
    data = work / f"data-{n}"
    if args.system == "baseline":
        write_dataset(data, n, prices=(0.15, 0.60))
    else:  # N questions over a small corpus: each search costs the same at every N
        write_dataset(data, prices=(0.15, 0.60),
                      articles=[{"title": f"Town {i}", "content": f"Town {i} has {i + 3} bridges."}
                                for i in range(CORPUS)],
                      questions=[{"title": f"Town {i % CORPUS}",
                                  "question": f"How many bridges does Town {i % CORPUS} have? "
                                              f"({i})"} for i in range(n)])
    calls = n * CALLS_PER_PAIR[args.system]
    if args.system != "baseline":  # the index, built once beside the runs, is not timed
        log(f"N = {n:,}: the index, before the timed runs")
        run_once(data, work / f"index-{n}", 0.0, args.concurrency, args.system, "--limit", "1")
    log(f"N = {n:,}: run at latency 0, concurrency {args.concurrency}")
    fast = run_once(data, work / f"run-{n}", 0.0, args.concurrency, args.system)
    row = {"n": n, "run_wall_s": fast["wall_s"], "calls_per_s": calls / fast["wall_s"],
           "cpu_ms_per_call": 1000 * fast["cpu_s"] / calls, "run_peak_mb": fast["peak_mb"]}
    if n <= args.slow_max:
        log(f"N = {n:,}: run at latency {args.latency} s")
        slow = run_once(data, work / f"slow-{n}", args.latency, args.concurrency, args.system)
        ideal = calls * args.latency / args.concurrency
        row.update(slow_wall_s=slow["wall_s"], slow_ideal_s=ideal,
                   slow_efficiency=ideal / slow["wall_s"])
    log(f"N = {n:,}: report")
    report = measured(freshrag("report", str(work / f"run-{n}"), "--format", "json",
                               "--out", str(work / f"report-{n}")), dict(os.environ))
    row.update(report_wall_s=report["wall_s"], report_peak_mb=report["peak_mb"])
    return row


def slopes(rows: list[dict[str, float]], key: str) -> list[dict[str, float]]:
    """Between consecutive sizes: the increase per 1,000 answers and the power-law exponent."""
    out = []
    for a, b in zip(rows, rows[1:]):
        if key in a and key in b and a[key] > 0 and b[key] > 0:
            out.append({"from": a["n"], "to": b["n"],
                        "per_1000": 1000 * (b[key] - a[key]) / (b["n"] - a["n"]),
                        "exponent": math.log(b[key] / a[key]) / math.log(b["n"] / a["n"])})
    return out


def targets(rows: list[dict[str, float]]) -> dict[str, dict[str, object]]:
    worst_cpu = max(r["cpu_ms_per_call"] for r in rows)
    slow = [r["slow_efficiency"] for r in rows if "slow_efficiency" in r]
    found = {"cpu_ms_per_call": {"target": f"<= {CPU_MS_PER_CALL}", "value": worst_cpu,
                                 "met": worst_cpu <= CPU_MS_PER_CALL}}
    if slow:
        found["slow_efficiency"] = {"target": f">= {SLOW_EFFICIENCY}", "value": min(slow),
                                    "met": min(slow) >= SLOW_EFFICIENCY}
    big = [r for r in rows if r["n"] >= REPORT_AT]
    if big:
        r = big[0]
        found["report_100k"] = {"target": f"< {REPORT_S} s and < {REPORT_MB} MB",
                                "value": [r["report_wall_s"], r["report_peak_mb"]],
                                "met": r["report_wall_s"] < REPORT_S
                                and r["report_peak_mb"] < REPORT_MB}
    return found


def print_table(rows: list[dict[str, float]]) -> None:
    print(f"{'N':>8} {'run s':>8} {'calls/s':>8} {'CPU ms/call':>11} {'run MB':>7} "
          f"{'slow eff':>8} {'report s':>8} {'report MB':>9}")
    for r in rows:
        eff = f"{r['slow_efficiency']:.2f}" if "slow_efficiency" in r else "-"
        print(f"{r['n']:>8,} {r['run_wall_s']:>8.1f} {r['calls_per_s']:>8.0f} "
              f"{r['cpu_ms_per_call']:>11.2f} {r['run_peak_mb']:>7.0f} {eff:>8} "
              f"{r['report_wall_s']:>8.1f} {r['report_peak_mb']:>9.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="numbers of questions, comma-separated (default: %(default)s)")
    parser.add_argument("--slow-max", type=int, default=10_000,
                        help="largest N also run at --latency (default: %(default)s)")
    parser.add_argument("--latency", type=float, default=0.25,
                        help="seconds per call of the slow runs (default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=128,
                        help="pairs in flight (default: %(default)s)")
    parser.add_argument("--system", choices=sorted(CALLS_PER_PAIR), default="baseline",
                        help="baseline (2 calls a pair) or react on a scripted 3-step model "
                             "(4 calls a pair) (default: %(default)s)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="freshrag-scale-") as work:
        rows = [measure_size(n, Path(work), args) for n in sizes]
    print_table(rows)
    result = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "python": platform.python_version(),
                          "load_1min": os.getloadavg()[0]},
              "system": args.system, "concurrency": args.concurrency,
              "latency_s": args.latency, "sizes": rows,
              "slopes": {key: slopes(rows, key) for key in
                         ("run_wall_s", "cpu_ms_per_call", "run_peak_mb", "report_wall_s",
                          "report_peak_mb")},
              "targets": targets(rows)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()

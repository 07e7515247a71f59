"""The embedded model on a busy machine: its speed beside processes that keep cores busy, against
its fair share (docs/measurements.md#the-embedded-model-on-a-busy-machine).

    python tests/benchmarks/bench_contention.py runtime [--threads 2 1]
        [--wait default spin=1000 PASSIVE] [--busy 0 1 2] [--requests 4] [--generated 32]
    python tests/benchmarks/bench_contention.py embeddings [--workers 2 1] [--rounds 3]
    python tests/benchmarks/bench_contention.py two-runs [--pairs 3]
    python tests/benchmarks/bench_contention.py demo [--busy 0 1]

`runtime`: for each setting (threads, and how libgomp's threads wait at a barrier: `default` is
libgomp's own, 300,000 spins before sleeping; `ACTIVE` or `PASSIVE` set OMP_WAIT_POLICY; `spin=N`
sets GOMP_SPINCOUNT=N; `freshrag` leaves both unset for freshrag to choose by the load at the
server's start, which the busy processes, started first, are part of), one embedded server started as freshrag starts it
(harness/llm/local_server.py, the settings through FRESHRAG_LOCAL_THREADS and those variables), measured as tests/benchmarks/bench_demo_floor.py measures it (prompt
tokens/s of distinct example articles with one token generated, generated tokens/s of
`--generated`-token replies, one request per slot), beside 0, 1 or 2 busy processes
(`python -c "while True: pass"`, started and killed here, one per core taken).

The fair share. On n cores with b busy processes, a fair scheduler that treats the server as one
process among b + 1 gives it the larger of what the busy ones leave (n - b cores: each takes at
most one) and an equal split (n / (b + 1) cores). Idle it runs on all n, so

    fair(b) = idle × max(n - b, n / (b + 1)) / n

with `idle` the best idle rate of any setting measured in the same run (a setting that is slow
idle is not excused by its own slowness). On 2 cores: 1/2 of idle beside one busy process, 1/3
beside two. Each row reports `below_fair` = fair / measured; the target is at most 1.3.

`embeddings`: chunks/s of the local MiniLM over the example corpus' chunks (as the demo's index
is built) with 1 or 2 worker threads, alone, beside an idle embedded server, and beside one
generating in both slots (what a build beside a running server meets).

`two-runs`: two short `freshrag run`s (baseline, --no-probe, no cache, their own questions)
one after the other, at once each with its own embedded server (what two terminals do today),
and at once sharing one server (FRESHRAG_BASE_URL): wall time of each arrangement.

`demo`: `freshrag demo` in a new directory, idle and beside busy processes; wall time each.

Before any measurement it refuses to start while another llama.cpp server runs (pgrep). Prints
ONE JSON object on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_demo_floor import speed  # noqa: E402 (the one measure of the embedded rates)

CPUS = os.cpu_count() or 1
OTHER_SERVERS = "llama|xllamacpp|embedded_server"


def fair_share(idle: float, cpus: int, busy: int) -> float:
    """The rate a fair scheduler owes the server beside `busy` one-core processes (docstring)."""
    return idle * max(cpus - busy, cpus / (busy + 1)) / cpus


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """`count` children that each keep one core busy, killed (by their own pid) on the way out."""
    from freshrag.llm.local_server import _die_with_parent

    children = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                 preexec_fn=_die_with_parent) for _ in range(count)]
    try:
        time.sleep(1.0 if count else 0)  # the scheduler has them running before what follows
        yield
    finally:
        for child in children:
            child.kill()
            child.wait()


@contextlib.contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """os.environ with `values` set (None: removed), restored after."""
    before = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
        yield
    finally:
        for name, value in before.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)


def machine() -> dict:
    """What the figures were taken on: CPU model and its vector flags, cores, load."""
    flags = set()
    model = platform.processor()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16")
    return {"cpu": model, "flags": [f for f in wanted if f in flags], "cpus": CPUS,
            "load_average_before": [round(x, 2) for x in os.getloadavg()]}


def refuse_other_servers() -> None:
    found = subprocess.run(["pgrep", "-af", OTHER_SERVERS], capture_output=True, text=True)
    others = [line for line in found.stdout.splitlines()
              if str(os.getpid()) != line.split()[0] and "pgrep" not in line
              and "bench_contention" not in line]
    if others:
        sys.exit("another llama.cpp server runs, so no measurement is fair: " + "; ".join(others))


# -- runtime ---------------------------------------------------------------------------------

def waiting(setting: str) -> dict[str, str | None]:
    """The environment of a `--wait` setting (see the docstring). libgomp's default is named,
    300,000 spins, since with neither variable set freshrag sets its own."""
    if setting == "default":
        return {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "300000"}
    if setting == "freshrag":  # neither set: freshrag's own choice, by the load at start
        return {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": None}
    if setting.startswith("spin="):
        return {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": setting.removeprefix("spin=")}
    return {"OMP_WAIT_POLICY": setting, "GOMP_SPINCOUNT": None}


def measure_runtime(args: argparse.Namespace) -> dict:
    from freshrag.llm.local_server import LocalServer

    rows = []
    for threads in args.threads:
        for wait in args.wait:
            for busy in args.busy:  # the server starts beside them, as it would on a busy machine
                with environment(FRESHRAG_LOCAL_THREADS=str(threads), **waiting(wait)), \
                        busy_processes(busy), LocalServer() as server:
                    load = os.getloadavg()[0]
                    slots = server.concurrency()
                    row = {"threads": threads, "wait": wait, "busy": busy,
                           "spin_count": server.cpu_settings().spin_count or
                           os.environ.get("GOMP_SPINCOUNT") or os.environ.get("OMP_WAIT_POLICY"),
                           "prompt_tokens_per_s": speed(server.base_url, slots, args.requests, 0),
                           "generated_tokens_per_s": speed(server.base_url, slots, args.requests,
                                                           args.generated),
                           "load_1min": round(load, 2)}
                rows.append(row)
                print(f"[bench] {row}", file=sys.stderr, flush=True)
    return {"runs": with_fair_share(rows)}


def with_fair_share(rows: list[dict]) -> list[dict]:
    """Each row with its fair share of the best idle rate, and how far below it it ran."""
    for kind in ("prompt_tokens_per_s", "generated_tokens_per_s"):
        idle = max((r[kind] for r in rows if r["busy"] == 0), default=None)
        if idle is None:
            continue
        for row in rows:
            fair = fair_share(idle, CPUS, row["busy"])
            row[kind.replace("_per_s", "_fair")] = round(fair, 1)
            row[kind.replace("tokens_per_s", "below_fair")] = round(fair / row[kind], 2)
    return rows


# -- embeddings -------------------------------------------------------------------------------

def example_chunks() -> list[str]:
    from freshrag.core.dataset import example_dir, load_dataset_dir
    from freshrag.retrieval.chunking import chunk_articles
    from freshrag.retrieval.config import IndexConfig

    config = IndexConfig()
    articles = load_dataset_dir(example_dir()).articles.values()
    return [c.text for c in chunk_articles(articles, config.chunk_size, config.chunk_overlap)]


def chunks_per_s(chunks: list[str], workers: int, rounds: int) -> float:
    """The median of `rounds` encodings of every chunk, the model loaded before the first."""
    from freshrag.retrieval.embeddings import LocalMiniLM

    model = LocalMiniLM(workers=workers)
    model.embed(chunks[:8])
    rates = []
    for _ in range(rounds):
        started = time.perf_counter()
        model.embed(chunks)
        rates.append(len(chunks) / (time.perf_counter() - started))
    return round(sorted(rates)[len(rates) // 2], 1)


@contextlib.contextmanager
def generating(base_url: str, slots: int) -> Iterator[list[int]]:
    """The server generating in every slot until the block ends; the list it gives holds the
    tokens generated, counted as replies come back."""
    stop, done = threading.Event(), [0]

    def keep_busy() -> None:
        body = json.dumps({"messages": [{"role": "user", "content": "Tell a long story."}],
                           "max_tokens": 32, "ignore_eos": True}).encode()
        while not stop.is_set():
            request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=600) as reply:
                done[0] += json.loads(reply.read())["usage"]["completion_tokens"]

    with concurrent.futures.ThreadPoolExecutor(slots) as pool:
        futures = [pool.submit(keep_busy) for _ in range(slots)]
        try:
            time.sleep(1.0)
            yield done
        finally:
            stop.set()
            for future in futures:
                future.result()


def measure_embeddings(args: argparse.Namespace) -> dict:
    from freshrag.llm.local_server import LocalServer

    chunks = example_chunks()
    rows = [{"beside": "nothing", "workers": w, "chunks_per_s": chunks_per_s(chunks, w, args.rounds)}
            for w in args.workers]
    with LocalServer() as server:
        rows += [{"beside": "idle server", "workers": w,
                  "chunks_per_s": chunks_per_s(chunks, w, args.rounds)} for w in args.workers]
        with generating(server.base_url, server.concurrency()) as done:
            before, started = done[0], time.perf_counter()
            time.sleep(10)
            alone = (done[0] - before) / (time.perf_counter() - started)
        rows.append({"beside": "server generating", "workers": 0, "chunks_per_s": 0,
                     "server_generated_tokens_per_s": round(alone, 1)})
        for workers in args.workers:
            with generating(server.base_url, server.concurrency()) as done:
                before, started = done[0], time.perf_counter()
                rate = chunks_per_s(chunks, workers, args.rounds)
                generated = (done[0] - before) / (time.perf_counter() - started)
            rows.append({"beside": "server generating", "workers": workers, "chunks_per_s": rate,
                         "server_generated_tokens_per_s": round(generated, 1)})
    for row in rows:
        print(f"[bench] {row}", file=sys.stderr, flush=True)
    return {"chunks": len(chunks), "runs": rows}


# -- two runs at once, and the demo -----------------------------------------------------------

def freshrag_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}
    return {**env, **extra}


def run_command(tmp: Path, name: str, questions: list[str]) -> list[str]:
    from freshrag.core.dataset import example_dir

    own = tmp / f"{name}.jsonl"
    own.write_text("\n".join(questions) + "\n")
    return [sys.executable, "-m", "freshrag", "run", "--systems", "baseline",
            "--questions", str(own), "--articles", str(example_dir() / "articles.jsonl"),
            "--no-probe", "--no-cache", "--out", str(tmp / name)]


def timed(commands: list[list[str]], env: dict[str, str], cwd: Path) -> float:
    """Seconds for `commands` all started at once to finish; any failure stops the benchmark."""
    started = time.perf_counter()
    children = [subprocess.Popen(c, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True) for c in commands]
    for child in children:
        _, err = child.communicate()
        if child.returncode:
            sys.exit(f"{' '.join(child.args[2:5])} failed:\n{err[-2000:]}")
    return round(time.perf_counter() - started, 1)


def measure_two_runs(args: argparse.Namespace) -> dict:
    from freshrag.core.dataset import example_dir
    from freshrag.llm.local_server import LocalServer

    questions = (example_dir() / "questions.jsonl").read_text().splitlines()
    need = args.pairs * 6
    if len(questions) < need:
        sys.exit(f"--pairs {args.pairs}: the example set has {len(questions)} questions")
    sets = [questions[i * args.pairs:(i + 1) * args.pairs] for i in range(6)]
    rows = {}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        commands = [run_command(tmp, f"q{i}", s) for i, s in enumerate(sets)]
        env = freshrag_env()
        rows["one_after_the_other_s"] = (timed(commands[0:1], env, tmp)
                                         + timed(commands[1:2], env, tmp))
        print(f"[bench] {rows}", file=sys.stderr, flush=True)
        rows["at_once_own_servers_s"] = timed(commands[2:4], env, tmp)
        print(f"[bench] {rows}", file=sys.stderr, flush=True)
        started = time.perf_counter()  # the shared server's start counts, as each run's does
        with LocalServer() as server:
            start = time.perf_counter() - started
            shared = freshrag_env(FRESHRAG_BASE_URL=server.base_url,
                                  FRESHRAG_MODEL="smollm2-135m-instruct")
            rows["at_once_shared_server_s"] = round(start + timed(commands[4:6], shared, tmp), 1)
    print(f"[bench] {rows}", file=sys.stderr, flush=True)
    return {"pairs_per_run": args.pairs, **rows}


def measure_demo(args: argparse.Namespace) -> dict:
    rows = []
    for busy in args.busy:
        with tempfile.TemporaryDirectory() as name, busy_processes(busy):
            load = os.getloadavg()[0]
            out = Path(name) / "demo"
            seconds = timed([[sys.executable, "-m", "freshrag", "demo", "--out", str(out)]],
                            freshrag_env(), Path(name))
            stages = json.loads((out / "timings.json").read_text())["stages"]
        rows.append({"busy": busy, "load_1min": round(load, 2), "wall_s": seconds,
                     "stages_s": {s["stage"]: s["seconds"] for s in stages}})
        print(f"[bench] {rows[-1]}", file=sys.stderr, flush=True)
    idle = next((r["wall_s"] for r in rows if r["busy"] == 0), None)
    for row in rows:
        row["times_idle"] = round(row["wall_s"] / idle, 2) if idle else None
    return {"runs": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    runtime = sub.add_parser("runtime")
    runtime.add_argument("--threads", type=int, nargs="+", default=[CPUS])
    runtime.add_argument("--wait", nargs="+", default=["default"],
                         help="default, ACTIVE, PASSIVE or spin=N (GOMP_SPINCOUNT)")
    runtime.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2])
    runtime.add_argument("--requests", type=int, default=4, help="requests per speed measurement")
    runtime.add_argument("--generated", type=int, default=32, help="tokens per reply")
    embeddings = sub.add_parser("embeddings")
    embeddings.add_argument("--workers", type=int, nargs="+", default=[CPUS, 1])
    embeddings.add_argument("--rounds", type=int, default=3)
    sub.add_parser("two-runs").add_argument("--pairs", type=int, default=3)
    sub.add_parser("demo").add_argument("--busy", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))  # run the finallys
    refuse_other_servers()
    report = machine()
    measure = {"runtime": measure_runtime, "embeddings": measure_embeddings,
               "two-runs": measure_two_runs, "demo": measure_demo}[args.what]
    report.update(measure(args))
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

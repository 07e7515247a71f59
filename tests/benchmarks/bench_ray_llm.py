"""Benchmark of a single-call role on Ray Data's HTTP processor against the run's own client
(docs/measurements.md#executors): `ray.data.llm`'s `HttpRequestProcessorConfig` sends each row's
request from an actor with aiohttp, batch by batch; freshrag's `LLMClient` sends it from a
thread pool. The role is the judge's: one call an answer, the article, the question and the
answer in, a forced `submit_grade` tool call out, its arguments parsed.

    python tests/benchmarks/bench_ray_llm.py [--calls 800] [--quick]

Both send the same request bodies (made by the client's own `prepare`) to the fake server, in a
process of its own so that its CPU is not counted, at 32 requests in flight (the client's
threads; the processor's batch of 32 on one actor), once with the server answering after 0.25 s
(I/O-bound) and once at once (the harness's own CPU is what limits). It prints one JSON object
(progress on stderr) with the load before and after; CPU is this process's and every process it
started (Ray's head, raylets and workers: on Ray they are the harness's cost). The Ray cluster's
start is timed apart from the calls; the Dataset's first execution (its actor's start) is in
the calls' time, as it would be in a run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `tests.` is importable when run as a script

from freshrag.core.dataset import example_dir, load_dataset_dir  # noqa: E402
from freshrag.scoring.judge import GRADE_TOOL, JUDGE_MAX_TOKENS, judge_messages  # noqa: E402
from tests.benchmarks.bench_executors import Endpoint, _tree_cpu  # noqa: E402
from tests.support.fakes import SECRET  # noqa: E402
from tests.support.llm import client  # noqa: E402

IN_FLIGHT = 32


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def requests(calls: int) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """`calls` judge conversations over the example dataset's questions (each answer made
    distinct, so that no two bodies are equal), and the bodies the client would send."""
    dataset = load_dataset_dir(example_dir())
    conversations = []
    for i in range(calls):
        question = dataset.questions[i % len(dataset.questions)]
        gold = dataset.articles.get(question.gold_title or "")
        answer = f"Answer {i}: the reference says so."
        conversations.append(judge_messages(question, answer, gold.prompt_text() if gold else None))
    llm = client("http://127.0.0.1:1/v1")
    bodies = [llm.prepare("judge", messages, tools=[GRADE_TOOL], tool_choice="submit_grade",
                          temperature=0.0, max_tokens=JUDGE_MAX_TOKENS)[0]
              for messages in conversations]
    return conversations, bodies


def grade_of(reply: dict[str, Any]) -> dict[str, Any]:
    call = reply["choices"][0]["message"]["tool_calls"][0]
    return json.loads(call["function"]["arguments"])


def by_client(base_url: str, conversations: list[list[dict[str, Any]]]) -> int:
    llm = client(base_url)

    def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
        made = llm.chat("judge", messages, tools=[GRADE_TOOL], tool_choice="submit_grade",
                        temperature=0.0, max_tokens=JUDGE_MAX_TOKENS)
        return json.loads(made.tool_arguments or "{}")

    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        return sum(1 for grade in pool.map(judge, conversations) if grade)


def by_ray(base_url: str, bodies: list[dict[str, Any]]) -> int:
    import ray.data
    from ray.data.llm import HttpRequestProcessorConfig, build_processor

    config = HttpRequestProcessorConfig(
        url=f"{base_url}/chat/completions", headers={"Authorization": f"Bearer {SECRET}"},
        batch_size=IN_FLIGHT, concurrency=1, max_retries=3)
    processor = build_processor(config, preprocess=lambda row: {"payload": row["body"]},
                                postprocess=lambda row: {"grade": grade_of(row["http_response"])})
    rows = processor(ray.data.from_items([{"body": body} for body in bodies])).take_all()
    return sum(1 for row in rows if row["grade"])


def timed(what: str, endpoint: Endpoint, send) -> dict[str, Any]:
    before = _tree_cpu({endpoint.process.pid})
    started = time.perf_counter()
    graded = send()
    wall = time.perf_counter() - started
    after = _tree_cpu({endpoint.process.pid})
    cpu = sum(used - before.get(pid, 0.0) for pid, used in after.items())
    log(f"{what}: {graded} graded in {wall:.1f} s")
    return {"graded": graded, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def rates(result: dict[str, Any], calls: int) -> dict[str, Any]:
    return {**result, "calls_per_s": round(calls / result["wall_s"], 1),
            "cpu_ms_per_call": round(1000 * result["cpu_s"] / calls, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--quick", action="store_true", help="a tenth of the calls")
    options = parser.parse_args()
    calls = max(IN_FLIGHT, options.calls // (10 if options.quick else 1))
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    conversations, bodies = requests(calls)
    import ray

    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    ray.data.DataContext.get_current().enable_progress_bars = False
    cluster_start = time.perf_counter() - started
    results: dict[str, Any] = {}
    try:
        for name, delay in (("io_bound", 0.25), ("cpu_bound", 0.0)):
            endpoint = Endpoint(delay)
            try:
                results[name] = {
                    "endpoint_delay_s": delay,
                    "client": rates(timed(f"{name}, client", endpoint,
                                          lambda: by_client(endpoint.base_url, conversations)),
                                    calls),
                    "ray_data_llm": rates(timed(f"{name}, ray.data.llm", endpoint,
                                                lambda: by_ray(endpoint.base_url, bodies)),
                                          calls)}
            finally:
                endpoint.finish()
    finally:
        ray.shutdown()
    print(json.dumps({
        "load_before": load_before,
        "load_after": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "cpus": os.cpu_count(), "calls": calls, "in_flight": IN_FLIGHT,
        "ray_start_s": round(cluster_start, 1), **results}, indent=1))


if __name__ == "__main__":
    main()

"""The demo against its floor: the embedded runtime's prompt and generation speed on this machine,
and the time the demo's own tokens alone need at that speed (docs/measurements.md#the-demo).

    python tests/benchmarks/bench_demo_floor.py [--full] [--timings results/demo/timings.json]

1. Starts the embedded server as freshrag does (its slots, its threads) and measures, at one
   request per slot, prompt tokens/s (distinct example articles, so that llama.cpp's prompt cache
   saves nothing, one generated token each) and generation tokens/s (128 tokens each, the end
   token ignored).
2. Runs `freshrag demo` in a new directory (no response cache: every call is made), or reads the
   `timings.json` of a demo already run, whose stages record their wall time and the prompt and
   output tokens of their model calls.
3. Prints per stage: wall time, floor = prompt tokens / prompt speed + output tokens / generation
   speed, and their ratio; the issue's targets are a whole demo within 1.5 times its floor and
   under 300 s on 2 cores.

Prints ONE JSON object on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PROMPT_CHARS = 6000   # about 1,500 tokens of an example article
GENERATED = 128


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="time `freshrag demo --full`")
    parser.add_argument("--timings", type=Path, help="a finished demo's timings.json")
    parser.add_argument("--requests", type=int, default=8, help="requests per speed measurement")
    args = parser.parse_args(argv)
    from freshrag.llm.local_server import LocalServer

    with LocalServer() as server:
        slots = server.concurrency()
        rates = {"prompt_tokens_per_s": speed(server.base_url, slots, args.requests, 0,
                                                       PROMPT_CHARS),
                 "generated_tokens_per_s": speed(server.base_url, slots, args.requests,
                                                          GENERATED)}
        runtime = server.runtime
    print(f"[bench] {runtime}, {slots} slot(s): {rates}", file=sys.stderr, flush=True)
    if args.timings:
        stages = json.loads(args.timings.read_text())["stages"]
    else:
        stages = _run_demo(args.full)
    rows = []
    for stage in stages:
        prompt = sum(r["input"] for r in stage["roles"].values())
        output = sum(r["output"] for r in stage["roles"].values())
        floor = prompt / rates["prompt_tokens_per_s"] + output / rates["generated_tokens_per_s"]
        rows.append({"stage": stage["stage"], "seconds": stage["seconds"],
                     "calls": sum(r["calls"] for r in stage["roles"].values()),
                     "prompt_tokens": prompt, "output_tokens": output,
                     "floor_s": round(floor, 1),
                     "ratio": round(stage["seconds"] / floor, 2) if floor else None})
    total = sum(r["seconds"] for r in rows)
    floor = sum(r["floor_s"] for r in rows)
    print(json.dumps({"cpus": os.cpu_count(), "load_average": os.getloadavg(),
                      "runtime": runtime, "slots": slots, **rates, "stages": rows,
                      "total_s": round(total, 1), "floor_s": round(floor, 1),
                      "ratio": round(total / floor, 2),
                      "targets": {"ratio_at_most": 1.5, "total_s_under": 300}}, indent=2))
    return 0


def speed(base_url: str, slots: int, n: int, generated: int,
          chars: int | None = None) -> float:
    """Tokens per second over `n` requests, `slots` at a time: prompt tokens of distinct example
    articles (their first `chars` characters; one token generated) when `generated` is 0, else
    `generated` tokens of short prompts. bench_contention.py measures with it too."""
    from freshrag.core.dataset import example_dir, load_dataset_dir

    articles = list(load_dataset_dir(example_dir()).articles.values())

    def one(i: int) -> int:
        text = articles[i % len(articles)].prompt_text()[:chars] if not generated else "Hi"
        body = {"messages": [{"role": "user", "content": f"{i}: {text}"}], "temperature": 0.8,
                "max_tokens": generated or 1, "ignore_eos": bool(generated),
                "cache_prompt": False}
        request = urllib.request.Request(f"{base_url}/chat/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=1200) as response:
            usage = json.loads(response.read())["usage"]
        return usage["completion_tokens" if generated else "prompt_tokens"]

    one(0)  # warm: the model's pages in memory
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(slots) as pool:
        tokens = sum(pool.map(one, range(1, n + 1)))
    return round(tokens / (time.perf_counter() - started), 1)


def _run_demo(full: bool) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}
        command = [sys.executable, "-m", "freshrag", "demo", "--out", str(out),
                   *(["--full"] if full else [])]
        print(f"[bench] {' '.join(command[2:])} in {tmp}", file=sys.stderr, flush=True)
        subprocess.run(command, cwd=tmp, env=env, check=True, stdout=sys.stderr)
        return json.loads((out / "timings.json").read_text())["stages"]


if __name__ == "__main__":
    sys.exit(main())

"""Pairs per second against the embedded model at concurrency 1, 4 and 8
(docs/measurements.md#the-embedded-model),
to set beside the fake-server figures of bench_runner.py.

    python tests/benchmarks/bench_embedded_concurrency.py [--pairs 6]

Prints ONE JSON object on stdout. One embedded llama.cpp server (SmolLM2-135M, as `freshrag run`
starts it), warmed by one call, serves every setting; each runs `baseline` (an answer and a judge
call per pair) with `--no-probe` and no cache on its OWN `--pairs` example questions (setting 1
the first ones, 4 the next, 8 the next), so that no setting replays another's prompts from
llama.cpp's prompt cache. Questions differ in length, so beside pairs/s each setting reports the
tokens the server processed per second (prompt + generated, from the run's own counts).
llama-cpp-python's server (`python -m llama_cpp.server`, 0.3.x) has no parallel slots: its app
holds one lock around the model for every request (`llama_outer_lock`/`llama_inner_lock` in
llama_cpp/server/app.py), so concurrent requests queue; the figures show what that leaves.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6)
    args = parser.parse_args(argv)
    from freshrag.cli.main import main as freshrag
    from freshrag.core.dataset import example_dir
    from freshrag.core.samples import read_samples
    from freshrag.llm.local_server import LocalServer

    questions = (example_dir() / "questions.jsonl").read_text().splitlines()
    settings = (1, 4, 8)
    if len(questions) < args.pairs * len(settings):
        parser.error(f"--pairs {args.pairs}: the example set has {len(questions)} questions, "
                     f"{len(settings)} settings need {args.pairs * len(settings)}")
    results = []
    with LocalServer() as server, tempfile.TemporaryDirectory() as tmp:
        os.environ["FRESHRAG_BASE_URL"] = server.base_url  # one server for every setting
        os.environ.setdefault("FRESHRAG_MODEL", "smollm2-135m-instruct")
        _warm(server.base_url)
        for n, concurrency in enumerate(settings):
            own = Path(tmp) / f"q{concurrency}.jsonl"
            own.write_text("\n".join(questions[n * args.pairs:(n + 1) * args.pairs]) + "\n")
            out = Path(tmp) / f"c{concurrency}"
            load = os.getloadavg()[0]
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                status = freshrag(["run", "--systems", "baseline", "--questions", str(own),
                                   "--articles", str(example_dir() / "articles.jsonl"),
                                   "--no-probe", "--no-cache", "--concurrency", str(concurrency),
                                   "--out", str(out)])
            seconds = time.perf_counter() - started
            tokens = sum(c["usage"]["input"] + c["usage"]["output"]
                         for row in read_samples(out / "samples.jsonl") for c in row["calls"])
            results.append({"concurrency": concurrency, "pairs": args.pairs, "status": status,
                            "seconds": round(seconds, 1),
                            "pairs_per_s": round(args.pairs / seconds, 3),
                            "tokens": tokens, "tokens_per_s": round(tokens / seconds, 1),
                            "load_average_before": round(load, 1)})
            print(f"[bench] {results[-1]}", file=sys.stderr, flush=True)
    print(json.dumps({"cpus": os.cpu_count(), "load_average": os.getloadavg(),
                      "runtime": "llama-cpp-python server, one model lock", "runs": results},
                     indent=2))
    return 0


def _warm(base_url: str) -> None:
    """One short call, so that no setting pays for loading the model into memory."""
    import openai
    openai.OpenAI(base_url=base_url, api_key="local").chat.completions.create(
        model="smollm2-135m-instruct", max_tokens=4,
        messages=[{"role": "user", "content": "Hello"}])


if __name__ == "__main__":
    sys.exit(main())

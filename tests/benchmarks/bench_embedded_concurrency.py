"""Pairs per second against the embedded model at concurrency 1, 4 and 8 (freshrag issue 17),
to set beside the fake-server figures of bench_runner.py.

    python tests/benchmarks/bench_embedded_concurrency.py [--pairs 8]

Prints ONE JSON object on stdout. One embedded llama.cpp server (SmolLM2-135M, as `freshrag run`
starts it) serves every setting; each runs `baseline` (an answer and a judge call per pair) on
the first `--pairs` example questions with `--no-probe` and no cache, into a new run directory.
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
    parser.add_argument("--pairs", type=int, default=8)
    args = parser.parse_args(argv)
    from harness.local_server import LocalServer
    from harness.cli import main as freshrag

    results = []
    with LocalServer() as server, tempfile.TemporaryDirectory() as tmp:
        os.environ["FRESHRAG_BASE_URL"] = server.base_url  # one server for every setting
        os.environ.setdefault("FRESHRAG_MODEL", "smollm2-135m-instruct")
        for concurrency in (1, 4, 8):
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                status = freshrag(["run", "--systems", "baseline", "--limit", str(args.pairs),
                                   "--no-probe", "--no-cache", "--concurrency", str(concurrency),
                                   "--out", str(Path(tmp) / f"c{concurrency}")])
            seconds = time.perf_counter() - started
            results.append({"concurrency": concurrency, "pairs": args.pairs, "status": status,
                            "seconds": round(seconds, 1),
                            "pairs_per_s": round(args.pairs / seconds, 3)})
            print(f"[bench] {results[-1]}", file=sys.stderr, flush=True)
    print(json.dumps({"cpus": os.cpu_count(), "load_average": os.getloadavg(),
                      "runtime": "llama-cpp-python server, one model lock", "runs": results},
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of `freshrag score --dry-run` (docs/measurements.md#cost-estimates): the estimate of a
score pass beside what the pass then spends, on the example set with the embedded model.

    python tests/benchmarks/bench_score_estimate.py [--limit 2] [--systems baseline,naive]
        [--scorers faithfulness,claims,context-relevance,abstention]

Prints ONE JSON object on stdout (the commands' own output goes to stderr). Steps, in a fresh
results directory (an empty response cache):

1. `freshrag run --limit N --systems ... --no-probe` on the embedded llama.cpp server with
   SmolLM2-135M: the answers to score;
2. `freshrag score RUN --scorers ... --dry-run` exactly as a user types it: its table (output
   lengths from the run's cached replies where the cache has the scorer role's, else
   `max_tokens`; here it has none);
3. the same command without `--dry-run`: calls, input and output tokens per role, from every
   call of scores.jsonl that reached the server (cache hits left out: they are not sent).

Per role, the estimate's [low, high] beside the actual figure (harness for the figures:
bench_estimate.compare). Input tokens are tiktoken's (cl100k_base for SmolLM2); the server
counts with SmolLM2's own tokenizer, so part of any gap is the two tokenizers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_estimate import compare, parse_table, uncached_by_role  # noqa: E402

SCORERS = "faithfulness,claims,context-relevance,abstention"


def spent_by_scores(run_dir: Path) -> dict[str, dict[str, int]]:
    """Calls sent and tokens reported per role by the score pass (scores.jsonl)."""
    return dict(uncached_by_role(run_dir / "scores.jsonl"))


def freshrag(args: list[str], cwd: str, **kwargs) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("FRESHRAG_")}
    return subprocess.run([sys.executable, "-m", "freshrag", *args], cwd=cwd,
                          env={**env, "PYTHONPATH": str(ROOT)}, text=True, **kwargs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--systems", default="baseline,naive")
    parser.add_argument("--scorers", default=SCORERS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="freshrag-bench-score-estimate-") as name:
        out = Path(name) / "results" / "example"
        started = time.monotonic()
        freshrag(["run", "--limit", str(args.limit), "--systems", args.systems, "--no-probe",
                  "--out", str(out)], name, stdout=sys.stderr, check=True)
        run_s = time.monotonic() - started
        score = ["score", str(out), "--scorers", args.scorers]
        started = time.monotonic()
        dry = freshrag(score + ["--dry-run"], name, capture_output=True, check=True)
        dry_s = time.monotonic() - started
        print(dry.stdout, file=sys.stderr)
        started = time.monotonic()
        freshrag(score, name, stdout=sys.stderr, check=True)
        score_s = time.monotonic() - started
        spent = spent_by_scores(out)
    print(json.dumps({
        "command": f"freshrag {' '.join(score[:1] + ['RUN'] + score[2:])} --dry-run",
        "answers": f"--limit {args.limit} --systems {args.systems}",
        "run_s": round(run_s, 1), "dry_run_s": round(dry_s, 1), "score_s": round(score_s, 1),
        "roles": compare(parse_table(dry.stdout), spent),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

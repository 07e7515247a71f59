"""Benchmark of the `statements` question style with critiques and labels
(docs/measurements.md#statements-style).

    python tests/benchmarks/bench_statements.py [--articles 5] [--labels SPEC] [--seed 0]

Builds a dataset from a seeded sample of `--articles` of the paper's A_f articles (written as a
history dump) with the configured `builder` and `labeller` models (default: the embedded
SmolLM2-135M), one stage per process so that each is timed apart (each process starts its own
embedded server; the start is inside the figure), `--questions-from A_d` so that every sampled
article gets its questions whatever the recency classifier says, and no response cache. Prints ONE
JSON object: seconds per stage, calls and tokens per step (from the stage files), the funnel,
the label composition and the labeller's agreement with the requested labels.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.core.jsonl import read_jsonl  # noqa: E402
from tests import WIKIRAG  # noqa: E402
from tests.support.wikidump import article_pages, write_dump  # noqa: E402

STAGES = ("A_r", "A_d", "A_f", "questions", "labels")


def sample_dump(directory: Path, n: int, seed: int) -> Path:
    titles = sorted({row["title"] for row in read_jsonl(WIKIRAG / "questions-A_f.jsonl")})
    chosen = set(random.Random(seed).sample(titles, n))
    rows = [row for row in read_jsonl(WIKIRAG / "articles.jsonl") if row["title"] in chosen]
    source = directory / "articles.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return write_dump(directory / "wiki.xml", article_pages(source))


def step_figures(out: Path) -> dict:
    """Calls (every raw reply) and tokens per step, from the stage files."""
    figures: Counter = Counter()

    def add(step: str, raw: list, usage: dict | None) -> None:
        figures[f"{step}_calls"] += len(raw)
        figures[f"{step}_input_tokens"] += (usage or {}).get("input", 0)
        figures[f"{step}_output_tokens"] += (usage or {}).get("output", 0)

    for record in read_jsonl(out / "statements.jsonl"):
        for step, value in record["steps"].items():
            add(step, value["raw"], value["usage"])
    for row in read_jsonl(out / "candidates.jsonl"):  # usage there is question + critique
        add("question+critique", row["question_raw"] + row["critique_raw"], row["usage"])
    for row in read_jsonl(out / "labels.jsonl"):
        add("label", row["raw"], row["usage"])
    return dict(figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=5)
    parser.add_argument("--labels", default="fact_single=0.25,summary=0.25,reasoning=0.25,"
                                            "unanswerable=0.25")
    parser.add_argument("--per-article", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        dump = sample_dump(directory, args.articles, args.seed)
        out = directory / "dataset"
        seconds = {}
        for stage in STAGES:
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "freshrag", "build", "--dump", str(dump),
                            "--cutoff", "2021-09-30", "--out", str(out), "--stage", stage,
                            "--style", "statements", "--labels", args.labels,
                            "--questions-per-article", str(args.per_article),
                            "--questions-from", "A_d", "--concurrency", "1",
                            "--seed", str(args.seed), "--no-cache"],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            seconds[stage] = round(time.monotonic() - started, 1)
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        report = json.loads((out / "label-report.json").read_text(encoding="utf-8"))
        print(json.dumps({
            "articles": args.articles, "labels": args.labels, "per_article": args.per_article,
            "cores": os.cpu_count(), "load_average_at_end": os.getloadavg(),
            "models": manifest.get("models"), "seconds": seconds,
            "seconds_total": round(sum(seconds.values()), 1),
            "steps": step_figures(out), "funnel": manifest["funnel"],
            "labeller": report["labeller"]["counts"],
            "agreement_requested": {key: report["agreement_requested"][key]
                                    for key in ("n", "labelled", "unknown", "agree", "kappa")},
        }, indent=2))


if __name__ == "__main__":
    main()

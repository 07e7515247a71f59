"""Benchmark of the mixed-traffic analysis (docs/measurements.md#mixed-traffic): how long
`freshrag report` takes to recombine a finished run into decisions per kind, the threshold sweeps,
ROC, the savings curve and mixes, and that it makes no LLM call doing so.

    python tests/benchmarks/bench_traffic.py [--questions 500] [--mixes 5]

It writes a run directory of synthetic rows (the shape the runner writes): QUESTIONS questions,
a third of each kind, answered by baseline, naive, boolean, advanced, dated-boolean, confidence
and self-check with seeded scores, decisions, probabilities and ratings; then times
`freshrag.cli.main.main(["report", RUN, "--mix", ...])` in this process with the fake OpenAI-compatible
server as every role's endpoint, and counts the server's calls; then the traffic analysis alone
(decisions.analyse + savings.analyse). CPU seconds (this process) beside wall seconds, since the
machines it runs on are shared. Prints ONE JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from tests.support.rows import summaries

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from freshrag.cli.main import main  # noqa: E402
from freshrag.cli.values import mix_shares  # noqa: E402
from freshrag.reporting import decisions, savings  # noqa: E402
from freshrag.reporting.answers import Answers
from freshrag.reporting.loading import load_runs  # noqa: E402
from tests.support.fake_openai_server import FakeOpenAIServer  # noqa: E402
from tests.support.runs import sample, write_run  # noqa: E402

SYSTEMS = ("baseline", "naive", "boolean", "advanced", "dated-boolean", "confidence", "self-check")
KINDS = ("fresh", "control", "general")


def synthetic_rows(questions: int, seed: int = 15) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(questions):
        kind = KINDS[i % 3]
        need = kind == "fresh"
        for system in SYSTEMS:
            p = min(1.0, max(0.0, rng.gauss(0.7 if need else 0.3, 0.2)))
            rating = rng.choice([1, 2, 3] if need else [3, 4, 5])
            retrieves = {"baseline": False, "naive": True, "confidence": p >= 0.5,
                         "self-check": rating < 4}.get(system, rng.random() < (0.8 if need else 0.3))
            good = retrieves or not need
            row = sample(f"q{i}", system, rng.randint(3, 5) if good else rng.randint(1, 3),
                         rng.randint(3, 5) if good else rng.randint(1, 4),
                         decision=None if system in ("baseline", "naive") else "model-a",
                         retrieved=retrieves, tokens=(1200 if retrieves else 100, 40),
                         decided=None if system in ("baseline", "naive")
                         else "retrieve" if retrieves else "no-retrieve")
            row.update(kind=kind, need=need)
            if system == "confidence":
                row["details"].update(p_retrieve=round(p, 4), threshold=0.5)
            if system == "self-check":
                row["details"].update(confidence=rating, threshold=4)
            rows.append(row)
    return rows


def main_bench() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--mixes", type=int, default=5)
    args = parser.parse_args()
    mixes = [f"{f:g}:{(1 - f) * 2 / 3:.6f}:{(1 - f) / 3:.6f}"
             for f in [i / max(1, args.mixes - 1) for i in range(args.mixes)]]
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        os.environ.update(FRESHRAG_BASE_URL=server.base_url, FRESHRAG_API_KEY="sk-bench",
                          FRESHRAG_MODEL="fake-model")
        run = write_run(Path(tmp) / "run", synthetic_rows(args.questions))
        command = ["report", str(run), "--format", "json", "--html", str(Path(tmp) / "r.html")]
        for mix in mixes:
            command += ["--mix", mix]
        started, cpu = time.monotonic(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(command)
        wall, cpu = time.monotonic() - started, time.process_time() - cpu
        rows = load_runs([run])
        alone = time.process_time()
        decisions.analyse(Answers(summaries(rows)))
        savings.analyse(Answers(summaries(rows)), {}, [mix_shares(m) for m in mixes])
        alone = time.process_time() - alone
        analysis = json.loads((run / "analysis.json").read_text())
        print(json.dumps({
            "questions": args.questions, "systems": len(SYSTEMS),
            "rows": args.questions * len(SYSTEMS), "mixes": len(mixes), "exit": code,
            "report_wall_seconds": round(wall, 2), "report_cpu_seconds": round(cpu, 2),
            "traffic_analysis_cpu_seconds": round(alone, 2),
            "llm_calls_during_report": server.calls,
            "tables": {key: len(analysis[key]) for key in
                       ("decisions_by_kind", "thresholds", "roc", "savings", "mixes")},
        }, indent=2))


if __name__ == "__main__":
    main_bench()

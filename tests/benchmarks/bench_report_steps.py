"""Scale benchmark of the report on agents' trajectories (docs/measurements.md#report-on-trajectories):
`freshrag report RUN --format json` over a run of many answers of several steps each.

    python tests/benchmarks/bench_report_steps.py [--answers 100000] [--steps 5] [--keep DIR]

It writes a run directory of `--answers` synthetic rows, made as the runner makes them
(core/samples.py sample_row from Steps): a ReAct-like agent's `--steps` steps, every step but the
last a search (its query, 5 retrieved chunks with titles and scores, the call that chose it with
its messages and usage), then the answer and the judge's grade; half the questions need one
article, half two (gold_titles), and a tenth stopped at the bound, so that every trajectory figure
has work to do. With `--references`, `baseline` and `naive` answer every question too (three
times the rows), so that the three-way router and the savings by hops are built as well. Then it times the report in a child process: wall time and peak resident memory from the
kernel's account of that one child (os.wait4), as bench_scale.py does. Targets: under 30 s and
500 MB at 100,000 answers. It prints the figures and, as its last line, one JSON object; it
never fails because a figure is off.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.core.jsonl import JsonlWriter  # noqa: E402
from freshrag.core.samples import SAMPLES, sample_row  # noqa: E402
from freshrag.core.types import (  # noqa: E402
    Grade,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    Usage,
)

REPORT_S, REPORT_MB = 30.0, 500.0
CHUNKS = 5  # retrieved per search
ARTICLES = 2_000
PASSAGE = "The crossing's main span is 420 metres long and opened in the spring. " * 4


def call(role: str, question: str, tokens: tuple[int, int], text: str | None = None,
         query: str | None = None) -> LLMResponse:
    """A call as the client records it: the messages sent (the question, a passage of context),
    its text or its search call, usage and latency."""
    return LLMResponse(
        role=role, model="fake-model", text=text,
        tool_name="search" if query else None,
        tool_arguments=json.dumps({"query": query}) if query else None,
        usage=Usage(*tokens), latency_s=0.4, cache_hit=False,
        messages=[{"role": "system", "content": "Answer with the search tool."},
                  {"role": "user", "content": question},
                  {"role": "tool", "content": PASSAGE}])


def question_of(n: int) -> Question:
    first, second = f"Article {n % ARTICLES}", f"Article {(n * 7 + 1) % ARTICLES}"
    text = f"What links {first} and {second}? ({n})"
    if n % 2:
        return Question(f"q{n:06d}", text, first, gold_titles=(first, second), hops=2,
                        multihop="bridge")
    return Question(f"q{n:06d}", text, first)


def search(n: int, step: int, text: str) -> Step:
    found = tuple(RetrievedChunk(f"Article {(n + step * 13 + i) % ARTICLES}", i, PASSAGE,
                                 0.9 - 0.1 * i) for i in range(CHUNKS))
    query = f"query {step} about question {n}: main span of the crossing"
    return Step("search", (call("answer", text, (900 + 300 * step, 30), query=query),),
                query=query, retrieved=found)


def answer_of(n: int, system: str, steps: int) -> SystemAnswer:
    q = question_of(n)
    if system == "baseline":
        made = [Step("answer", (call("answer", q.text, (60, 40), "from memory"),),
                     text="from memory")]
    else:
        searches = 1 if system == "naive" else steps - 1
        made = [search(n, i, q.text) for i in range(searches)]
        made.append(Step("answer", (call("answer", q.text, (2_000, 60), "420 m"),),
                         text="420 m"))
    calls = [c for step in made for c in step.calls]
    details = {"decision": None, "retrieved": [
        {"title": c.title, "index": c.index, "score": c.score, "text": c.text}
        for step in made for c in step.retrieved][:CHUNKS]}
    return SystemAnswer(text=made[-1].text or "", calls=calls, details=details,
                        retrievals=sum(step.kind == "search" for step in made), steps=made,
                        stopped="max_steps" if system == "react" and n % 10 == 0 else None)


def write_run(run_dir: Path, answers: int, steps: int, systems: tuple[str, ...]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)  # no manifest: rows in the order written
    writer = JsonlWriter(run_dir / SAMPLES)
    for system in systems:
        for n in range(answers):
            answer = answer_of(n, system, steps)
            judge = call("judge", "grade it", (900, 20), "graded")
            truth = 1 + (n * 7 + len(system)) % 5
            writer.write(dict(sample_row("bench", question_of(n), system, answer,
                                         Grade(truth, truth), [*answer.calls, judge], 2.0)))
    writer.close()


def measured(argv: list[str]) -> dict[str, float]:
    """argv run to its end: wall time, CPU seconds and peak memory (MB) of that one child."""
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"report failed:\n{err.read().decode(errors='replace')[-3000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_mb": round(usage.ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=5, help="react's steps: searches, answer")
    parser.add_argument("--references", action="store_true",
                        help="baseline and naive answer every question too")
    parser.add_argument("--keep", type=Path, help="write the run here and keep it (else a "
                        "temporary directory); an existing run there is reused")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="freshrag-steps-") as work:
        run = args.keep or Path(work) / "run"
        if not (run / SAMPLES).exists():
            started = time.perf_counter()
            write_run(run, args.answers, args.steps,
                      ("baseline", "naive", "react") if args.references else ("react",))
            print(f"[bench] wrote {args.answers:,} answers in "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        size_mb = (run / SAMPLES).stat().st_size / 1e6
        load = os.getloadavg()[0]
        found = measured([sys.executable, "-m", "freshrag", "report", str(run), "--format",
                          "json", "--out", str(Path(work) / "out")])
    met = found["wall_s"] < REPORT_S and found["peak_mb"] < REPORT_MB
    rows = args.answers * (3 if args.references else 1)
    print(f"{rows:,} answers ({args.answers:,} of react, {args.steps} steps each), samples.jsonl "
          f"{size_mb:,.0f} MB: report {found['wall_s']:.1f} s (CPU {found['cpu_s']:.1f} s), "
          f"peak {found['peak_mb']:.0f} MB; target < {REPORT_S:.0f} s and < {REPORT_MB:.0f} MB: "
          f"{'met' if met else 'MISSED'}")
    print(json.dumps({"answers": rows, "react_answers": args.answers, "steps": args.steps, "samples_mb": round(size_mb),
                      **found, "met": met, "load_1min_before": load,
                      "load_1min_after": os.getloadavg()[0], "cpus": os.cpu_count(),
                      "python": platform.python_version(),
                      "date": time.strftime("%Y-%m-%d %H:%M %Z")}))


if __name__ == "__main__":
    main()

"""Benchmark of the scorers beyond the judge (docs/measurements.md#scorers): the extra tokens
each costs.

    python tests/benchmarks/bench_scorers.py [--embedded] [--limit 40] [--systems baseline,naive]
                                             [--scorers faithfulness,...] [--keep DIR]

Runs `freshrag run --limit N --systems ... --no-probe` on the example corpus shipped with
freshrag (harness/data/example), then `freshrag score RUN --scorers ...`, each in a fresh process
with its own response cache, against one of two endpoints:

- by default the fake OpenAI-compatible server of tests/ with realistic replies (`realistic`
  below: answers of two sentences from the extracts given, statements split from the text asked
  about, every statement supported, three questions per answer, a grade of 4); it reports no
  usage, so freshrag counts every call with tiktoken's cl100k_base (GPT-4's encoding) and marks
  the counts estimated: the cost on a GPT-4-class endpoint, prompts and tool schemas included;
- with `--embedded`, whatever the roles point at (by default the embedded SmolLM2-135M and local
  MiniLM: the llama.cpp server's own counts; slow, so use a small `--limit`).

Prints ONE JSON
object on stdout (progress goes to stderr): per scorer, the answers it was asked about, its
outcomes (scored / unscored / not applicable), its calls, input and output tokens per answer
(over every answer, a not-applicable one costing nothing) and per answer it applied to, and the
seconds of the pass; beside them, the system's and the run judge's tokens per answer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.core.samples import read_samples  # noqa: E402
from freshrag.scoring import SCORERS  # noqa: E402
from freshrag.scoring.base import sentences  # noqa: E402
from freshrag.scoring.store import read_scores  # noqa: E402
from tests.support.fake_openai_server import FakeOpenAIServer, forced_tool_name  # noqa: E402


def freshrag(*argv: str) -> float:
    """Run `freshrag ARGV` in a fresh process; its seconds. Its output goes to stderr."""
    started = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "freshrag", *argv], env=env,
                          stdout=sys.stderr, stderr=sys.stderr)
    if done.returncode not in (0, 1):
        raise SystemExit(f"freshrag {' '.join(argv)} ended with {done.returncode}")
    return round(time.monotonic() - started, 1)


def per_answer(values: list[int], n: int) -> float | None:
    return round(sum(values) / n, 1) if n else None


def scorer_costs(run: Path, answers: int) -> dict[str, dict]:
    costs = {}
    by_scorer: dict[str, list[dict]] = {}
    for score in read_scores(run):
        by_scorer.setdefault(score["scorer"], []).append(score)
    for name, scores in by_scorer.items():
        applied = [s for s in scores if s["status"] != "not_applicable"]
        tokens = {side: [sum(u[side] for u in s["usage"].values()) for s in scores]
                  for side in ("input", "output")}
        costs[name] = {
            "answers": len(scores), "outcomes": dict(Counter(s["status"] for s in scores)),
            "calls_per_answer": per_answer([len(s["calls"]) for s in scores], answers),
            **{f"{side}_tokens_per_answer": per_answer(tokens[side], answers)
               for side in tokens},
            **{f"{side}_tokens_per_applicable_answer": per_answer(tokens[side], len(applied))
               for side in tokens},
            "seconds_per_answer": round(sum(s["latency_s"] for s in scores) / len(scores), 2),
        }
    return costs


def run_tokens(rows: list[dict]) -> dict[str, float | None]:
    answered = [row for row in rows if row["status"] == "ok"]
    system = [sum(u["input"] + u["output"] for role, u in row["usage"].items() if role != "judge")
              for row in answered]
    judge = [row["usage"].get("judge", {}).get("input", 0)
             + row["usage"].get("judge", {}).get("output", 0) for row in answered]
    return {"answers": len(answered),
            "system_tokens_per_answer": per_answer(system, len(answered)),
            "judge_tokens_per_answer": per_answer(judge, len(answered))}


def realistic(request: dict) -> dict:
    """What a capable model would reply to each request freshrag makes here, in length and form."""
    name = forced_tool_name(request)
    system = request["messages"][0]["content"]
    user = request["messages"][-1]["content"]
    if name is None:  # an answer: two sentences of the extracts or article given, else none
        given = system.split("\n\n", 1)[1] if "\n\n" in system else ""
        lines = [s for s in sentences(given) if not s.startswith(("Title:", "=="))]
        return {"content": " ".join(lines[:2]) or "I don't know."}
    arguments = {
        "submit_statements": lambda: {"statements": _statements(user)[:6]},
        "submit_verdicts": lambda: {"supported": [True] * len(re.findall(r"^\d+\. ", user, re.M))},
        "submit_needed_sentences": lambda: {"needed": [1, 2]},
        "submit_questions": lambda: {"questions": [
            f"What does the answer say about {' '.join(_statements(user)[0].split()[:6])}?"] * 3
            if _statements(user) else []},
        "submit_abstention": lambda: {"abstained": "know" in user.split("Answer:")[-1]},
        "submit_grade": lambda: {"truthfulness": 4, "relevance": 4},
    }[name]()
    return {"tool_call": {"name": name, "arguments": json.dumps(arguments)}}


def _statements(user: str) -> list[str]:
    """The sentences of the text asked about (after `Text:`, `Answer:` or `Source:`)."""
    text = re.split(r"^(?:Text|Answer|Source):", user, flags=re.M)[-1]
    return [s for s in sentences(text) if not s.startswith(("Title:", "==", "Statements:"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedded", action="store_true", help="use the configured roles "
                        "(default: the embedded model) instead of the fake server")
    parser.add_argument("--limit", type=int, default=40, help="questions of the example set")
    parser.add_argument("--systems", default="baseline,naive")
    parser.add_argument("--scorers", default=",".join(name for name in SCORERS if name != "judge"))
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-scorers-"))
    with contextlib.ExitStack() as stack:
        if not args.embedded:
            server = stack.enter_context(FakeOpenAIServer(reply=realistic, report_usage=False))
            os.environ.update(FRESHRAG_BASE_URL=server.base_url, FRESHRAG_API_KEY="bench",
                              FRESHRAG_MODEL="gpt-4-0613")
        print(json.dumps(measure(args, work), indent=2))


def measure(args: argparse.Namespace, work: Path) -> dict:
    run = work / "run"
    run_seconds = freshrag("run", "--limit", str(args.limit), "--systems", args.systems,
                           "--no-probe", "--out", str(run), "--concurrency",
                           str(args.concurrency), "--index-dir", str(work / "index"))
    score_seconds = freshrag("score", str(run), "--scorers", args.scorers, "--concurrency",
                             str(args.concurrency))
    rows = read_samples(run / "samples.jsonl")
    manifest = json.loads((run / "manifest.json").read_text())
    tokens = run_tokens(rows)
    return {
        "endpoint": "embedded/configured" if args.embedded else
        "fake server, realistic replies, tiktoken cl100k_base counts",
        "corpus": "harness/data/example", "questions": args.limit, "systems": args.systems,
        "models": {role: cfg.get("model") for role, cfg in manifest["llm"]["roles"].items()},
        "run": {**tokens, "seconds": run_seconds},
        "score_pass_seconds": score_seconds,
        "scorers": scorer_costs(run, tokens["answers"]),
        "work_dir": str(work),
    }


if __name__ == "__main__":
    main()

"""Where the scores of the scorers beyond the judge (docs/scoring.md#scorers) and the judge's
repeats (docs/scoring.md#judge-agreement) live, beside the run's own judge grade in samples.jsonl:
`RUN_DIR/scores.jsonl`, one row per (dataset, question_id, system, scorer, repeat), appended as
each finishes (the JsonlWriter of harness/core/jsonl.py, so a kill leaves whole rows), the last row
of a key winning on reading:

- `dataset`, `question_id`, `system`: the samples.jsonl row scored; `answer_sha256`: of the
  answer text scored, so that a re-answered pair is scored again rather than matched to a score
  of another answer
- `scorer`, `repeat` (0 first; `freshrag score --repeats N` gives 0..N-1)
- `status`: `scored`, `unscored` (the reply could not be used: `reason` and `raw`),
  `not_applicable` (`reason`: e.g. nothing was retrieved), `failed` (an endpoint error:
  `reason`; tried again on resume)
- `metrics`: numbers by name, only when scored (judge: truthfulness, relevance; faithfulness;
  answer_relevance; context_relevance; claims_precision, claims_recall; abstained 1/0)
- `details`: what the scorer reports (statements and verdicts, generated questions, the
  abstention verdict's source, cuts)
- `usage` per role (`scorer`, or `judge` for judge repeats) and `calls` with the messages sent,
  as in samples.jsonl: a scorer's tokens are never mixed with the system's or the run's judge's
- `latency_s`, `finished_at`
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

from freshrag.core.jsonl import now, read_jsonl
from freshrag.core.runfiles import SCORES
from freshrag.core.types import LLMResponse, sum_usage_by_role
from freshrag.scoring.base import STATUSES, ScoreResult

FINISHED = ("scored", "unscored", "not_applicable")  # what a resumed pass does not ask again
Key = tuple[Any, str, str, str, int]


def answer_sha256(answer: str | None) -> str:
    return hashlib.sha256((answer or "").encode("utf-8")).hexdigest()


def key(row: dict[str, Any]) -> Key:
    return row.get("dataset"), row["question_id"], row["system"], row["scorer"], row["repeat"]


def score_row(sample: dict[str, Any], scorer: str, repeat: int, result: ScoreResult,
              calls: list[LLMResponse], latency_s: float) -> dict[str, Any]:
    return {
        "dataset": sample.get("dataset"), "question_id": sample["question_id"],
        "system": sample["system"], "answer_sha256": answer_sha256(sample.get("answer")),
        "scorer": scorer, "repeat": repeat, "status": result.status,
        "metrics": result.metrics, "details": result.details, "reason": result.reason,
        "raw": [c.tool_arguments if c.tool_arguments is not None else c.text for c in calls],
        "usage": {role: asdict(u) for role, u in sum_usage_by_role(calls).items()},
        "calls": [asdict(call) for call in calls],
        "latency_s": round(latency_s, 4), "finished_at": now(),
    }


def read_scores(run_dir: Path) -> list[dict[str, Any]]:
    """Every score row of a run directory, the last per key winning; none if it has no file."""
    latest: dict[Key, dict[str, Any]] = {}
    for row in read_jsonl(run_dir / SCORES, score_problem):
        latest.pop(key(row), None)
        latest[key(row)] = row
    return list(latest.values())


def score_problem(row: dict[str, Any]) -> str | None:
    """What is wrong with a scores.jsonl row for its readers, or None."""
    for name, kind in (("question_id", str), ("system", str), ("scorer", str), ("status", str),
                       ("metrics", dict), ("usage", dict)):
        if not isinstance(row.get(name), kind):
            return f"field {name!r} missing or not {kind.__name__}"
    if isinstance(row.get("repeat"), bool) or not isinstance(row.get("repeat"), int):
        return "field 'repeat' must be a whole number"
    if row["status"] not in STATUSES:
        return f"field 'status' must be one of {STATUSES}, got {row['status']!r:.40}"
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in row["metrics"].values()):
        return "field 'metrics' must map names to numbers"
    return None


def answer_scores(run_dir: Path) -> dict[tuple[Any, str, str], dict[str, dict[str, Any]]]:
    """Repeat 0 of every scorer per (dataset, question_id, system), as reports attach it to a
    row (`scores_of`): status, metrics, reason, raw replies, usage, the model of each role
    (`models`, from its calls) and the answer's hash."""
    found: dict[tuple[Any, str, str], dict[str, dict[str, Any]]] = {}
    for row in read_scores(run_dir):
        if row["repeat"] == 0:
            found.setdefault(key(row)[:3], {})[row["scorer"]] = {
                **{name: row.get(name) for name in
                   ("status", "metrics", "reason", "raw", "usage", "answer_sha256", "details")},
                "models": {call["role"]: call["model"] for call in row.get("calls") or []
                           if isinstance(call, dict) and call.get("model")}}
    return found


def scores_of(found: dict[tuple[Any, str, str], dict[str, dict[str, Any]]],
              row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The scores of this row's answer (a score of an earlier answer of the pair is left out)."""
    digest = answer_sha256(row.get("answer"))
    mine = found.get((row.get("dataset"), row["question_id"], row["system"]), {})
    return {name: score for name, score in mine.items() if score["answer_sha256"] == digest}

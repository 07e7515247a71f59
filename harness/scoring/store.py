"""Where the scores of the scorers beyond the judge (docs/scoring.md#scorers) and the judge's
repeats (docs/scoring.md#judge-agreement) live, beside the run's own judge grade in samples.jsonl:
`RUN_DIR/scores.jsonl`, one row per (dataset, question_id, system, scorer, repeat) (core/records.py
`ScoreRow`, field by field), appended as each finishes (the JsonlWriter of harness/core/jsonl.py,
so a kill leaves whole rows), the last row of a key winning on reading.

A judge pass's score is a grade (`score_grade`), and the one place where a row takes it as its
grade is `judged` (docs/reports.md): every report reads its answers through it (and the whole
rows it shows through `with_judge_pass`; the two forms share one merge of grade, models, tokens
and scores).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar, cast

import msgspec.structs

from freshrag.core.jsonl import now, read_jsonl
from freshrag.core.records import AnswerScore, GradeRecord, SampleRow, ScoreRow, UsageRecord
from freshrag.core.runfiles import SCORES
from freshrag.core.samples import is_scored
from freshrag.core.summary import AnswerSummary, Grade, Usage
from freshrag.core.types import LLMResponse, sum_usage_by_role
from freshrag.scoring.base import STATUSES, ScoreResult
from freshrag.scoring.judge import FIELDS

FINISHED = ("scored", "unscored", "not_applicable")  # what a resumed pass does not ask again
Key = tuple[Any, str, str, str, int]


def answer_sha256(answer: str | None) -> str:
    return hashlib.sha256((answer or "").encode("utf-8")).hexdigest()


def key(row: ScoreRow) -> Key:
    return row.get("dataset"), row["question_id"], row["system"], row["scorer"], row["repeat"]


def score_row(sample: SampleRow, scorer: str, repeat: int, result: ScoreResult,
              calls: list[LLMResponse], latency_s: float) -> ScoreRow:
    return {
        "dataset": sample.get("dataset"), "question_id": sample["question_id"],
        "system": sample["system"], "answer_sha256": answer_sha256(sample.get("answer")),
        "scorer": scorer, "repeat": repeat, "status": result.status,
        "metrics": result.metrics, "details": result.details, "reason": result.reason,
        "raw": [c.tool_arguments if c.tool_arguments is not None else c.text for c in calls],
        "usage": {role: cast(UsageRecord, asdict(u))
                  for role, u in sum_usage_by_role(calls).items()},
        "calls": [cast(Any, asdict(call)) for call in calls],
        "latency_s": round(latency_s, 4), "finished_at": now(),
    }


def read_scores(run_dir: Path) -> list[ScoreRow]:
    """Every score row of a run directory, the last per key winning; none if it has no file."""
    latest: dict[Key, ScoreRow] = {}
    for read in read_jsonl(run_dir / SCORES, score_problem):
        row = cast(ScoreRow, read)  # score_problem checked it
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


Found = dict[tuple[Any, str, str], dict[str, AnswerScore]]  # by (dataset, question_id, system)


def answer_scores(run_dir: Path) -> Found:
    """Repeat 0 of every scorer per (dataset, question_id, system), as reports attach it to a
    row (`scores_of`): status, metrics, reason, raw replies, usage, the model of each role
    (`models`, from its calls) and the answer's hash."""
    found: Found = {}
    for row in read_scores(run_dir):
        if row["repeat"] == 0:
            found.setdefault((row.get("dataset"), row["question_id"], row["system"]), {})[
                row["scorer"]] = {
                "status": row["status"], "metrics": row["metrics"], "reason": row.get("reason"),
                "raw": row.get("raw"), "usage": row["usage"],
                "answer_sha256": row.get("answer_sha256"), "details": row.get("details"),
                "models": {call["role"]: call["model"] for call in row.get("calls") or []
                           if isinstance(call, dict) and call.get("model")}}
    return found


def scores_of(found: Found, dataset: str | None, question_id: str, system: str,
              answer: str | None) -> dict[str, AnswerScore]:
    """The scores of this answer of (dataset, question_id, system) (a score of an earlier answer
    of the pair is left out)."""
    digest = answer_sha256(answer)
    mine = found.get((dataset, question_id, system), {})
    return {name: score for name, score in mine.items() if score["answer_sha256"] == digest}


# --------------------------------------------------------------------------- the judge's grade


def score_grade(score: ScoreRow | AnswerScore) -> GradeRecord:
    """The grade a judge pass's score makes, as the run's judge would have written it: its
    fields, unscored (with the reason, else the status) unless scored, its raw replies, the
    cut of the article and the judge's reason."""
    details = score.get("details") or {}
    metrics = score["metrics"]
    return {"truthfulness": metrics.get("truthfulness"), "relevance": metrics.get("relevance"),
            "unscored_reason": None if score["status"] == "scored"
            else (score.get("reason") or score["status"]),
            "raw": score.get("raw") or [], "context_cut": details.get("context_cut"),
            "reason": details.get("reason")}


def with_judge_pass(row: SampleRow) -> SampleRow:
    """The whole row as every report shows it (`judged`, of a whole row): an answered row
    without a run grade whose answer the judge pass scored takes that grade."""
    grade = row["grade"]
    merged = _with_pass(row["status"], grade is not None and grade["unscored_reason"] is None,
                        row.get("scores") or {}, row.get("models") or {}, row["usage"],
                        _usage_record)
    return row if merged is None else cast(SampleRow, {**row, **merged})


def _usage_record(tokens_in: int, tokens_out: int, estimated: bool) -> UsageRecord:
    return {"input": tokens_in, "output": tokens_out, "estimated": estimated}


def judged(answer: AnswerSummary) -> AnswerSummary:
    """The answer as every table reads it. An answered pair without a run grade (none, or
    unscored) whose answer the judge pass scored (its `scores["judge"]`, repeat 0) takes that
    grade: the judge's model joins `models` and its tokens `usage`, as a run's judge call's
    would, and the score leaves `scores`, being the answer's judge rather than a scorer beyond
    it. An answer the run graded keeps its grade: a pass over it is a second opinion (freshrag
    agreement)."""
    merged = _with_pass(answer.status, is_scored(answer), answer.scores, answer.models,
                        answer.usage, Usage)
    if merged is None:
        return answer
    grade = Grade(**{key: value for key, value in merged["grade"].items() if key != "raw"})
    return msgspec.structs.replace(answer, **{**merged, "grade": grade})


Made = TypeVar("Made")


def _with_pass(status: str, graded: bool, scores: Mapping[str, AnswerScore],
               models: Mapping[str, str], usage: Mapping[str, Any],
               made: Callable[[int, int, bool], Made]) -> dict[str, Any] | None:
    """What the judge pass changes of an answer the run left ungraded, in either form (a whole
    row's, a summary's): its grade (the whole record, raw replies and all), its `models` with
    the judge's, its `usage` with the judge's tokens added to each role's (`made` makes a
    role's counts in the answer's form from input, output and estimated; a role's counts are
    read as a mapping, which a summary's `Usage` is too) and its `scores` without the pass;
    None where the pass gives no grade."""
    judge = scores.get("judge")
    if status != "ok" or graded or not judge or not _usable(judge):
        return None
    added = dict(usage)
    for role, counts in (judge.get("usage") or {}).items():
        before = usage.get(role) or {"input": 0, "output": 0}
        added[role] = made(before["input"] + counts["input"], before["output"] + counts["output"],
                           bool(before.get("estimated") or counts.get("estimated")))
    return {"grade": {**score_grade(judge), "graded_by": "freshrag score"},
            "models": {**models, **judge["models"]}, "usage": added,
            "scores": {name: score for name, score in scores.items() if name != "judge"}}


def _usable(judged: AnswerScore) -> bool:
    """A judge pass's score that is a grade: scored, each field on the 1..5 scale."""
    return judged["status"] == "scored" and all(
        isinstance(judged["metrics"].get(f), (int, float)) and 1 <= judged["metrics"][f] <= 5
        for f in FIELDS)

"""The row of samples.jsonl (docs/run-format.md#samplesjsonl), typed field by field in
core/records.py `SampleRow`: one per (question, system), appended the moment the pair finishes,
with everything needed to recompute any table later; how it is written (`sample_row`, a
system's answer checked first: `answer_problem`), read (`read_samples`, `read_summaries`, the
last row of a pair winning) and checked on reading (core/row_check.py `sample_problem`, whose
fields and types come from the same record), and what every table reads of a row's grade and
tokens (`judge_scores`, `answer_tokens`).

The file itself is JSON Lines, appended to and repaired as harness/core/jsonl.py describes.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, cast

from freshrag.core.jsonl import json_problem, now, numbered_jsonl
from freshrag.core.light import collector_paused, decode, light_problem, summarised
from freshrag.core.records import DECISIONS, SampleRow
from freshrag.core.row_check import NONE, NUMBER, json_is, sample_problem, shown, type_names
from freshrag.core.runfiles import SAMPLES as SAMPLES
from freshrag.core.steps import step_records, steps_problem, stopped_problem
from freshrag.core.summary import AnswerSummary, summary_of
from freshrag.core.titles import title_form
from freshrag.core.types import (
    Grade,
    LLMResponse,
    Question,
    SystemAnswer,
    Usage,
    sum_usage_by_role,
)


def sample_row(dataset: str, question: Question, system: str, answer: SystemAnswer | None,
               grade: Grade | None, calls: list[LLMResponse], latency_s: float,
               error: str | None = None,
               answer_latency_s: float | None = None, epoch: int | None = None,
               error_detail: str | None = None) -> SampleRow:
    """One row; `calls` are all the pair's calls, the judge's included. `latency_s` is the pair's
    wall time, judge included; `answer_latency_s` the system's own (what it reports, else
    freshrag's clock around `answer`), None when it gave no answer. `epoch` is written when
    given (a run of --epochs above 1 gives it to every row); `error_detail` when a failed pair
    has more to say than its one-line `error` (the traceback of a system's own exception)."""
    if answer is not None and answer.latency_s is not None:
        answer_latency_s = answer.latency_s
    # cast: the question's fields come as a dict (Question.fields), in the row's order
    return cast(SampleRow, {
        "dataset": dataset, "question_id": question.id, "question": question.text,
        "gold_title": question.gold_title, **question.fields(), "system": system,
        **({"epoch": epoch} if epoch is not None else {}), "status": "failed" if error else "ok",
        "answer": answer.text if answer else None,
        "retrievals": answer.retrievals if answer else 0,  # None: the system did not say
        "usage": {role: asdict(usage) for role, usage in sum_usage_by_role(calls).items()},
        "grade": asdict(grade) if grade else None,
        "calls": [asdict(call) for call in calls],
        "details": titles_in_nfc(answer.details) if answer else {},
        "steps": step_records(answer.steps) if answer else [],
        "stopped": answer.stopped if answer else None,
        "latency_s": round(latency_s, 4),
        "answer_latency_s": None if answer_latency_s is None else round(answer_latency_s, 4),
        "error": error, **({"error_detail": error_detail} if error_detail else {}),
        "finished_at": now(),
    })


def titles_in_nfc(details: dict[str, Any]) -> dict[str, Any]:
    """`details` with the titles of its `retrieved` chunks in NFC, the form gold titles are
    read in (core/titles.py), so that a gold article a system found is found whatever form the
    system wrote its title in; anything else is left for the checks to name."""
    retrieved = details.get("retrieved")
    if not isinstance(retrieved, list):
        return details
    return {**details, "retrieved": [
        {**chunk, "title": title_form(chunk["title"])}
        if isinstance(chunk, dict) and isinstance(chunk.get("title"), str) else chunk
        for chunk in retrieved]}


def answer_problem(answer: object) -> str | None:
    """What keeps `answer`, as a system returned it, from being made into a row, or None
    (docs/faults.md#what-a-system-returns): a SystemAnswer whose fields hold what their types
    say, calls that are LLMResponses with counts, a decision of DECISIONS, details that JSON
    holds. What `sample_row` makes of it is checked again as a reader checks it (`row_problem`)."""
    if not isinstance(answer, SystemAnswer):
        return f"a {type(answer).__name__}, not a SystemAnswer"
    for name, types in (("text", (str,)), ("retrievals", (int, NONE)), ("details", (dict,)),
                        ("latency_s", (*NUMBER, NONE)), ("calls", (list,))):
        value = getattr(answer, name)
        if not json_is(value, types):
            return f"{name} {shown(value)}, not {type_names(types)}"
    if answer.retrievals is not None and answer.retrievals < 0:
        return f"retrievals {answer.retrievals}, not a count"
    if answer.latency_s is not None and not 0 <= answer.latency_s < math.inf:
        return f"latency_s {answer.latency_s}, not seconds from 0"
    if problem := steps_problem(answer.steps) or stopped_problem(answer.stopped):
        return problem
    calls = [(f"calls[{i}]", call) for i, call in enumerate(answer.calls)] + [
        (f"steps[{i}].calls[{j}]", call)
        for i, step in enumerate(answer.steps) for j, call in enumerate(step.calls)]
    if problem := next(filter(None, (_call_problem(call, at) for at, call in calls)), None):
        return problem
    if (decision := answer.details.get("decision")) not in (None, *DECISIONS):
        return (f"details['decision'] {shown(decision)}, not one of {', '.join(DECISIONS)} or "
                f"None")
    return json_problem(answer.details, "details")


def _call_problem(call: object, at: str) -> str | None:
    if not isinstance(call, LLMResponse):
        return f"{at} a {type(call).__name__}, not an LLMResponse"
    usage = call.usage
    if not (isinstance(usage, Usage) and all(json_is(n, (int,)) and n >= 0
                                             for n in (usage.input, usage.output))):
        return f"{at}.usage {shown(usage)}, not a Usage of counts"
    if not json_is(call.latency_s, NUMBER) or not 0 <= call.latency_s < math.inf:
        return f"{at}.latency_s {shown(call.latency_s)}, not seconds from 0"
    return None


def row_problem(row: SampleRow) -> str | None:
    """What a reader would refuse of a row about to be written, or None: what JSON cannot hold
    (`json_problem`), then the readers' own check (`sample_problem`)."""
    return json_problem(row, "row") or sample_problem(cast(dict[str, Any], row))


def read_samples(path: Path, every_epoch: bool = False) -> list[SampleRow]:
    """Every row, the last one per (question, system, epoch) winning, in file order; only the
    first epoch's (what every table reads) unless `every_epoch`. A row the readers cannot use
    (an older freshrag's) is skipped with a warning: its pair is then asked again on resume.
    What the tables read of them, they read of their summaries (`read_summaries`)."""
    made = _latest(path, False, every_epoch, lambda row, line: row,  # checked
                   lambda row: (row["question_id"], row["system"], epoch_of(row)))
    return [cast(SampleRow, row) for row in made]


def read_summaries(path: Path, every_epoch: bool = False,
                   light: bool = True) -> list[AnswerSummary]:
    """The summary of every row `read_samples` keeps (core/summary.py), in the same order:
    `light`, decoded from only what it holds (core/light.py), else from the whole row."""
    made = _latest(path, light, every_epoch, lambda row, line: summarised(row, path, line)
                   if light else summary_of(cast(SampleRow, row), path, line),
                   lambda made: (made.question_id, made.system, made.epoch))
    return [cast(AnswerSummary, summary) for summary in made]


def _latest(path: Path, light: bool, every_epoch: bool,
            make: Callable[[Any, int], Any],
            key_of: Callable[[Any], tuple[str, str, int]]) -> list[Any]:
    """What `make` makes of each row the check passes (and of its line number), the last one
    per (question, system, epoch) (`key_of` what it made) winning, in file order; the first
    epoch's unless `every_epoch`. `light`: decoded by core/light.py (a `Decoded` row)."""
    latest: dict[tuple[str, str, int], Any] = {}
    check: Callable[[Any], str | None] = light_problem if light else sample_problem
    with collector_paused() if light else nullcontext():
        for line, read in numbered_jsonl(path, check, skip=True,
                                         decode=decode if light else None):
            made = make(read, line)
            key = key_of(made)
            latest.pop(key, None)
            latest[key] = made
    return [made for key, made in latest.items() if every_epoch or key[2] == 1]


def epoch_of(row: SampleRow) -> int:
    """The row's epoch (--epochs): 1 where the row has none, as in a run of one epoch."""
    return row.get("epoch") or 1


def is_scored(answer: AnswerSummary) -> bool:
    """An answer the judge scored (what every table averages; the rest are counted)."""
    grade = answer.grade
    return answer.status == "ok" and grade is not None and grade.unscored_reason is None


def judge_scores(answer: AnswerSummary) -> dict[str, float] | None:
    """The truthfulness and relevance of an answer the judge scored, None for any other: how
    the tables read an answer's grade (the run's, or a judge pass's: scoring/store.py
    judged)."""
    grade = answer.grade  # is_scored, inline: a report asks it of every answer a dozen times
    if answer.status != "ok" or grade is None or grade.unscored_reason is not None:
        return None
    # a scored grade holds numbers (sample_problem; a judge pass's: scoring/store.py _usable)
    return {"truthfulness": grade.truthfulness, "relevance": grade.relevance}


def answer_tokens(answer: AnswerSummary) -> tuple[int, int]:
    """Tokens the system spent on this answer (all roles but the judge)."""
    spent_in = spent_out = 0
    for role, used in answer.usage.items():
        if role != "judge":
            spent_in, spent_out = spent_in + used.input, spent_out + used.output
    return spent_in, spent_out

"""The row of samples.jsonl (docs/run-format.md#samplesjsonl), typed field by field in
core/records.py `SampleRow`: one per (question, system), appended the moment the pair finishes,
with everything needed to recompute any table later; how it is written (`sample_row`), read
(`read_samples`, the last row of a pair winning) and checked on reading (`sample_problem`, whose
fields and types come from the same record).

The file itself is JSON Lines, appended to and repaired as harness/core/jsonl.py describes.
"""

from __future__ import annotations

import math
import types as typing_types
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import (
    Any,
    Callable,
    Literal,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from msgspec import UNSET

from freshrag.core import summary as compact
from freshrag.core.jsonl import json_problem, now, numbered_jsonl
from freshrag.core.light import CALL_SUMMARY as CALL_SUMMARY
from freshrag.core.light import collector_paused, decode, is_record, kept, summarised
from freshrag.core.records import DECISIONS, SampleFields, SampleRow, StepRecord
from freshrag.core.runfiles import SAMPLES as SAMPLES
from freshrag.core.steps import step_records, steps_problem, stopped_problem
from freshrag.core.summary import AnswerSummary, summary_of
from freshrag.core.titles import title_form
from freshrag.core.types import (
    STEP_KINDS,
    STOPS,
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
               answer_latency_s: float | None = None, epoch: int | None = None) -> SampleRow:
    """One row; `calls` are all the pair's calls, the judge's included. `latency_s` is the pair's
    wall time, judge included; `answer_latency_s` the system's own (what it reports, else
    freshrag's clock around `answer`), None when it gave no answer. `epoch` is written when
    given (a run of --epochs above 1 gives it to every row)."""
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
        "error": error, "finished_at": now(),
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
    for name, types in (("text", (str,)), ("retrievals", (int, _NONE)), ("details", (dict,)),
                        ("latency_s", (*_NUMBER, _NONE)), ("calls", (list,))):
        value = getattr(answer, name)
        if not _is(value, types):
            return f"{name} {_shown(value)}, not {_names(types)}"
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
        return (f"details['decision'] {_shown(decision)}, not one of {', '.join(DECISIONS)} or "
                f"None")
    return json_problem(answer.details, "details")


def _call_problem(call: object, at: str) -> str | None:
    if not isinstance(call, LLMResponse):
        return f"{at} a {type(call).__name__}, not an LLMResponse"
    usage = call.usage
    if not (isinstance(usage, Usage) and all(_is(n, (int,)) and n >= 0
                                             for n in (usage.input, usage.output))):
        return f"{at}.usage {_shown(usage)}, not a Usage of counts"
    if not _is(call.latency_s, _NUMBER) or not 0 <= call.latency_s < math.inf:
        return f"{at}.latency_s {_shown(call.latency_s)}, not seconds from 0"
    return None


def _shown(value: object) -> str:
    """`value` as an error shows it: its repr, cut to 80 characters, if it has one (an integer
    of over 4,300 digits, or a user's object, may not)."""
    try:
        return f"{value!r:.80}"
    except Exception:  # whatever a user's __repr__ raises
        return f"a {type(value).__name__}"


def row_problem(row: SampleRow) -> str | None:
    """What a reader would refuse of a row about to be written, or None: what JSON cannot hold
    (`json_problem`), then the readers' own check (`sample_problem`)."""
    return json_problem(row, "row") or sample_problem(cast(dict[str, Any], row))


def read_samples(path: Path, light: bool = False, every_epoch: bool = False) -> list[SampleRow]:
    """Every row, the last one per (question, system, epoch) winning, in file order; only the
    first epoch's (what every table reads) unless `every_epoch`. `light`: only
    what the tables read, in typed records (core/light.py: of each call CALL_SUMMARY, chunks
    without text, of each step its kind, repeat and chunks' titles, null optional fields left
    out), but a grounded row's calls, whole. A row the
    readers cannot use (an older freshrag's) is skipped with a warning: its pair is then asked
    again on resume."""
    made = _latest(path, light, every_epoch, lambda row, line: kept(row, path, line) if light
                   else cast(SampleRow, row),  # checked
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
            make: Callable[[dict[str, Any], int], Any],
            key_of: Callable[[Any], tuple[str, str, int]]) -> list[Any]:
    """What `make` makes of each row the check passes (and of its line number), the last one
    per (question, system, epoch) (`key_of` what it made) winning, in file order; the first
    epoch's unless `every_epoch`. `light`: decoded by core/light.py."""
    latest: dict[tuple[str, str, int], Any] = {}
    with collector_paused() if light else nullcontext():
        for line, read in numbered_jsonl(path, sample_problem, skip=True,
                                         decode=decode if light else None):
            made = make(read, line)
            key = key_of(made)
            latest.pop(key, None)
            latest[key] = made
    return [made for key, made in latest.items() if every_epoch or key[2] == 1]


def epoch_of(row: SampleRow) -> int:
    """The row's epoch (--epochs): 1 where the row has none, as in a run of one epoch."""
    return row.get("epoch") or 1


def is_scored(row: SampleRow) -> bool:
    """An answer the judge scored (what every table averages; the rest are counted)."""
    grade = row["grade"]
    return row["status"] == "ok" and grade is not None and grade["unscored_reason"] is None


def judge_scores(row: SampleRow) -> dict[str, float] | None:
    """The truthfulness and relevance of an answer the judge scored, None for any other: how
    the tables read a row's grade (the run's, or a judge pass's: scoring/store.py
    with_judge_pass)."""
    grade = row["grade"]  # is_scored, inline: a report asks it of every row a dozen times
    if row["status"] != "ok" or grade is None:
        return None
    # a scored grade holds numbers (sample_problem; a judge pass's: scoring/store.py _usable)
    if type(grade) is compact.Grade:  # a light row's, read by attribute: a few times faster
        if (reason := grade.unscored_reason) is UNSET:
            raise KeyError("unscored_reason")  # as the mapping does
        return None if reason is not None else {"truthfulness": grade.truthfulness,
                                                "relevance": grade.relevance}
    if grade["unscored_reason"] is not None:
        return None
    return {"truthfulness": cast(float, grade["truthfulness"]),
            "relevance": cast(float, grade["relevance"])}


def answer_tokens(row: SampleRow) -> tuple[int, int]:
    """Tokens the system spent on this row (all roles but the judge)."""
    spent_in = spent_out = 0
    for role, used in (row.get("usage") or {}).items():
        if role == "judge":
            continue
        if type(used) is compact.Usage:  # a light row's counts, read by attribute
            spent_in, spent_out = spent_in + used.input, spent_out + used.output
        else:
            spent_in, spent_out = spent_in + used["input"], spent_out + used["output"]
    return spent_in, spent_out


# --------------------------------------------------------------------------- the rows' shape

_NONE = type(None)
_NUMBER = (int, float)


def _json_types(hint: Any) -> tuple[type, ...]:
    """The JSON types a reader may meet where a record's annotation says `hint` (a number where
    it says float; an object for a TypedDict or a dict; a string for a Literal of strings)."""
    origin = get_origin(hint)
    if origin in (Union, typing_types.UnionType):
        return tuple(dict.fromkeys(t for arg in get_args(hint) for t in _json_types(arg)))
    if origin is Literal:
        return tuple(dict.fromkeys(type(value) for value in get_args(hint)))
    if hint is float:
        return _NUMBER
    if is_typeddict(hint) or origin is dict:
        return (dict,)
    return (origin or hint,)


# Every field a reader may meet, with its JSON types, from its record (core/records.py
# SampleFields): the readers index the REQUIRED ones directly, and only look at the others if
# present (rows made by hand and older rows may lack them).
SAMPLE_FIELDS: dict[str, tuple[type, ...]] = {
    name: _json_types(hint) for name, hint in get_type_hints(SampleFields).items()}
REQUIRED = tuple(name for name in SAMPLE_FIELDS if name in SampleFields.__required_keys__)
# Each field's types as a set, to check a value's own type (true or false only where a bool
# is allowed) before `_is`: a report checks every field of 100,000 rows
EXACT = {name: frozenset(types) for name, types in SAMPLE_FIELDS.items()}
_ABSENT = object()


def sample_problem(row: dict[str, Any]) -> str | None:
    """What is wrong with a samples.jsonl row for the readers (report, analysis, resume), or
    None: every field present with its type, usage as counts, grades as finite numbers."""
    missing = [name for name in REQUIRED if name not in row]
    if row.get("status") == "failed" and "error" not in row:
        missing.append("error")  # the reason a failed pair is reported with
    if missing:
        return f"field(s) {missing} missing"
    for name, exact in EXACT.items():  # a value of one of the types itself passes at once
        value = row.get(name, _ABSENT)
        if type(value) not in exact and value is not _ABSENT and not is_record(value) \
                and not _is(value, SAMPLE_FIELDS[name]):
            return f"field {name!r} must be {_names(SAMPLE_FIELDS[name])}, got {value!r:.80}"
    if row["gold_title"] is None and row.get("kind") != "general":
        return "field 'gold_title' is null, which only a general query (kind 'general') may be"
    if (problem := _gold_set_problem(row)) is not None:
        return problem
    if row["status"] not in ("ok", "failed"):
        return f"field 'status' must be 'ok' or 'failed', got {row['status']!r:.80}"
    if row.get("stopped") not in (None, *STOPS):
        return f"field 'stopped' must be one of {', '.join(STOPS)} or null, got {row['stopped']!r:.80}"
    if row.get("epoch") is not None and row["epoch"] < 1:
        return f"field 'epoch' must be a count from 1, got {row['epoch']}"
    if row["retrievals"] is not None and row["retrievals"] < 0:
        return f"field 'retrievals' must be a count, got {row['retrievals']}"
    return (_usage_problem(row["usage"]) or _grade_problem(row["grade"])
            or _details_problem(row.get("details"), row.get("calls") or [], row.get("models"))
            or _steps_problem(row.get("steps") or []))


def _gold_set_problem(row: dict[str, Any]) -> str | None:
    """A multi-article row's gold set: titles, `gold_title` first, as many as its `hops`."""
    titles = row.get("gold_titles")
    if titles is None:
        return None
    if not (titles and all(isinstance(title, str) for title in titles)
            and titles[0] == row["gold_title"]):
        return (f"field 'gold_titles' must be a list of titles starting with 'gold_title' "
                f"({row['gold_title']!r:.80}), got {titles!r:.80}")
    if row.get("hops") not in (None, len(titles)):
        return f"field 'hops' is {row['hops']}, but 'gold_titles' names {len(titles)} articles"
    return None


def _usage_problem(usage: dict[str, Any]) -> str | None:
    for role, counts in usage.items():
        if is_record(counts):  # typed on reading (core/light.py), as this check demands
            continue
        if not isinstance(counts, dict) or not all(
                _is(counts.get(k), (int,)) and counts[k] >= 0 for k in ("input", "output")):
            return f"usage of {role!r} must be {{\"input\": count, \"output\": count}}, got {counts!r:.80}"
    return None


def _grade_problem(grade: dict[str, Any] | None) -> str | None:
    if grade is None:
        return None
    reason = grade.get("unscored_reason")
    if not _is(reason, (str, _NONE)) or not _is(grade.get("raw", []), (list,)):
        return f"grade must hold unscored_reason (text or null) and raw (a list), got {grade!r:.80}"
    if not _is(grade.get("reason"), (str, _NONE)):
        return f"grade 'reason' must be text or null, got {grade['reason']!r:.80}"
    for name in ("truthfulness", "relevance"):
        value: Any = grade.get(name)
        scored = _is(value, _NUMBER) and math.isfinite(value) and 1 <= value <= 5
        if not scored and (reason is None or value is not None):
            return f"grade {name!r} must be a number from 1 to 5 (or null when unscored), got {value!r:.80}"
    return None


# The keys of `details` that readers read, each with the kind they read it as: anything else a
# system keeps there is its own (docs/run-format.md, `details`)
DETAILS_READ: dict[str, tuple[Callable[[Any], bool], str]] = {
    "decision": (lambda v: _is(v, (str, _NONE)), "text or null"),
    "unknown": (lambda v: v is None or isinstance(v, list) and all(isinstance(n, str) for n in v),
                "null or a list of field names"),
    "context": (lambda v: _is(v, (str, _NONE)), "text or null"),
    **{key: (lambda v: _is(v, (*_NUMBER, _NONE)), "a number or null")
       for key in ("threshold", "p_retrieve", "confidence")},
}


def _details_problem(details: dict[str, Any] | None, calls: list[Any],
                     models: Any) -> str | None:
    details = details or {}
    retrieved = details.get("retrieved")
    if retrieved is not None and not (isinstance(retrieved, list) and all(
            is_record(chunk) or isinstance(chunk, dict) and isinstance(chunk.get("title"), str)
            for chunk in retrieved)):
        return f"details.retrieved must be null or a list of {{\"title\": text}}, got {retrieved!r:.80}"
    for key, (holds, kind) in DETAILS_READ.items():
        if key in details and not holds(details[key]):
            return f"details.{key} must be {kind}, got {_shown(details[key])}"
    if not all(is_record(call) or isinstance(call, dict) and isinstance(call.get("role"), str)
               and _is(call.get("model"), (str, _NONE)) for call in calls):
        return "calls must be a list of objects with a role (and model) as text"
    if models is not None and not (isinstance(models, dict)
                                   and all(isinstance(m, str) for m in models.values())):
        return f"field 'models' must map roles to model names, got {models!r:.80}"
    return None


# A step's fields with their JSON types, from its record (core/records.py StepRecord)
STEP_FIELDS = {name: _json_types(hint) for name, hint in get_type_hints(StepRecord).items()}


def _steps_problem(steps: list[Any]) -> str | None:
    for i, step in enumerate(steps):
        if is_record(step):  # typed on reading (core/light.py), as this check demands
            continue
        if not isinstance(step, dict) or step.get("kind") not in STEP_KINDS:
            return (f"steps[{i}] must be an object whose kind is one of "
                    f"{', '.join(STEP_KINDS)}, got {step!r:.80}")
        for name, types in STEP_FIELDS.items():
            if name in step and not _is(step[name], types):
                return f"steps[{i}].{name} must be {_names(types)}, got {step[name]!r:.80}"
        if not all(isinstance(chunk, dict) and isinstance(chunk.get("title"), str)
                   and _is(chunk.get("index"), (int,)) and _is(chunk.get("score"), _NUMBER)
                   for chunk in step.get("retrieved", [])):
            return (f"steps[{i}].retrieved must be a list of {{\"title\": text, \"index\": "
                    f"count, \"score\": number}}, got {step['retrieved']!r:.80}")
        problem = _usage_problem(step.get("usage", {}))
        if problem:
            return f"steps[{i}]: {problem}"
    return None


def _is(value: Any, types: tuple[type, ...]) -> bool:
    """isinstance, where a JSON true/false is not a number."""
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def _names(types: tuple[type, ...]) -> str:
    words = {str: "text", int: "a whole number", float: "a number", dict: "an object",
             list: "a list", bool: "true or false", _NONE: "null"}
    return " or ".join(dict.fromkeys(words[t] for t in types))

"""The readers' check of a samples.jsonl row (docs/run-format.md#samplesjsonl): what a report,
the analysis and a resumed run demand of each field, its JSON types derived from the row's record
(core/records.py `SampleFields`, `StepRecord`), so that a row a reader cannot use is named and
skipped rather than read wrong (core/samples.py reads, core/light.py decodes).

The light read's decoder types some parts of a row itself, as this check demands them (counts, a
step's kind, a chunk's title, a call's role and model): it names those parts (`typed`), and the
check leaves them to it rather than asking each value which form it has.
"""

from __future__ import annotations

import math
import types as typing_types
from typing import (
    Any,
    Callable,
    Collection,
    Literal,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from freshrag.core.records import SampleFields, StepRecord
from freshrag.core.types import STEP_KINDS, STOPS

# The parts of a row a decoder may type itself (`sample_problem`'s `typed`): the counts of
# `usage`, the `calls`, the `steps`, the chunks of `details.retrieved`, and the `grade` (a
# typed grade is still checked, as a mapping: its types leave its values open)
TYPEABLE = ("usage", "calls", "steps", "retrieved", "grade")

NONE = type(None)
NUMBER = (int, float)


def _json_types(hint: Any) -> tuple[type, ...]:
    """The JSON types a reader may meet where a record's annotation says `hint` (a number where
    it says float; an object for a TypedDict or a dict; a string for a Literal of strings)."""
    origin = get_origin(hint)
    if origin in (Union, typing_types.UnionType):
        return tuple(dict.fromkeys(t for arg in get_args(hint) for t in _json_types(arg)))
    if origin is Literal:
        return tuple(dict.fromkeys(type(value) for value in get_args(hint)))
    if hint is float:
        return NUMBER
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


def shown(value: object) -> str:
    """`value` as an error shows it: its repr, cut to 80 characters, if it has one (an integer
    of over 4,300 digits, or a user's object, may not)."""
    try:
        return f"{value!r:.80}"
    except Exception:  # whatever a user's __repr__ raises
        return f"a {type(value).__name__}"


def sample_problem(row: dict[str, Any], typed: Collection[str] = ()) -> str | None:
    """What is wrong with a samples.jsonl row for the readers (report, analysis, resume), or
    None: every field present with its type, usage as counts, grades as finite numbers. The
    parts named in `typed` (of TYPEABLE) a decoder has typed as this check demands: left to it,
    and `grade`, typed, is checked as a mapping."""
    missing = [name for name in REQUIRED if name not in row]
    if row.get("status") == "failed" and "error" not in row:
        missing.append("error")  # the reason a failed pair is reported with
    if missing:
        return f"field(s) {missing} missing"
    for name, exact in EXACT.items():  # a value of one of the types itself passes at once
        value = row.get(name, _ABSENT)
        if type(value) not in exact and value is not _ABSENT and name not in typed \
                and not json_is(value, SAMPLE_FIELDS[name]):
            return f"field {name!r} must be {type_names(SAMPLE_FIELDS[name])}, got {value!r:.80}"
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
    return ((None if "usage" in typed else _usage_problem(row["usage"]))
            or _grade_problem(row["grade"])
            or _details_problem(row.get("details"), row.get("calls") or [], row.get("models"),
                                typed)
            or (None if "steps" in typed else _steps_problem(row.get("steps") or [])))


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
        if not isinstance(counts, dict) or not all(
                json_is(counts.get(k), (int,)) and counts[k] >= 0 for k in ("input", "output")):
            return f"usage of {role!r} must be {{\"input\": count, \"output\": count}}, got {counts!r:.80}"
    return None


def _grade_problem(grade: dict[str, Any] | None) -> str | None:
    if grade is None:
        return None
    reason = grade.get("unscored_reason")
    if not json_is(reason, (str, NONE)) or not json_is(grade.get("raw", []), (list,)):
        return f"grade must hold unscored_reason (text or null) and raw (a list), got {grade!r:.80}"
    if not json_is(grade.get("reason"), (str, NONE)):
        return f"grade 'reason' must be text or null, got {grade['reason']!r:.80}"
    for name in ("truthfulness", "relevance"):
        value: Any = grade.get(name)
        scored = json_is(value, NUMBER) and math.isfinite(value) and 1 <= value <= 5
        if not scored and (reason is None or value is not None):
            return f"grade {name!r} must be a number from 1 to 5 (or null when unscored), got {value!r:.80}"
    return None


# The keys of `details` that readers read, each with the kind they read it as: anything else a
# system keeps there is its own (docs/run-format.md, `details`)
DETAILS_READ: dict[str, tuple[Callable[[Any], bool], str]] = {
    "decision": (lambda v: json_is(v, (str, NONE)), "text or null"),
    "unknown": (lambda v: v is None or isinstance(v, list) and all(isinstance(n, str) for n in v),
                "null or a list of field names"),
    "context": (lambda v: json_is(v, (str, NONE)), "text or null"),
    **{key: (lambda v: json_is(v, (*NUMBER, NONE)), "a number or null")
       for key in ("threshold", "p_retrieve", "confidence")},
}


def _details_problem(details: dict[str, Any] | None, calls: list[Any], models: Any,
                     typed: Collection[str]) -> str | None:
    details = details or {}
    retrieved = details.get("retrieved")
    if retrieved is not None and "retrieved" not in typed and not (
            isinstance(retrieved, list) and all(isinstance(chunk, dict)
                                                and isinstance(chunk.get("title"), str)
                                                for chunk in retrieved)):
        return f"details.retrieved must be null or a list of {{\"title\": text}}, got {retrieved!r:.80}"
    for key, (holds, kind) in DETAILS_READ.items():
        if key in details and not holds(details[key]):
            return f"details.{key} must be {kind}, got {shown(details[key])}"
    if "calls" not in typed and not all(
            isinstance(call, dict) and isinstance(call.get("role"), str)
            and json_is(call.get("model"), (str, NONE)) for call in calls):
        return "calls must be a list of objects with a role (and model) as text"
    if models is not None and not (isinstance(models, dict)
                                   and all(isinstance(m, str) for m in models.values())):
        return f"field 'models' must map roles to model names, got {models!r:.80}"
    return None


# A step's fields with their JSON types, from its record (core/records.py StepRecord)
STEP_FIELDS = {name: _json_types(hint) for name, hint in get_type_hints(StepRecord).items()}


def _steps_problem(steps: list[Any]) -> str | None:
    for i, step in enumerate(steps):
        if not isinstance(step, dict) or step.get("kind") not in STEP_KINDS:
            return (f"steps[{i}] must be an object whose kind is one of "
                    f"{', '.join(STEP_KINDS)}, got {step!r:.80}")
        for name, types in STEP_FIELDS.items():
            if name in step and not json_is(step[name], types):
                return f"steps[{i}].{name} must be {type_names(types)}, got {step[name]!r:.80}"
        if not all(isinstance(chunk, dict) and isinstance(chunk.get("title"), str)
                   and json_is(chunk.get("index"), (int,)) and json_is(chunk.get("score"), NUMBER)
                   for chunk in step.get("retrieved", [])):
            return (f"steps[{i}].retrieved must be a list of {{\"title\": text, \"index\": "
                    f"count, \"score\": number}}, got {step['retrieved']!r:.80}")
        problem = _usage_problem(step.get("usage", {}))
        if problem:
            return f"steps[{i}]: {problem}"
    return None


def json_is(value: Any, types: tuple[type, ...]) -> bool:
    """isinstance, where a JSON true/false is not a number."""
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def type_names(types: tuple[type, ...]) -> str:
    words = {str: "text", int: "a whole number", float: "a number", dict: "an object",
             list: "a list", bool: "true or false", NONE: "null"}
    return " or ".join(dict.fromkeys(words[t] for t in types))

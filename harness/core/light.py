"""The light read of samples.jsonl (docs/design.md#the-light-read): each row decoded by msgspec
into typed records of only what the tables read, so that a report of 100,000 answers of several
steps fits in memory and time (docs/measurements.md#report-on-trajectories).

A row's calls are decoded as CALL_SUMMARY (their messages, text and arguments, most of a row, are
skipped by the decoder without being made into objects), `details` its chunks without text, its
steps as `Step`s. A checked row is then made into its answer summary (`summarised`), of the
compact records of core/summary.py, which every table reads. Its steps are `Trace`s in a
`Trajectory` that knows the row's file and line, where the JSON report's steps are read again
one row at a time (core/light_steps.py `whole_steps`).

The records' types hold what the readers' row check (core/row_check.py sample_problem) demands
of those parts, which it then leaves to them (`Decoded.typed`). A line they refuse is decoded and checked as the
whole read does it, so both reads keep and skip the same rows: one the check passes (a call's
usage that is no count, which no check asks for) is kept as read. A grounded question's row
(`reference` set) keeps its calls whole: the wording analysis reads the answer's context from
them.
"""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, cast, get_type_hints

import msgspec
from msgspec import UNSET, UnsetType

from freshrag.core.jsonl import loads
from freshrag.core.records import SampleRow
from freshrag.core.row_check import sample_problem
from freshrag.core.summary import (
    AnswerSummary,
    Call,
    Grade,
    Record,
    StepKind,
    Title,
    Trace,
    Trajectory,
    Usage,
    calls_kept,
    context_of,
    copied,
    decided,
    models_of,
    summary_of,
    titled,
    trace,
    whole_calls,
)


class Decoded(dict):
    """A row as `decode` read it, with the parts its records typed (`typed`, of
    core/row_check.py TYPEABLE): none where the records refused the line, which is then
    decoded as the whole read does it."""

    __slots__ = ("typed",)

    def __init__(self, fields: dict[str, Any], typed: tuple[str, ...]):
        super().__init__(fields)
        self.typed = typed


class Chunk(Record):
    """core/records.py ChunkRecord, a step's chunk (its text, if a hand-made row has one, is
    skipped): checked on reading, then kept as its `Title` alone."""

    title: str
    index: int
    score: int | float


class Step(Record):
    """core/records.py StepRecord; a field the row does not hold stays unset."""

    kind: StepKind
    query: str | None | UnsetType = UNSET
    retrieved: list[Chunk] | UnsetType = UNSET
    title: str | None | UnsetType = UNSET
    text: str | None | UnsetType = UNSET
    repeated: bool | UnsetType = UNSET
    calls: int | UnsetType = UNSET
    usage: dict[str, Usage] | UnsetType = UNSET
    latency_s: int | float | UnsetType = UNSET


CALL_SUMMARY: tuple[str, ...] = Call.__struct_fields__
# The row's parts typed above; every other field of SampleRow as JSON has it
TYPED: dict[str, Any] = {"usage": dict[str, Usage], "calls": list[Call], "steps": list[Step],
                         "grade": Grade | None}
FIELDS = tuple(get_type_hints(SampleRow))
LightRow = msgspec.defstruct(
    "LightRow", [(name, TYPED.get(name, Any) | UnsetType, UNSET) for name in FIELDS])
# A grounded question's row: its calls whole
GroundedRow = msgspec.defstruct(
    "GroundedRow", [(name, (list[dict[str, Any]] if name == "calls" else TYPED.get(name, Any))
                     | UnsetType, UNSET) for name in FIELDS])
_LIGHT = msgspec.json.Decoder(LightRow)
_GROUNDED = msgspec.json.Decoder(GroundedRow)
# What each decoder types of a row (core/row_check.py TYPEABLE), its chunks apart
LIGHT_TYPED = ("usage", "calls", "steps", "grade")
GROUNDED_TYPED = ("usage", "steps", "grade")
# Text fields of a few values each, the same string for every row that holds it
SHARED = ("dataset", "system", "status", "gold_title", "stopped", "multihop", "kind", "label",
          "information_need", "group", "criterion")


def decode(line: str) -> Any:
    """The light row of one line of samples.jsonl, its typed parts named; where the records'
    types refuse it, the line as the whole read decodes it, no part typed (module docstring).
    Nulls are kept: the row check reads them."""
    try:
        parts: tuple[str, ...] = LIGHT_TYPED
        typed = _LIGHT.decode(line)
        if isinstance(getattr(typed, "reference"), str):
            typed, parts = _GROUNDED.decode(line), GROUNDED_TYPED
    except (msgspec.ValidationError, msgspec.DecodeError):
        whole = loads(line, max_depth=None)  # as core/jsonl.py iter_jsonl reads it
        return Decoded(whole, ()) if isinstance(whole, dict) else whole
    row = Decoded({name: value for name in FIELDS
                   if (value := getattr(typed, name)) is not UNSET}, parts)
    for name in SHARED:
        if isinstance(value := row.get(name), str):
            row[name] = sys.intern(value)
    details = row.get("details")
    if isinstance(details, dict) and isinstance(details.get("retrieved"), list):
        try:  # a chunk that is no {"title": text} is left for the row check to refuse
            row["details"] = {**details, "retrieved": msgspec.convert(details["retrieved"],
                                                                      list[Title])}
            row.typed += ("retrieved",)
        except msgspec.ValidationError:
            pass
    return row


def light_problem(row: Decoded) -> str | None:
    """The readers' check (core/row_check.py) of a row as `decode` read it, the parts its
    records typed left to them."""
    return sample_problem(row, row.typed)


def _trace(step: Step) -> Trace:
    return trace(step.kind, step.repeated, UNSET if step.retrieved is UNSET
                 else [chunk.title for chunk in step.retrieved])


def summarised(row: Decoded, path: Path, line: int) -> AnswerSummary:
    """The summary of a checked row as `decode` read it: from its typed records, by attribute
    (a report makes 100,000); a line the records refused as the whole row's (core/summary.py
    summary_of), a grounded row's whole calls as the whole row's calls."""
    if not row.typed:
        return summary_of(cast(SampleRow, row), path, line)
    calls, steps, grade = row.get("calls") or [], row.get("steps"), row["grade"]
    made = calls_kept(calls) if "calls" in row.typed else whole_calls(calls)
    details = row.get("details") or {}
    retrieved = details.get("retrieved")
    if grade is not None:
        grade.raw = UNSET
    return AnswerSummary(
        **copied(row),
        grade=grade, usage=row["usage"], calls=made, models=models_of(row, made),
        **decided(details),
        retrieved=None if retrieved is None else tuple(titled(c.title) for c in retrieved),
        steps=None if steps is None else Trajectory(map(_trace, steps), path, line),
        context=context_of(row) if isinstance(row.get("reference"), str) else None)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Decoded rows hold no reference cycles, and a report keeps them to its end: the garbage
    collector, which would walk every one again and again while they are made (near half of a
    light read of 10,000 rows), is paused, and afterwards leaves them out of its walks."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        gc.freeze()


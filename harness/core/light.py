"""The light read of samples.jsonl (docs/design.md#the-light-read): each row decoded by msgspec
into typed records of only what the tables read, so that a report of 100,000 answers of several
steps fits in memory and time (docs/measurements.md#report-on-trajectories).

A row's calls keep CALL_SUMMARY (their messages, text and arguments, most of a row, are skipped
by the decoder without being made into objects), `details` its chunks without text, and its
steps what the tables read (`Trace`: kind, repeated, each chunk a `Title` shared by every chunk
of that title), as a `Trajectory` that knows the row's file and line: the JSON report's steps
(every field of core/records.py `StepRecord`, chunks with title, index and score) are read
again from there one row at a time (core/light_steps.py `whole_steps`). The records are msgspec Structs, a fraction
of a dict's size, that readers use as mappings (`step["kind"]`, `usage.get("estimated")`);
core/files.py dumps writes them as JSON.

Their types hold what the readers' row check (core/samples.py sample_problem) demands of those
parts, which it then leaves to them. A line they refuse is decoded and checked as the whole read
does it, so both reads keep and skip the same rows: one the check passes (a call's usage that is
no count, which no check asks for) is kept as read. A grounded question's row (`reference` set)
keeps its calls whole: the wording analysis reads the answer's context from them.
"""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Iterable, Iterator, Literal, get_type_hints

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from freshrag.core.jsonl import loads
from freshrag.core.records import SampleFields, SampleRow

Count = Annotated[int, Meta(ge=0)]
# A step's kinds (core/types.py STEP_KINDS; a test holds them equal): core/ imports no types here
StepKind = Literal["decide", "search", "read", "reason", "answer"]


class Record(Struct, gc=False):
    """A record of a light row, read as a mapping of its fields that are set. gc=False: a
    record holds no other container that could point back to it, so none is in a cycle."""

    # read a few million times by a report: the shortest path first
    def __getitem__(self, key: str) -> Any:
        if key in self.__struct_fields__:
            value = getattr(self, key)
            if value is not UNSET:
                return value
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.__struct_fields__:
            value = getattr(self, key)
            if value is not UNSET:
                return value
        return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key, UNSET) is not UNSET

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __bool__(self) -> bool:  # as a mapping's: any field set (the first, nearly always)
        return any(getattr(self, key) is not UNSET for key in self.__struct_fields__)

    def __eq__(self, other: object) -> bool:  # equal to the object it was read from
        if isinstance(other, dict):  # as JSON has it: a tuple is a list
            return {key: list(value) if type(value) is tuple else value
                    for key, value in self.items()} == other
        return isinstance(other, Record) and msgspec.to_builtins(self) == msgspec.to_builtins(other)

    def keys(self) -> list[str]:
        return [key for key in self.__struct_fields__ if getattr(self, key) is not UNSET]

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((key, getattr(self, key)) for key in self.keys())


class Usage(Record):
    """core/records.py UsageRecord: counts, as the row check demands."""

    input: Count
    output: Count
    estimated: Any = UNSET  # unchecked by the readers: whatever the row holds


class Chunk(Record):
    """core/records.py ChunkRecord, a step's chunk (its text, if a hand-made row has one, is
    skipped): checked on reading, then kept as its `Title` alone."""

    title: str
    index: int
    score: int | float


class Title(Record):
    """A retrieved chunk as a light row keeps it: its title, all the tables read of it. One
    record per title, shared by every chunk of it (`titled`): a run retrieves the same
    articles again and again."""

    title: str


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


class Call(Record):
    """What the tables read of a call: its role and model (which model played each role), and
    whether a batch answered it, with its usage (prices.py takes the batch discount off it). A
    call no batch answered is kept without its usage, as one record per (role, model) shared by
    every row (`calls_kept`)."""

    role: str
    model: str | None | UnsetType = UNSET
    usage: Usage | UnsetType = UNSET
    batch: Any = UNSET


class Calls(tuple):
    """A light row's calls, with `models`: role -> model as they name it (the last call of a
    role wins), which every table of a report asks of every row, and `batched`: those a batch
    answered, but the judge's (reporting/prices.py batch_calls). One per sequence of shared
    calls: most rows of a system make the same calls."""

    models: dict[str, Any]
    batched: list[Call]


class Trace(Record):
    """A step as a light row keeps it: what the tables read (its kind, whether it repeats a
    query, its chunks' titles); the rest is read again where it is printed (`whole_steps`). A
    step that retrieved nothing is one record per (kind, repeated), shared."""

    kind: StepKind
    repeated: bool | UnsetType = UNSET
    retrieved: tuple[Title, ...] | UnsetType = UNSET


class Grade(Record):
    """core/records.py GradeRecord as the row check reads it; `raw` (the judge's replies, which
    no table reads) is checked on reading and then let go (`kept`)."""

    truthfulness: Any = UNSET
    relevance: Any = UNSET
    unscored_reason: Any = UNSET
    raw: list[Any] | UnsetType = UNSET
    context_cut: Any = UNSET
    reason: Any = UNSET
    graded_by: Any = UNSET


class Trajectory(list):
    """A light row's steps (Traces), with the file and line of the row they were read from, and
    what the tables ask of them again and again, counted once: `searches` (its search steps)
    and `repeated` (those that repeat an earlier query)."""

    __slots__ = ("path", "line", "searches", "repeated")

    def __init__(self, steps: Iterable[Any], path: Path, line: int):
        super().__init__(steps)
        self.path, self.line = path, line
        made = [step for step in self if step.kind == "search"]
        self.searches, self.repeated = len(made), sum(step.repeated is True for step in made)

    def searched(self) -> list[tuple[int, list[str]]]:
        """Each search step's 1-based place and its chunks' titles, in order: what the tables
        read of a trajectory, read from the records' attributes (a report asks it of every
        row several times; as a mapping, a few million look-ups at 100,000 rows)."""
        return [(place, [chunk.title for chunk in step.retrieved or ()])
                for place, step in enumerate(self, 1) if step.kind == "search"]

    def titles(self) -> list[str] | None:
        """Every search step's chunks' titles, in order; None if it made no search."""
        if not self.searches:
            return None
        return [chunk.title for step in self if step.kind == "search"
                for chunk in step.retrieved or ()]


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
# Read directly even when null: the required fields, a failed row's `error`, and `dataset`
# (null in rows made by hand, which the report fills from the manifest)
KEPT_WHEN_NULL = frozenset((*SampleFields.__required_keys__, "error", "dataset"))
# Text fields of a few values each, the same string for every row that holds it
SHARED = ("dataset", "system", "status", "gold_title", "stopped", "multihop", "kind", "label",
          "information_need", "group", "criterion")


def decode(line: str) -> Any:
    """The light row of one line of samples.jsonl, or the line as the whole read decodes it
    where the records' types refuse it (module docstring). Nulls are kept: the row check reads
    them (`kept` drops them after)."""
    try:
        typed = _LIGHT.decode(line)
        if isinstance(getattr(typed, "reference"), str):
            typed = _GROUNDED.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return loads(line, max_depth=None)  # as core/jsonl.py iter_jsonl reads it
    row = {name: value for name in FIELDS if (value := getattr(typed, name)) is not UNSET}
    for name in SHARED:
        if isinstance(value := row.get(name), str):
            row[name] = sys.intern(value)
    details = row.get("details")
    if isinstance(details, dict) and isinstance(details.get("retrieved"), list):
        try:  # a chunk that is no {"title": text} is left for the row check to refuse
            row["details"] = {**details, "retrieved": msgspec.convert(details["retrieved"],
                                                                      list[Title])}
        except msgspec.ValidationError:
            pass
    return row


def kept(row: dict[str, Any], path: Path, line: int) -> SampleRow:
    """A checked row without its optional fields that are null (readers `get` them), its steps
    a Trajectory of Traces that knows the row's `path` and `line`, its calls `Calls` (but a
    grounded row's, whole), the chunks it saw `Title`s, its grade without `raw`."""
    row = {key: value for key, value in row.items()
           if value is not None or key in KEPT_WHEN_NULL}
    if (steps := row.get("steps")) is not None:
        row["steps"] = Trajectory(map(_trace, steps), path, line)
    calls = row.get("calls")
    if isinstance(calls, list) and all(isinstance(call, Call) for call in calls):
        row["calls"] = calls_kept(calls)
    details = row.get("details")
    if isinstance(details, dict) and isinstance(details.get("retrieved"), list):
        row["details"] = {**details, "retrieved": [
            titled(chunk["title"]) for chunk in details["retrieved"]]}
    if isinstance(row.get("grade"), Grade):
        row["grade"].raw = UNSET
    return row  # type: ignore[return-value]


# Every title a light read has met, with its one record: a few thousand articles in a run
_TITLES: dict[str, Title] = {}


def titled(title: str) -> Title:
    """The one Title record of `title`."""
    found = _TITLES.get(title)
    if found is None:
        found = _TITLES[title] = Title(sys.intern(title))
    return found


# The shared records of calls no batch answered, by (role, model, batch), and of sequences of
# them, by their records' ids (each held here, so no other object takes its id)
_CALLS: dict[tuple[Any, ...], Call] = {}
_SEQUENCES: dict[tuple[int, ...], Calls] = {}


def calls_kept(calls: list[Call]) -> Calls:
    """`calls` as a light row keeps them (`Call`, `Calls`)."""
    made = [_shared(call) for call in calls]
    key = tuple(map(id, made))
    found = _SEQUENCES.get(key)
    if found is None:
        found = Calls(made)
        found.models = {call.role: call.model for call in made if call.model}
        found.batched = [call for call in made if call.batch and call.role != "judge"]
        if all(_CALLS.get((c.role, c.model, c.batch)) is c for c in made):
            _SEQUENCES[key] = found
    return found


def _shared(call: Call) -> Call:
    if call.batch:  # priced from its own usage
        return call
    try:
        key = (call.role, call.model, call.batch)
        found = _CALLS.get(key)
    except TypeError:  # a batch field that is no JSON scalar: the call kept as it is
        call.usage = UNSET
        return call
    if found is None:
        found = _CALLS[key] = Call(sys.intern(call.role), sys.intern(call.model)
                                   if isinstance(call.model, str) else call.model,
                                   batch=call.batch)
    return found


# The one Trace of a step that retrieved nothing, by (kind, repeated, retrieved)
_EMPTY: dict[tuple[Any, ...], Trace] = {}


def _trace(step: Any) -> Trace:
    """A Step as a Trace; or a step of a line the records refused, a dict the row check passed
    (a kind, `repeated` true or false, chunks with titles)."""
    if isinstance(step, Step):
        kind, repeated, chunks = step.kind, step.repeated, step.retrieved
        titles = UNSET if chunks is UNSET else [chunk.title for chunk in chunks]
    else:
        kind, repeated = step["kind"], step.get("repeated", UNSET)
        titles = [chunk["title"] for chunk in step["retrieved"]] if "retrieved" in step else UNSET
    if not titles:
        key = (kind, repeated, titles is UNSET)
        if (shared := _EMPTY.get(key)) is None:
            shared = _EMPTY[key] = Trace(kind, repeated, UNSET if titles is UNSET else ())
        return shared
    return Trace(kind, repeated, tuple([found if (found := _TITLES.get(title)) is not None
                                        else titled(title) for title in titles]))


def is_record(value: object) -> bool:
    """Whether `value` is a record of a light row, whose type the decoder checked."""
    return isinstance(value, Record)


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


"""The answer summary (docs/design.md#the-read-side): one typed record per answered pair of
samples.jsonl holding what the tables read of its row, beside the whole row (core/records.py
`SampleRow`) as inspect_ai keeps `EvalSampleSummary` beside `EvalSample`.

An `AnswerSummary` is made from a whole row by `summary_of`, and by the light read
(core/light.py `summarised`), which decodes only what it holds; both give equal summaries of the
same row (tests/core/test_answer_summary.py). Its nested records are the compact ones the light
read keeps: a role's counts (`Usage`), the judge's grade without its raw replies (`Grade`), a
call's role and model (`Call`, one record shared by every row that makes the same calls:
`Calls`), and the steps as `Trace`s of kind, repeat and chunk titles (`Trajectory`, which knows
the row's file and line, where the printed report reads the whole steps again:
core/light_steps.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Iterable, Iterator, Literal, Mapping, Sequence, cast

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from freshrag.core.records import SampleRow
from freshrag.core.titles import title_form

Count = Annotated[int, Meta(ge=0)]
# A step's kinds (core/types.py STEP_KINDS; a test holds them equal): core/ imports no types here
StepKind = Literal["decide", "search", "read", "reason", "answer"]
SystemKind = Literal["fixed", "decides", "agent"]  # core/types.py SYSTEM_KINDS, held equal alike


class Record(Struct, gc=False):
    """A nested record of a summary, read as a mapping of its fields that are set. gc=False: a
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
    """core/records.py UsageRecord: one role's counts, as the row check demands."""

    input: Count
    output: Count
    estimated: Any = UNSET  # unchecked by the readers: whatever the row holds


class Title(Record):
    """A retrieved chunk as a summary keeps it: its title, all the tables read of it. One
    record per title, shared by every chunk of it (`titled`): a run retrieves the same
    articles again and again."""

    title: str


class Trace(Record):
    """A step as a summary keeps it: its kind, whether it repeats a query, its chunks' titles;
    the rest is read again where it is printed (core/light_steps.py). A step that retrieved
    nothing is one record per (kind, repeated), shared."""

    kind: StepKind
    repeated: bool | UnsetType = UNSET
    retrieved: tuple[Title, ...] | UnsetType = UNSET


class Call(Record):
    """What the tables read of a call: its role and model (which model played each role), and
    whether a batch answered it, with its usage (reporting/prices.py takes the batch discount
    off it). A call no batch answered is kept without its usage, as one record per (role,
    model) shared by every row (`calls_kept`)."""

    role: str
    model: str | None | UnsetType = UNSET
    usage: Usage | UnsetType = UNSET
    batch: Any = UNSET


class Grade(Record):
    """core/records.py GradeRecord as the row check reads it; `raw` (the judge's replies, which
    no table reads) is checked on reading and then let go."""

    truthfulness: Any = UNSET
    relevance: Any = UNSET
    unscored_reason: Any = UNSET
    raw: list[Any] | UnsetType = UNSET
    context_cut: Any = UNSET
    reason: Any = UNSET
    graded_by: Any = UNSET


class Calls(tuple):
    """A row's calls, with `models`: role -> model as they name it (the last call of a role
    wins), and `batched`: those a batch answered, but the judge's (reporting/prices.py
    batch_calls). One per sequence of shared calls: most rows of a system make the same calls."""

    models: dict[str, Any]
    batched: list[Call]


class Trajectory(list):
    """A row's steps (Traces), with the file and line of the row they were read from (None for
    a row that was not read from a file), and what the tables ask of them again and again,
    counted once: `searches` (its search steps) and `repeated` (those that repeat a query)."""

    __slots__ = ("path", "line", "searches", "repeated")

    def __init__(self, steps: Iterable[Trace], path: Path | None, line: int):
        super().__init__(steps)
        self.path, self.line = path, line
        made = [step for step in self if step.kind == "search"]
        self.searches, self.repeated = len(made), sum(step.repeated is True for step in made)

    def searched(self) -> list[tuple[int, list[str]]]:
        """Each search step's 1-based place and its chunks' titles, in order."""
        return [(place, [chunk.title for chunk in step.retrieved or ()])
                for place, step in enumerate(self, 1) if step.kind == "search"]

    def titles(self) -> list[str] | None:
        """Every search step's chunks' titles, in order; None if it made no search."""
        if not self.searches:
            return None
        return [chunk.title for step in self if step.kind == "search"
                for chunk in step.retrieved or ()]


class AnswerSummary(Struct, kw_only=True, gc=False):
    """What the tables read of one answered pair (docs/design.md#the-read-side). The question
    set's optional fields are None where the row has none; `run`, `scores` and `system_kind`
    are what the report that reads the run directory adds (reporting/loading.py), the first two
    copied from a whole row that holds them."""

    # identity
    dataset: str | None
    question_id: str
    system: str
    epoch: int  # 1 where the row names none
    run: str | None = None
    # what the run's manifest records its system declared itself (`system_kinds`); None where
    # it records none (a run from before the record, an import, a row made by hand)
    system_kind: SystemKind | None = None
    question: str | None = None
    # the question: its gold set and the question set's optional fields
    gold_title: str | None
    gold_titles: tuple[str, ...] | None = None
    hops: int | None = None
    multihop: str | None = None
    label: str | None = None
    information_need: str | None = None
    kind: str | None = None
    need: bool | None = None
    reference: str | None = None
    group: str | None = None
    criterion: str | None = None
    change: str | None = None  # a changed fact's tag, fast or slow (`--by change`)
    premise: str | None = None  # a changed fact's question: false or none (`--by premise`)
    # the outcome: status, answer, grade, scores beyond the judge
    status: Literal["ok", "failed"]
    error: str | None = None
    answer: str | None = None
    grade: Grade | None
    scores: dict[str, Any] = {}
    # usage by role, and the cost inputs: each role's model and the calls a batch answered
    usage: dict[str, Usage]
    models: dict[str, str]
    calls: Calls
    # the decision (a decider's score and threshold where it records them: the threshold
    # sweep), and what was retrieved (the chunks seen, each step's kind and titles)
    retrievals: int | None
    decision: Any = None
    p_retrieve: Any = None
    confidence: Any = None
    threshold: Any = None
    unknown: tuple[str, ...] = ()  # what a system outside freshrag did not report
    unread: tuple[str, ...] = ()  # the fields of a service's reply that no path read
    retrieved: tuple[Title, ...] | None = None
    steps: Trajectory | None = None
    stopped: str | None = None
    # the answer's context (a grounded question's: the wording analysis reads it)
    context: str | None = None
    latency_s: float | None = None
    answer_latency_s: float | None = None


# The question set's optional fields, copied as the row holds them
QUESTION_FIELDS = ("question", "hops", "multihop", "label", "information_need", "kind", "need",
                   "reference", "group", "criterion", "change", "premise", "error", "answer",
                   "stopped", "latency_s", "answer_latency_s", "run")


def summary_of(row: SampleRow, path: Path | None = None, line: int = 0) -> AnswerSummary:
    """The summary of a whole row (read from `path` at `line`, where it was)."""
    fields = cast(dict[str, Any], row)  # each field as JSON has it, checked on reading
    details = fields.get("details") or {}
    calls = whole_calls(fields.get("calls") or [])
    retrieved = details.get("retrieved")
    steps = fields.get("steps")
    grade = fields["grade"]
    return AnswerSummary(
        **copied(fields),
        grade=None if grade is None else Grade(**{k: v for k, v in grade.items() if k != "raw"}),
        usage={role: usage_of(counts) for role, counts in fields["usage"].items()},
        calls=calls, models=models_of(fields, calls),
        **decided(details),
        retrieved=None if retrieved is None else tuple(titled(c["title"]) for c in retrieved),
        steps=None if steps is None else Trajectory(map(whole_trace, steps), path, line),
        context=context_of(fields) if isinstance(fields.get("reference"), str) else None)


def copied(row: Any) -> dict[str, Any]:
    """The fields every producer copies as the row holds them (the question set's optional
    ones None where it has none)."""
    golds = row.get("gold_titles")
    return {"dataset": row.get("dataset"), "question_id": row["question_id"],
            "system": row["system"], "epoch": row.get("epoch") or 1,
            "gold_title": row["gold_title"], "status": row["status"],
            "retrievals": row["retrievals"], "gold_titles": None if golds is None else tuple(golds),
            "scores": row.get("scores") or {}, **{name: row.get(name) for name in QUESTION_FIELDS}}


# What the tables read of a row's `details` beside its chunks, as the row holds it
DECIDED = ("decision", "p_retrieve", "confidence", "threshold")


def decided(details: Mapping[str, Any]) -> dict[str, Any]:
    """The decision of a row's `details` (DECIDED), what it left unreported (`unknown`) and
    what of a service's reply no path read (`unread`, systems/external/reply.py)."""
    service = details.get("service")
    unread = service.get("unread") if isinstance(service, dict) else None
    return {**{name: details.get(name) for name in DECIDED},
            "unknown": tuple(details.get("unknown") or ()),
            "unread": tuple(map(str, unread)) if isinstance(unread, list) else ()}


def usage_of(counts: dict[str, Any]) -> Usage:
    return Usage(counts["input"], counts["output"], counts.get("estimated", UNSET))


def whole_calls(calls: list[Any]) -> Calls:
    """A whole row's calls as a summary keeps them: role, model, and a batch call's usage."""
    return calls_kept([Call(call["role"], call.get("model", UNSET),
                            usage_of(call["usage"]) if call.get("batch")
                            and isinstance(call.get("usage"), dict) else UNSET,
                            call.get("batch", UNSET)) for call in calls])


def models_of(row: Any, calls: Calls) -> dict[str, str]:
    """Which model played each role: the row's `models` (an import's, which has no calls)
    under its calls'."""
    return {**(row.get("models") or {}), **calls.models}


def context_of(row: Mapping[str, Any]) -> str | None:
    """The retrieved extracts the answer was written from (the system prompt of the last answer
    call of the whole row), or None when the pair retrieved nothing."""
    if not row.get("retrievals"):
        return None
    answers = [call for call in row.get("calls") or [] if call.get("role") == "answer"]
    if not answers:
        return None
    return "\n".join(message.get("content") or "" for message in answers[-1]["messages"]
                     if message.get("role") == "system")


# Every title a read has met, with its one record: a few thousand articles in a run
_TITLES: dict[str, Title] = {}


def titled(title: str) -> Title:
    """The one Title record of `title`, in NFC (core/titles.py) as gold titles are: a row
    written before titles were normalised compares the same."""
    found = _TITLES.get(title)
    if found is None:
        found = _TITLES[title] = Title(sys.intern(title_form(title)))
    return found


# The shared records of calls no batch answered, by (role, model, batch), and of sequences of
# them, by their records' ids (each held here, so no other object takes its id)
_CALLS: dict[tuple[Any, ...], Call] = {}
_SEQUENCES: dict[tuple[int, ...], Calls] = {}


def calls_kept(calls: Sequence[Call]) -> Calls:
    """`calls` as a summary keeps them (`Call`, `Calls`)."""
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


def trace(kind: Any, repeated: Any, titles: list[str] | UnsetType) -> Trace:
    """A step's Trace: its kind, `repeated` (UNSET where the row has none) and its chunks'
    titles (UNSET where it has no `retrieved`)."""
    if not titles:
        key = (kind, repeated, titles is UNSET)
        if (shared := _EMPTY.get(key)) is None:
            shared = _EMPTY[key] = Trace(kind, repeated, UNSET if titles is UNSET else ())
        return shared
    return Trace(kind, repeated, tuple([found if (found := _TITLES.get(title)) is not None
                                        else titled(title) for title in titles]))


def whole_trace(step: Mapping[str, Any]) -> Trace:
    """The Trace of a whole row's step, as the row check passed it (a kind, `repeated` true or
    false, chunks with titles)."""
    return trace(step["kind"], step.get("repeated", UNSET),
                 [chunk["title"] for chunk in step["retrieved"]] if "retrieved" in step else UNSET)

"""People's labels of answers, as the report's labelling page saves them (docs/reports.md#labelling-answers).

A labels file is JSON Lines, one object per labelled answer:
`{"freshrag_labels": 1, "key", "dataset", "question_id", "answer_sha256", "truthfulness",
"relevance", "note", "labeller", "labelled_at", "seed"}`. The page that writes it is blind to the
systems, so no system's name is in it: `key` is the hex SHA-256 of
`dataset + "\\n" + question_id + "\\n" + system` (UTF-8), which a run's row gives again, and
`answer_sha256` that of the answer text the person read (scoring/store.py answer_sha256).

`read_labels` is the one reader: it checks every line and names the file and line of the first
that is wrong. Several people's files merge; where one labeller labelled one answer (key and
answer text) more than once, the last line read wins (files in the order given). `resolve` pairs labels with a run's rows:
a label whose key no row has, or whose answer is no longer the row's answer (the pair was
answered again), is left out and counted, never matched to another answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterable, Sequence

from freshrag.core.errors import UserError
from freshrag.core.jsonl import loads
from freshrag.core.records import SampleRow
from freshrag.core.textfile import lines
from freshrag.scoring.store import answer_sha256

FORMAT = 1  # `freshrag_labels`: a file of a newer format is refused, not misread
SCORES = ("truthfulness", "relevance")  # each a whole number 1..5, as the judge's scale
HEX64 = re.compile(r"[0-9a-f]{64}")


class LabelsError(UserError, ValueError):
    """A labels file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Label:
    """One line of a labels file, checked; `where` is its `file:line`."""

    key: str
    dataset: str
    question_id: str
    answer_sha256: str
    truthfulness: int
    relevance: int
    note: str
    labeller: str
    labelled_at: str
    seed: int
    where: str = field(compare=False)


@dataclass
class Resolved:
    """Labels paired with the rows they label (`pairs`, in the labels' order; a label pairs with
    every row of its key that holds its answer), and the labels left out: `unknown`, no row has
    its key; `changed`, the row's answer is not the one labelled."""

    pairs: list[tuple[SampleRow, Label]]
    unknown: int = 0
    changed: int = 0

    def notes(self) -> list[str]:
        """One line per kind of label left out, for the command to print ([] when none)."""
        notes = []
        if self.unknown:
            notes.append(f"{self.unknown} label(s) name no answer of these runs (another run's "
                         "or another question set's labels?): left out")
        if self.changed:
            notes.append(f"{self.changed} label(s) are of another answer text than the run's "
                         "(the pair was answered again since it was labelled): left out")
        return notes


def label_key(dataset: str | None, question_id: str, system: str) -> str:
    """The key of a row in a labels file: no system's name in it, yet the row gives it back."""
    text = f"{dataset or ''}\n{question_id}\n{system}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def row_key(row: SampleRow) -> str:
    return label_key(row.get("dataset"), str(row["question_id"]), row["system"])


def read_labels(paths: Sequence[Path]) -> list[Label]:
    """Every label of the files, checked, in the order read; one per labeller and answer (key
    and answer_sha256: two runs' answers under one system name are two answers), the last read
    winning. Raises LabelsError naming the file and line of the first bad line."""
    kept: dict[tuple[str, str, str], Label] = {}
    for path in paths:
        for line_no, text in lines(Path(path), LabelsError):
            if not text.strip():
                continue
            label = _label(text, f"{path}:{line_no}")
            ident = (label.labeller, label.key, label.answer_sha256)
            kept.pop(ident, None)  # the last one takes its place in the order
            kept[ident] = label
    return list(kept.values())


def resolve(labels: Iterable[Label], rows: Iterable[SampleRow]) -> Resolved:
    """Pair each label with the rows it labels (see the module docstring)."""
    by_key: dict[str, list[SampleRow]] = {}
    for row in rows:
        by_key.setdefault(row_key(row), []).append(row)
    resolved = Resolved(pairs=[])
    for label in labels:
        candidates = by_key.get(label.key)
        if not candidates:
            resolved.unknown += 1
            continue
        same = [row for row in candidates
                if answer_sha256(row.get("answer")) == label.answer_sha256]
        if not same:
            resolved.changed += 1
        resolved.pairs += [(row, label) for row in same]
    return resolved


# --------------------------------------------------------------------------- checking a line


def _label(text: str, where: str) -> Label:
    try:
        record = loads(text)
    except json.JSONDecodeError as err:
        raise LabelsError(f"{where}: not valid JSON: {err.msg}") from None
    except RecursionError:
        raise LabelsError(f"{where}: JSON nested too deeply") from None
    if not isinstance(record, dict):
        raise LabelsError(f"{where}: expected a JSON object, got {type(record).__name__}")
    problem = _problem(record)
    if problem:
        raise LabelsError(f"{where}: {problem}")
    names = [f.name for f in fields(Label) if f.name != "where"]
    return Label(**{name: record[name] for name in names}, where=where)


def _problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a label (None: nothing)."""
    version = record.get("freshrag_labels")
    if version != FORMAT:
        return (f"`freshrag_labels` is {version!r}: not a labels file of format {FORMAT} "
                "(saved by the labelling page of `freshrag report --html F --label`)")
    for name in ("key", "answer_sha256"):
        if not (isinstance(record.get(name), str) and HEX64.fullmatch(record[name])):
            return f"`{name}` is {record.get(name)!r}: expected 64 lowercase hex digits"
    for name in ("dataset", "question_id", "note", "labeller", "labelled_at"):
        if not isinstance(record.get(name), str):
            return f"`{name}` is {record.get(name)!r}: expected a string"
    if not record["labeller"].strip():
        return "`labeller` is empty: each label names the person who gave it"
    for name in SCORES:
        value = record.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            return f"`{name}` is {value!r}: expected a whole number from 1 to 5"
    if isinstance(record.get("seed"), bool) or not isinstance(record.get("seed"), int):
        return f"`seed` is {record.get('seed')!r}: expected a whole number"
    return _time_problem(record["labelled_at"])


def _time_problem(value: str) -> str | None:
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return f"`labelled_at` is {value!r}: expected an ISO 8601 time, e.g. 2024-05-01T12:00:00Z"
    if when.utcoffset() != timedelta(0):
        return f"`labelled_at` is {value!r}: expected a time in UTC (ending in Z or +00:00)"
    return None

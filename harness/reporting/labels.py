"""People's labels of answers, as the report's labelling page saves them (docs/reports.md#labelling-answers).

A labels file is JSON Lines, one object per labelled answer:
`{"freshrag_labels": 2, "key", "salt", "dataset", "question_id", "answer_sha256", "truthfulness",
"relevance", "note", "labeller", "labelled_at", "seed"}`. The page that writes it is blind to the
systems, so nothing in it comes from a system: an answer is what a blind person can tell apart,
the answer text (`answer_sha256`, scoring/store.py answer_sha256) given to a question (`dataset`,
`question_id`). `key` is the hex SHA-256 of `salt + "\n" + dataset + "\n" + question_id + "\n" +
answer_sha256` (UTF-8), `salt` the page's own random salt (`page_key`): the answer's id on that
page, checked on reading, which tells nothing a page does not show and differs between pages.
Files of format 1 (pages before the salt, whose `key` digested the system's name) are read too;
their key is not checked, and they resolve as format 2 does.

`read_labels` is the one reader: it checks every line and names the file and line of the first
that is wrong, quoting a wrong value cut to 80 characters. Several people's files merge; where
one labeller labelled one answer more than once, the last line read wins (files in the order
given). `resolve` pairs labels with a run's rows by question and answer text: a label pairs with
every row of its question that holds the text labelled (two systems that gave one text gave one
answer, to a blind person); a label of a question no row has, or of a text no row of its
question holds any more (answered again), is left out and counted, never matched to another
answer.
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
from freshrag.core.summary import AnswerSummary
from freshrag.core.textfile import lines
from freshrag.core.wording import counted
from freshrag.scoring.store import answer_sha256

FORMAT = 2  # `freshrag_labels`: a file of a newer format is refused, not misread
FORMATS = (1, 2)  # 1: no salt, a key that digested the system's name (read, key unchecked)
SCORES = ("truthfulness", "relevance")  # each a whole number 1..5, as the judge's scale
HEX64 = re.compile(r"[0-9a-f]{64}")
SALT = re.compile(r"[0-9a-f]{32}")  # 128 random bits per page


class LabelsError(UserError, ValueError):
    """A labels file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Label:
    """One line of a labels file, checked; `where` is its `file:line`."""

    key: str
    salt: str | None  # None in a file of format 1
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

    @property
    def answer(self) -> tuple[str, str, str]:
        """The answer labelled, as `answer_of` gives a row's."""
        return (self.dataset, self.question_id, self.answer_sha256)


@dataclass
class Resolved:
    """Labels paired with the rows they label (`pairs`, in the labels' order; a label pairs with
    every row of its question that holds its answer text), and the labels left out: `unknown`,
    no row has its question; `changed`, no row of its question holds the text labelled."""

    pairs: list[tuple[AnswerSummary, Label]]
    unknown: int = 0
    changed: int = 0

    def notes(self) -> list[str]:
        """One line per kind of label left out, for the command to print ([] when none)."""
        notes = []
        if self.unknown:
            notes.append(f"{counted(self.unknown, 'label')} naming no question of these runs "
                         "(another question set's labels?): left out")
        if self.changed:
            notes.append(f"{counted(self.changed, 'label')} of another answer text than the "
                         "run's (the pair was answered again since it was labelled): left out")
        return notes


def page_key(salt: str, dataset: str | None, question_id: str, answer_text_sha256: str) -> str:
    """An answer's key on the page of `salt`: no system in it, and another on every page."""
    text = f"{salt}\n{dataset or ''}\n{question_id}\n{answer_text_sha256}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def answer_of(row: AnswerSummary) -> tuple[str, str, str]:
    """What a blind person can tell an answer by: dataset, question id and answer text digest."""
    return (row.dataset or "", str(row.question_id), answer_sha256(row.answer))


def read_labels(paths: Sequence[Path]) -> list[Label]:
    """Every label of the files, checked, in the order read; one per labeller and answer
    (`Label.answer`), the last read winning. Raises LabelsError naming the file and line of the
    first bad line."""
    kept: dict[tuple[str, tuple[str, str, str]], Label] = {}
    for path in paths:
        for line_no, text in lines(Path(path), LabelsError):
            if not text.strip():
                continue
            label = _label(text, f"{path}:{line_no}")
            ident = (label.labeller, label.answer)
            kept.pop(ident, None)  # the last one takes its place in the order
            kept[ident] = label
    return list(kept.values())


def resolve(labels: Iterable[Label], rows: Iterable[AnswerSummary]) -> Resolved:
    """Pair each label with the rows it labels (see the module docstring)."""
    by_answer: dict[tuple[str, str, str], list[AnswerSummary]] = {}
    questions: set[tuple[str, str]] = set()
    for row in rows:
        answer = answer_of(row)
        by_answer.setdefault(answer, []).append(row)
        questions.add(answer[:2])
    resolved = Resolved(pairs=[])
    for label in labels:
        same = by_answer.get(label.answer)
        if same:
            resolved.pairs += [(row, label) for row in same]
        elif label.answer[:2] in questions:
            resolved.changed += 1
        else:
            resolved.unknown += 1
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
    names = [f.name for f in fields(Label) if f.name not in ("where", "salt")]
    salt = record.get("salt") if record["freshrag_labels"] != 1 else None
    return Label(**{name: record[name] for name in names}, salt=salt, where=where)


def _problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a label (None: nothing); a value quoted is cut to 80 characters."""
    version = record.get("freshrag_labels")
    if isinstance(version, bool) or version not in FORMATS:
        return (f"`freshrag_labels` is {version!r:.80}: not a labels file of format "
                f"{' or '.join(map(str, FORMATS))} (saved by the labelling page of "
                "`freshrag report --html F --label`)")
    for name in ("key", "answer_sha256"):
        if not (isinstance(record.get(name), str) and HEX64.fullmatch(record[name])):
            return f"`{name}` is {record.get(name)!r:.80}: expected 64 lowercase hex digits"
    for name in ("dataset", "question_id", "note", "labeller", "labelled_at"):
        if not isinstance(record.get(name), str):
            return f"`{name}` is {record.get(name)!r:.80}: expected a string"
    if not record["labeller"].strip():
        return "`labeller` is empty: each label names the person who gave it"
    for name in SCORES:
        value = record.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            return f"`{name}` is {value!r:.80}: expected a whole number from 1 to 5"
    if isinstance(record.get("seed"), bool) or not isinstance(record.get("seed"), int):
        return f"`seed` is {record.get('seed')!r:.80}: expected a whole number"
    return _time_problem(record["labelled_at"]) or _salt_problem(record)


def _salt_problem(record: dict[str, Any]) -> str | None:
    """A format 2 line's salt, and its key made again from it (format 1: no salt to check)."""
    if record["freshrag_labels"] == 1:
        return None
    salt = record.get("salt")
    if not (isinstance(salt, str) and SALT.fullmatch(salt)):
        return f"`salt` is {salt!r:.80}: expected 32 lowercase hex digits"
    if record["key"] != page_key(salt, record["dataset"], record["question_id"],
                                 record["answer_sha256"]):
        return ("`key` is not the digest of its salt, dataset, question_id and answer_sha256: "
                "the line was changed after the page saved it")
    return None


def _time_problem(value: str) -> str | None:
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return (f"`labelled_at` is {value!r:.80}: expected an ISO 8601 time, e.g. "
                "2024-05-01T12:00:00Z")
    if when.utcoffset() != timedelta(0):
        return f"`labelled_at` is {value!r:.80}: expected a time in UTC (ending in Z or +00:00)"
    return None

"""Answers made elsewhere, as a system (docs/own-system.md): a JSON Lines or CSV file with one
answer per question, replayed through the run so that the judge, the scorers, resume and every
report treat them like any other system's.

A row names its question by id (`question_id` or `id`) or by its text (`question`, or Ragas'
`user_input`) and gives the answer (`answer`, or Ragas' `response`); optional columns are the
retrieved contexts (`contexts`, or Ragas' `retrieved_contexts`: a list of texts or of {title,
text, score}; in CSV a JSON list), `input_tokens`, `output_tokens`, `retrievals`, `decision`,
`latency_s`, the trajectory (`steps`, or a conversation's `messages`; in CSV JSON text), Ragas'
`reference` (kept in the answer's details), and numbers under any other name (a Ragas result's
metric columns), kept as the answer's `details["ragas_scores"]`; pandas' index column (the
unnamed first column of a default `to_csv()`) is skipped. A Ragas multi-turn sample (its
`user_input` a list of messages) asks its first human message and answers with its last ai
message; the conversation is its trajectory (systems/external/trajectory.py). What a row does not
report is unknown, never 0. Each row lands on the dataset's question as
systems/external/matching.py says: by id when the dataset has it, else by the question text
(whitespace and case aside). The whole file is read and checked before the run starts: an unknown
column (text, or numbers under a name close to a known one: a misspelling), a bad value, a row
that matches no question of the dataset or a question answered twice is named with its file and
line. A question of the dataset that no row answers is listed in the import's summary
(`Answers.summary`), and its pair fails saying so.
"""

from __future__ import annotations

import ast
import csv
import difflib
import functools
import hashlib
import io
import json
import math
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from freshrag.core.errors import UserError
from freshrag.core.files import dumps
from freshrag.core.jsonl import MAX_DEPTH, depth, json_problem, loads
from freshrag.core.textfile import MAX_LINE_BYTES, lines, read_text, unicode_text
from freshrag.core.types import CallShape, Declarations, Question, SystemAnswer, SystemContext
from freshrag.llm.client import EndpointError
from freshrag.systems.external.matching import NoMatch, QuestionMatcher, summary
from freshrag.systems.external.reported import reported_answer
from freshrag.systems.external.trajectory import TrajectoryError, conversation_ends

SUFFIXES = (".jsonl", ".csv")
# column -> the reported value it is (systems/external/reported.py), Ragas' names beside ours
COLUMNS = {"answer": "answer", "response": "answer", "contexts": "contexts",
           "retrieved_contexts": "contexts", "input_tokens": "input_tokens",
           "output_tokens": "output_tokens", "retrievals": "retrievals", "decision": "decision",
           "latency_s": "latency_s", "steps": "steps", "messages": "messages"}
QUESTION_COLUMNS = ("question_id", "id", "question", "user_input")
# Ragas' reference answer, and what a multi-turn sample may add: kept in the answer's details
KEPT = ("reference", "reference_tool_calls", "rubrics", "reference_topics")
LISTS = ("contexts", "steps", "messages")  # what a CSV cell holds as a JSON (or Python) list
KNOWN = (*QUESTION_COLUMNS, *COLUMNS, *KEPT)
# pandas' index column of a default to_csv(): named "" first in the header, "Unnamed: 0" once
# pandas has read the file back and written it again; it numbers rows, and answers nothing
INDEX_COLUMNS = ("", "Unnamed: 0")
SCORES = "ragas_scores"  # the details key of a row's numbers in columns of no known name


class AnswersFileError(UserError, ValueError):
    """An answers file that cannot be replayed; the message names the file and line."""


@dataclass(frozen=True)
class Answers:
    """Every answer of one file, by question id, ready to replay; `rules` counts the rows each
    matching rule placed, `unanswered` the dataset's questions no row answers."""

    path: Path
    sha256: str
    by_question: dict[str, SystemAnswer]
    rules: Counter
    unanswered: list[str]

    def summary(self) -> str:
        return summary(str(self.path), self.rules, self.unanswered)


def load_answers(path: Path, questions: list[Question], name: str) -> Answers:
    """The file's answers matched to `questions` (systems/external/matching.py), each row
    checked."""
    if not path.is_file():
        raise AnswersFileError(f"{path}: answers file not found")
    matcher = QuestionMatcher(questions)
    found: dict[str, tuple[int, SystemAnswer]] = {}
    rules: Counter = Counter()
    for line_no, whole_row in _rows(path):
        where = f"{path}:{line_no}"
        row, scores = _scores(whole_row, where)
        question, rule = _question(row, matcher, where)
        if question.id in found:
            raise AnswersFileError(f"{where}: answers question {question.id!r} again (first at "
                                   f"line {found[question.id][0]})")
        found[question.id] = (line_no, _answer(row, question, name, where))
        if scores:
            found[question.id][1].details[SCORES] = scores
        rules[rule] += 1
    if not found:
        raise AnswersFileError(f"{path}: holds no answers")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Answers(path, digest, {qid: answer for qid, (_, answer) in found.items()}, rules,
                   matcher.unanswered(set(found)))


class AnswersFile(Declarations):
    """The file as a system: each question's answer is the file's, its calls and tokens as the
    file reports them."""

    call_shape = CallShape()  # none: the answers were made elsewhere
    replays = True  # so an answer's latency is the file's latency_s, else unknown: never 0

    def __init__(self, context: SystemContext, answers: Answers):
        self.answers = answers

    def answer(self, question: Question) -> SystemAnswer:
        found = self.answers.by_question.get(question.id)
        if found is None:
            raise EndpointError(f"{self.answers.path} has no answer for question {question.id}")
        return replace(found, calls=list(found.calls), details=dict(found.details),
                       steps=list(found.steps))


def factory(answers: Answers) -> functools.partial:
    return functools.partial(AnswersFile, answers=answers)


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() == ".csv":
        return _csv_rows(path)
    found = []
    for line_no, text in lines(path, AnswersFileError):
        if not text.strip():
            continue
        try:  # jsonl.loads: nesting bounded, a lone surrogate as U+FFFD, a huge integer named
            row = loads(text)
        except json.JSONDecodeError as err:
            raise AnswersFileError(f"{path}:{line_no}: not a JSON object ({err.msg})") from None
        if not isinstance(row, dict):
            raise AnswersFileError(f"{path}:{line_no}: not a JSON object")
        found.append((line_no, row))
    return found


def _csv_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    # A cell may be as long as a line may be (a long answer, many contexts): the csv module's
    # default of 131,072 characters is no limit of freshrag's. The setting is the process's.
    csv.field_size_limit(MAX_LINE_BYTES)
    reader = csv.DictReader(io.StringIO(read_text(path, AnswersFileError), newline=""))
    try:
        rows = [(reader.line_num, dict(row)) for row in reader]
    except csv.Error as err:  # a cell over the limit: named where the reader stopped
        raise AnswersFileError(f"{path}:{reader.line_num}: {err}") from None
    if extra := next((line_no for line_no, row in rows if None in row), None):
        raise AnswersFileError(f"{path}:{extra}: more cells than the header has columns")
    header = list(reader.fieldnames or ())
    if (twice := next((name for name in header if header.count(name) > 1), None)) is not None:
        raise AnswersFileError(f"{path}:1: the header names the column {twice!r} twice")
    if header and header[0] in INDEX_COLUMNS:
        rows = [(line_no, {k: v for k, v in row.items() if k != header[0]})
                for line_no, row in rows]
    return [(line_no, _csv_values(row, f"{path}:{line_no}")) for line_no, row in rows]


def _csv_values(row: dict[str, str], where: str) -> dict[str, Any]:
    """A CSV row's cells as values: numbers for counts, lists for contexts and trajectories (and
    a Ragas multi-turn sample's `user_input`), empty as absent."""
    values: dict[str, Any] = {}
    for column, cell in row.items():
        if cell is None or cell == "":
            continue
        if COLUMNS.get(column) in LISTS or column in KEPT[1:]:
            values[column] = _list_cell(cell, column, where)
        elif column == "user_input" and cell.lstrip().startswith("[{"):
            values[column] = _list_cell(cell, column, where)
        elif COLUMNS.get(column) in ("input_tokens", "output_tokens", "retrievals", "latency_s"):
            try:
                values[column] = float(cell) if column == "latency_s" else int(cell)
            except ValueError:
                raise AnswersFileError(f"{where}: {column} {cell[:80]!r} is not a number") from None
        elif COLUMNS.get(column) == "decision" and cell.lower() in ("true", "false"):
            values[column] = cell.lower() == "true"
        elif column not in KNOWN and _is_float(cell):  # a score (Ragas'), as a number
            values[column] = float(cell)
        else:
            values[column] = cell
    return values


def _list_cell(cell: str, column: str, where: str) -> Any:
    try:
        return loads(cell)
    except json.JSONDecodeError as err:
        problem = err.msg
    try:  # a list written by Python (pandas' to_csv of a Ragas dataset)
        value = ast.literal_eval(cell)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise AnswersFileError(f"{where}: {column} is neither a JSON nor a Python list "
                               f"({problem}): {cell[:80]!r}") from None
    if depth(value) > MAX_DEPTH:
        raise AnswersFileError(f"{where}: {column} is nested too deeply (over {MAX_DEPTH} "
                               f"levels)")
    return unicode_text(value)


def _scores(row: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, float]]:
    """The row's known columns, and its scores: the numbers in columns of no known name (Ragas'
    metrics, `faithfulness`, `answer_relevancy`, ...), a null or NaN among them left out. pandas'
    index column is dropped; any other column is refused, and so is a number in a column whose
    name is near a known one (`retreivals`), which is a misspelling rather than a score."""
    known: dict[str, Any] = {}
    scores: dict[str, float] = {}
    for column, value in row.items():
        if column in KNOWN:
            known[column] = value
        elif column == INDEX_COLUMNS[1]:  # a JSON record of a CSV that pandas read
            continue
        elif not column.strip():
            raise AnswersFileError(f"{where}: a column without a name, not first (only "
                                   f"pandas' index column, first in a CSV, may have none)")
        elif near := difflib.get_close_matches(column, KNOWN, n=1, cutoff=0.8):
            raise AnswersFileError(f"{where}: unknown column {column[:80]!r}: did you mean "
                                   f"{near[0]!r}? known: {', '.join(KNOWN)}")
        elif _is_number(value) or value is None:
            if value is not None and math.isfinite(value):
                scores[column] = float(value)
        else:
            raise AnswersFileError(
                f"{where}: unknown column {column[:80]!r} holding {value!r:.60}; known: "
                f"{', '.join(KNOWN)}; a column of numbers (a Ragas score) is kept in the "
                f"row's details.{SCORES}")
    return known, scores


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_float(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _question(row: dict[str, Any], matcher: QuestionMatcher, where: str) -> tuple[Question, str]:
    """The dataset's question the row answers, and the rule that matched it."""
    qid = row.get("question_id", row.get("id"))
    text = row.get("question", row.get("user_input"))
    if isinstance(text, list):  # a Ragas multi-turn sample: its first human message asks
        text = _ends(text, where)[0]
    if qid is None and (not isinstance(text, str) or not text.strip()):
        raise AnswersFileError(f"{where}: names no question (question_id, id, question or "
                               f"user_input)")
    try:
        return matcher.match(qid, text)
    except NoMatch as err:
        raise AnswersFileError(f"{where}: {err}") from None


def _answer(row: dict[str, Any], question: Question, name: str, where: str) -> SystemAnswer:
    values: dict[str, Any] = {}
    for column, value in row.items():
        if column in COLUMNS:
            values[COLUMNS[column]] = value
    names, answer_at = {}, "answer or response"
    if isinstance(conversation := row.get("user_input"), list):
        if (given := sorted({"steps", "messages"} & set(row))):
            raise AnswersFileError(f"{where}: gives its trajectory twice: user_input is a "
                                   f"conversation, and {' and '.join(given)} beside it")
        values["messages"], names["messages"] = conversation, "user_input"
        if values.get("answer") is None:
            values["answer"], answer_at = _ends(conversation, where)[1], "user_input's last ai message"
    try:
        answer = reported_answer(values, name, question, names)
    except ValueError as err:
        raise AnswersFileError(f"{where}: " + str(err).replace("{answer!r}", answer_at)) from None
    for column in KEPT:
        if row.get(column) is not None and (column != "reference" or isinstance(row[column], str)):
            answer.details[column] = _json_value(row[column], column, where)
    return answer


def _json_value(value: Any, column: str, where: str) -> Any:
    """`value` as JSON holds it (a Python list in CSV may hold what JSON cannot: a set, bytes)."""
    if problem := json_problem(value, column):
        raise AnswersFileError(f"{where}: {problem}")
    return loads(dumps(value))  # a tuple as the list JSON reads back


def _ends(conversation: list[Any], where: str) -> tuple[str | None, str | None]:
    try:
        return conversation_ends(conversation, "user_input")
    except TrajectoryError as err:
        raise AnswersFileError(f"{where}: {err}") from None

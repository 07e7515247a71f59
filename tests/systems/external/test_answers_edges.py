"""The edges of the answers-file reader (docs/faults.md#text-that-is-not-unicode): a CSV cell
over the csv module's default limit is read up to the reader's own limit of a line, a value
nested thousands deep is refused in one line naming file and line, a lone surrogate becomes
U+FFFD, and a Python list in CSV holding what JSON cannot is named."""

from __future__ import annotations

import csv
import json

import pytest

from freshrag.core.types import Question
from freshrag.systems.external import answers_file
from freshrag.systems.external.answers_file import AnswersFileError, load_answers

QUESTIONS = [Question(id=f"w{i}", text=f"What was weir {i} rebuilt of?", gold_title=f"Weir {i}")
             for i in range(1, 3)]
FFFD = "\ufffd"
CSV_DEFAULT = 131_072  # the csv module's own field limit


@pytest.fixture(autouse=True)
def csv_limit():
    """The csv module's limit is the process's: each test leaves it as it found it."""
    before = csv.field_size_limit()
    yield
    csv.field_size_limit(before)


def write_csv(path, columns, rows):
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("column, cell, check", [
    pytest.param("answer", "Oak. " * 40_000, lambda a: len(a.text) == 200_000, id="a-long-answer"),
    pytest.param("contexts", json.dumps(["The weir is oak. " * 500] * 30),
                 lambda a: len(a.details["context"]) > CSV_DEFAULT, id="many-long-contexts"),
    pytest.param("answer", "Oak.\n" * 30_000, lambda a: a.text.count("\n") == 30_000,
                 id="a-cell-of-many-lines"),
])
def test_a_csv_cell_over_the_csv_modules_default_limit_is_read(tmp_path, column, cell, check):
    csv.field_size_limit(CSV_DEFAULT)  # as a fresh process has it
    columns = ["id", "answer"] if column == "answer" else ["id", "answer", column]
    row = ["w1", cell] if column == "answer" else ["w1", "Oak.", cell]
    path = write_csv(tmp_path / "a.csv", columns, [row, ["w2", "Stone."]])
    assert len(cell) > CSV_DEFAULT
    answers = load_answers(path, QUESTIONS, "mine")
    assert check(answers.by_question["w1"]) and answers.by_question["w2"].text == "Stone."


def test_a_cell_over_the_readers_own_limit_is_named_by_file_and_line(tmp_path, monkeypatch):
    monkeypatch.setattr(answers_file, "MAX_LINE_BYTES", 5_000)
    path = write_csv(tmp_path / "a.csv", ["id", "answer"],
                     [["w1", "Oak."], ["w2", "Stone.\n" * 1_000]])
    with pytest.raises(AnswersFileError, match=rf"^{tmp_path}/a.csv:\d+: field larger than "):
        load_answers(path, QUESTIONS, "mine")


def deep(levels, inner='"The weir."'):
    return "[" * levels + inner + "]" * levels


@pytest.mark.parametrize("line, said", [
    pytest.param('{"id": "w2", "answer": "Oak.", "contexts": ' + deep(5_000) + "}",
                 "nested too deeply", id="contexts-thousands-deep"),
    pytest.param('{"id": "w2", "answer": "Oak.", "contexts": ' + deep(150) + "}",
                 "nested too deeply (over 100 levels)", id="contexts-under-jsons-limit"),
    pytest.param('{"id": "w2", "answer": "Oak.", "rubrics": {"a": ' + deep(50_000, "1") + "}}",
                 "nested too deeply", id="any-value-deep"),
])
def test_jsonl_nested_too_deeply_is_refused_naming_file_and_line(tmp_path, line, said):
    path = write_lines(tmp_path / "a.jsonl", ['{"id": "w1", "answer": "Stone."}', line])
    with pytest.raises(AnswersFileError) as caught:
        load_answers(path, QUESTIONS, "mine")
    message = str(caught.value)
    assert message.startswith(f"{path}:2: ") and said in message and "\n" not in message


@pytest.mark.parametrize("cell, said", [
    pytest.param(deep(5_000), "nested too deeply", id="json-thousands-deep"),
    pytest.param(deep(150, "'single quoted'"), "nested too deeply (over 100 levels)",
                 id="python-list-over-the-bound"),
    pytest.param("[" * 5_000 + "'x'" + "]" * 5_000, "neither a JSON nor a Python list",
                 id="python-list-past-pythons-parser"),
])
def test_a_csv_cell_nested_too_deeply_is_refused_naming_file_and_line(tmp_path, cell, said):
    path = write_csv(tmp_path / "a.csv", ["id", "answer", "contexts"],
                     [["w1", "Stone.", ""], ["w2", "Oak.", cell]])
    with pytest.raises(AnswersFileError) as caught:
        load_answers(path, QUESTIONS, "mine")
    assert str(caught.value).startswith(f"{path}:3: contexts ") and said in str(caught.value)


def test_lone_surrogates_in_an_answers_file_become_the_replacement_character(tmp_path):
    jsonl = write_lines(tmp_path / "a.jsonl", [
        '{"id": "w1", "answer": "Oak\\ud800", "contexts": ["weir \\udc00"]}',
        '{"id": "w2", "answer": "Stone", "reference": "\\udbff stone"}'])
    answers = load_answers(jsonl, QUESTIONS, "mine").by_question
    assert answers["w1"].text == f"Oak{FFFD}" and answers["w1"].details["context"] == f"weir {FFFD}"
    assert answers["w2"].details["reference"] == f"{FFFD} stone"
    table = write_csv(tmp_path / "a.csv", ["id", "answer", "contexts"], [
        ["w1", "Oak", '["json \\ud800"]'], ["w2", "Stone", "['python \\udfff']"]])
    answers = load_answers(table, QUESTIONS, "mine").by_question
    assert answers["w1"].details["context"] == f"json {FFFD}"
    assert answers["w2"].details["context"] == f"python {FFFD}"


@pytest.mark.parametrize("cell, said", [
    pytest.param("[{'a', 'b'}]", "rubrics[0] is a set, which JSON cannot hold", id="a-set"),
    pytest.param("[b'raw']", "rubrics[0] is a bytes", id="bytes"),
    pytest.param("[{1: 'one'}]", "rubrics[0] has the key 1, not text", id="a-number-key"),
])
def test_a_python_list_holding_what_json_cannot_is_named(tmp_path, cell, said):
    path = write_csv(tmp_path / "a.csv", ["id", "answer", "rubrics"], [["w1", "Oak.", cell]])
    with pytest.raises(AnswersFileError, match=rf"a.csv:2: {said}".replace("[", r"\[")):
        load_answers(path, QUESTIONS, "mine")

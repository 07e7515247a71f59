"""Answers made elsewhere as a system (systems/external/answers_file.py): JSON Lines and CSV in freshrag's
and Ragas' columns, replayed per question; every bad row named by file and line."""

from __future__ import annotations

import csv
import json
import unicodedata

import pytest

from freshrag.core.types import Question, SystemContext, Usage
from freshrag.llm.client import EndpointError
from freshrag.systems import SYSTEMS
from freshrag.systems.external.answers_file import AnswersFileError, factory, load_answers
from freshrag.systems.external.plugins import PluginError, resolve

QUESTIONS = [Question(id=f"q{i}", text=f"How many bridges does Town {i} have?",
                      gold_title=f"Town {i}") for i in range(1, 4)]


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def write_csv(path, columns, rows):
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def replay(answers, question):
    return factory(answers)(SystemContext(llm=None, articles={})).answer(question)


def test_jsonl_rows_replay_everything_they_report(tmp_path):
    path = write_jsonl(tmp_path / "mine.jsonl", [
        {"question_id": "q2", "answer": "Five.", "contexts": [
            {"title": "Town 2", "text": "Town 2 has 5 bridges.", "score": 0.8}],
         "input_tokens": 420, "output_tokens": 9, "retrievals": 1, "decision": "retrieve",
         "latency_s": 1.25},
        {"id": "q1", "answer": "Four."}])
    answers = load_answers(path, QUESTIONS, "mine")
    assert sorted(answers.by_question) == ["q1", "q2"]
    full = replay(answers, QUESTIONS[1])
    assert (full.text, full.retrievals, full.latency_s) == ("Five.", 1, 1.25)
    assert full.usage_by_role() == {"answer": Usage(420, 9)}
    assert full.details["decision"] == "retrieve" and full.details["unknown"] == []
    assert full.details["context"] == "Town 2 has 5 bridges."
    bare = replay(answers, QUESTIONS[0])
    assert bare.retrievals is None and bare.calls == [] and bare.latency_s is None
    assert bare.details["unknown"] == ["input_tokens", "output_tokens", "retrievals", "decision"]


def test_ragas_columns_in_csv_match_questions_by_text(tmp_path):
    path = write_csv(tmp_path / "ragas.csv",
                     ["user_input", "response", "retrieved_contexts", "reference"],
                     [[QUESTIONS[2].text, "Six.", "['Town 3 has 6 bridges.', 'Old bridges.']",
                       "6"],
                      [QUESTIONS[0].text + "  ", "Four.", '["Town 1 has 4."]', ""]])
    answers = load_answers(path, QUESTIONS, "ragas")
    third = replay(answers, QUESTIONS[2])
    assert (third.text, third.retrievals) == ("Six.", 1)
    assert third.details["context"] == "Town 3 has 6 bridges.\n\nOld bridges."
    assert "retrieved" not in third.details  # bare texts name no article: not a miss of its gold
    assert third.details["reference"] == "6"
    assert third.details["unknown"] == ["input_tokens", "output_tokens", "decision"]
    assert replay(answers, QUESTIONS[0]).text == "Four."


def test_rows_match_by_id_else_by_text_whatever_its_spacing_and_case(tmp_path):
    path = write_jsonl(tmp_path / "other-tool.jsonl", [
        {"id": "q1", "question": "not the dataset's wording", "answer": "by id"},
        {"id": "7", "question": "  how many BRIDGES does\ttown 2 have? ", "answer": "by text"},
        {"question": QUESTIONS[2].text.upper(), "answer": "by text too"}])
    answers = load_answers(path, QUESTIONS, "other")
    assert {q.id: replay(answers, q).text for q in QUESTIONS} == {
        "q1": "by id", "q2": "by text", "q3": "by text too"}
    assert answers.rules == {"id": 1, "question text": 2} and answers.unanswered == []
    assert answers.summary() == (f"{path}: 3 rows matched to the dataset's questions "
                                 f"(1 by id, 2 by question text)")


def test_a_text_two_questions_share_needs_an_id(tmp_path):
    twins = QUESTIONS + [Question(id="q4", text=QUESTIONS[0].text.lower(), gold_title="Town 4")]
    path = write_jsonl(tmp_path / "a.jsonl", [{"question": QUESTIONS[0].text, "answer": "x"}])
    with pytest.raises(AnswersFileError, match=r"a.jsonl:1: matches no question of the dataset: "
                       r"its question .* is asked by several of the dataset's questions"):
        load_answers(path, twins, "a")
    assert sorted(load_answers(write_jsonl(tmp_path / "b.jsonl", [{"id": "q4", "answer": "x"}]),
                               twins, "b").by_question) == ["q4"]


def test_a_question_the_file_does_not_answer_fails_its_pair_only(tmp_path):
    answers = load_answers(write_jsonl(tmp_path / "a.jsonl", [{"id": "q1", "answer": "x"}]),
                           QUESTIONS, "a")
    assert answers.unanswered == ["q2", "q3"]
    assert answers.summary().endswith("(1 by id); 2 questions of the dataset without a row: q2, q3")
    with pytest.raises(EndpointError, match=r"a.jsonl has no answer for question q3"):
        replay(answers, QUESTIONS[2])


@pytest.mark.parametrize("rows, expected", [
    pytest.param([{"id": "q1", "answer": "x", "score": "high"}],
                 r"a.jsonl:1: unknown column 'score' holding 'high'; known: .* a column of "
                 r"numbers \(a Ragas score\) is kept", id="unknown-column"),
    pytest.param([{"id": "q1", "answer": "x", "retreivals": 3}],
                 r"a.jsonl:1: unknown column 'retreivals': did you mean 'retrievals'\?",
                 id="misspelt-column-of-numbers"),
    pytest.param([{"id": "q1", "answer": "x"}, {"id": "q9", "answer": "y"}],
                 r"a.jsonl:2: matches no question of the dataset: its id 'q9' is not one of the "
                 r"dataset's and it gives no question text", id="unknown-id"),
    pytest.param([{"question": "What?", "answer": "y"}],
                 r"a.jsonl:1: matches no question of the dataset: its question 'What\?' is not "
                 r"one of the dataset's", id="unknown-text"),
    pytest.param([{"id": "q9", "question": "What?", "answer": "y"}],
                 r"a.jsonl:1: matches no question of the dataset: its id 'q9' is not one of the "
                 r"dataset's and its question 'What\?' is not", id="unknown-id-and-text"),
    pytest.param([{"id": "q1", "answer": "x"}, {"question": QUESTIONS[0].text, "answer": "y"}],
                 r"a.jsonl:2: answers question 'q1' again \(first at line 1\)",
                 id="twice-by-id-then-text"),
    pytest.param([{"answer": "y"}], r"a.jsonl:1: names no question", id="no-question"),
    pytest.param([{"id": "q1", "answer": "x"}, "", {"id": "q1", "answer": "y"}],
                 r"a.jsonl:3: answers question 'q1' again \(first at line 1\)", id="twice"),
    pytest.param([{"id": "q1", "answer": 4}], r"a.jsonl:1: no answer text at answer or response",
                 id="answer-not-text"),
    pytest.param([{"id": "q1", "answer": "x", "input_tokens": -3}],
                 r"a.jsonl:1: input_tokens must be a whole number", id="negative-tokens"),
    pytest.param(['{"id": "q1", "answer": "x", "retrievals": ' + "9" * 5000 + "}"],
                 r"a.jsonl:1: not a JSON object", id="huge-int"),
    pytest.param(["[1, 2]"], r"a.jsonl:1: not a JSON object", id="not-object"),
    pytest.param([{"id": "q1", "answer": "x", "steps": [{"kind": "guess"}]}],
                 r"a.jsonl:1: steps\[0\].kind 'guess' is not one of", id="unknown-step-kind"),
    pytest.param([], r"a.jsonl: holds no answers", id="empty"),
])
def test_bad_jsonl_rows_are_named_by_file_and_line(tmp_path, rows, expected):
    with pytest.raises(AnswersFileError, match=expected):
        load_answers(write_jsonl(tmp_path / "a.jsonl", rows), QUESTIONS, "a")


@pytest.mark.parametrize("columns, row, expected", [
    pytest.param(["id", "answer", "input_tokens"], ["q1", "x", "many"],
                 r"a.csv:2: input_tokens 'many' is not a number", id="not-a-number"),
    pytest.param(["id", "answer"], ["q1", "x", "extra"],
                 r"a.csv:2: more cells than the header", id="extra-cells"),
    pytest.param(["id", "answer", "contexts"], ["q1", "x", "not a list ["],
                 r"a.csv:2: contexts is neither a JSON nor a Python list", id="bad-list"),
    pytest.param(["id", "answer", "steps"], ["q1", "x", '[{"kind": "answer", "text": 3}]'],
                 r"a.csv:2: steps\[0\].text must be text or null", id="bad-step"),
])
def test_bad_csv_rows_are_named_by_file_and_line(tmp_path, columns, row, expected):
    with pytest.raises(AnswersFileError, match=expected):
        load_answers(write_csv(tmp_path / "a.csv", columns, [row]), QUESTIONS, "a")


def test_an_answers_file_resolves_as_a_system_with_its_hash(tmp_path):
    path = write_jsonl(tmp_path / "theirs.jsonl", [{"id": "q1", "answer": "x"}])
    source = resolve(f"{path}", SYSTEMS, questions=QUESTIONS)
    assert (source.name, source.origin) == ("theirs", "answers file")
    renamed = resolve(f"other={path}", SYSTEMS, questions=QUESTIONS)
    assert renamed.name == "other" and renamed.sha256 == source.sha256
    with pytest.raises(PluginError, match=r"matched to a run's dataset"):
        resolve(str(path), SYSTEMS)
    with pytest.raises(PluginError, match=r"absent.csv: answers file not found"):
        resolve(str(tmp_path / "absent.csv"), SYSTEMS, questions=QUESTIONS)


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_a_question_is_matched_whatever_its_unicode_form(tmp_path, form):
    cafe = Question(id="q9", text="When did Café Mörtel open?", gold_title="Café Mörtel")
    path = write_jsonl(tmp_path / "a.jsonl", [
        {"question": unicodedata.normalize(form, cafe.text), "answer": "In 2024.", "contexts": [
            {"title": unicodedata.normalize(form, "Café Mörtel"), "text": "It opened in 2024."}]}])
    answers = load_answers(path, [*QUESTIONS, cafe], "a")
    assert answers.rules == {"question text": 1}
    assert replay(answers, cafe).text == "In 2024."

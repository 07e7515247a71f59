"""Columns an answers file may hold beside freshrag's and Ragas' named ones
(systems/external/answers_file.py): pandas' index column, skipped, and numbers under any other
name (a Ragas result's metrics), kept as the row's `details.ragas_scores`."""

from __future__ import annotations

import json

import pytest

from freshrag.core.types import Question, SystemContext
from freshrag.systems.external.answers_file import AnswersFileError, factory, load_answers

QUESTIONS = [Question(id=f"q{i}", text=f"How many bridges does Town {i} have?",
                      gold_title=f"Town {i}") for i in range(1, 3)]


def details(path, question=QUESTIONS[0]):
    answers = load_answers(path, QUESTIONS, "theirs")
    return factory(answers)(SystemContext(llm=None, articles={})).answer(question).details


@pytest.mark.parametrize("text, scores", [
    pytest.param(",question_id,answer\n0,q1,Four.\n1,q2,Five.\n", None, id="pandas-index"),
    pytest.param("Unnamed: 0,question_id,answer\n0,q1,Four.\n", None, id="pandas-index-read-back"),
    pytest.param("question_id,answer,faithfulness,answer_relevancy\nq1,Four.,0.83,1\n",
                 {"faithfulness": 0.83, "answer_relevancy": 1.0}, id="ragas-scores"),
    pytest.param("question_id,answer,faithfulness,context_recall\nq1,Four.,,0.5\n",
                 {"context_recall": 0.5}, id="empty-cell-left-out"),
    pytest.param("question_id,answer,faithfulness\nq1,Four.,nan\n", None, id="nan-left-out"),
    pytest.param(",user_input,response,reference,faithfulness,factual_correctness(mode=f1)\n"
                 "0,How many bridges does Town 1 have?,Four.,4,0.9,0.25\n",
                 {"faithfulness": 0.9, "factual_correctness(mode=f1)": 0.25},
                 id="ragas-result-to-pandas-to-csv"),
])
def test_csv_columns_beside_the_known_ones(tmp_path, text, scores):
    path = tmp_path / "answers.csv"
    path.write_text(text, encoding="utf-8")
    found = details(path)
    assert found.get("ragas_scores") == scores
    assert "" not in found and "Unnamed: 0" not in found


@pytest.mark.parametrize("row, scores", [
    pytest.param({"question_id": "q1", "answer": "Four.", "faithfulness": 0.7,
                  "context_precision": 1}, {"faithfulness": 0.7, "context_precision": 1.0},
                 id="numbers"),
    pytest.param({"question_id": "q1", "answer": "Four.", "faithfulness": None}, None,
                 id="null-left-out"),
    pytest.param({"Unnamed: 0": 3, "question_id": "q1", "answer": "Four."}, None,
                 id="index-read-back-by-pandas"),
])
def test_jsonl_columns_beside_the_known_ones(tmp_path, row, scores):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert details(path).get("ragas_scores") == scores


@pytest.mark.parametrize("text, expected", [
    pytest.param("question_id,answer,notes\nq1,Four.,checked\n",
                 r"answers.csv:2: unknown column 'notes' holding 'checked'", id="text"),
    pytest.param("question_id,answer,faithfulness\nq1,Four.,0.5\nq2,Five.,high\n",
                 r"answers.csv:3: unknown column 'faithfulness' holding 'high'",
                 id="a-score-that-is-no-number"),
    pytest.param("question_id,anwser,answer\nq1,x,Four.\n",
                 r"answers.csv:2: unknown column 'anwser': did you mean 'answer'\?",
                 id="misspelt-text"),
    pytest.param("question_id,answer,\nq1,Four.,0.5\n",
                 r"answers.csv:2: a column without a name, not first",
                 id="unnamed-column-not-first"),
    pytest.param("question_id,answer,input_token\nq1,Four.,12\n",
                 r"answers.csv:2: unknown column 'input_token': did you mean 'input_tokens'\?",
                 id="misspelt-count"),
    pytest.param(",question_id,answer,\n0,q1,Four.,\n",
                 r"answers.csv:1: the header names the column '' twice", id="two-unnamed-columns"),
])
def test_other_columns_are_refused_naming_file_and_line(tmp_path, text, expected):
    path = tmp_path / "answers.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AnswersFileError, match=expected):
        load_answers(path, QUESTIONS, "theirs")

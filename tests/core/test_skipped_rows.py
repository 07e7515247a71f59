"""A row that today's readers refuse (written by an older freshrag, or by hand) is skipped with
one warning naming file, line and field, never the whole samples.jsonl refused: every other row is
kept and the resume's plan asks the skipped pair again (docs/run-format.md#samplesjsonl)."""

import json
from pathlib import Path

import pytest

from freshrag.core.dataset import Dataset
from freshrag.core.jsonl import ResultsError
from freshrag.core.samples import read_samples, read_summaries, sample_row
from freshrag.core.types import Article, Grade, Question, SystemAnswer
from freshrag.run.config import RunConfig
from freshrag.run.plan import make_plan

QUESTIONS = [Question(f"w{i}", f"What was weir {i} rebuilt of?", f"Weir {i}") for i in range(4)]
DATASET = Dataset("D", QUESTIONS, {f"Weir {i}": Article(f"Weir {i}", "Oak.") for i in range(4)},
                  {"questions": Path("q.jsonl")})


def good(question, system="naive"):
    return json.loads(json.dumps(sample_row("D", question, system, SystemAnswer("Oak."),
                                            Grade(5, 5), [], 0.5)))


def with_field(row, field, value):
    return {**row, field: value}


BAD = [
    pytest.param("retrievals", "3", "field 'retrievals' must be a whole number or null",
                 id="retrievals-as-text"),
    pytest.param("details", {"decision": 1}, "details.decision must be text or null",
                 id="decision-a-number"),
    pytest.param("grade", {"truthfulness": 1e308, "relevance": 3, "unscored_reason": None,
                           "raw": []}, "grade 'truthfulness' must be a number from 1 to 5",
                 id="grade-off-the-scale"),
    pytest.param("steps", [{"kind": "think"}], "steps[0] must be an object whose kind",
                 id="a-step-of-no-kind"),
    pytest.param("status", "done", "field 'status'", id="status-unknown"),
]


def write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("field, value, said", BAD)
def test_a_bad_row_is_skipped_with_one_warning_and_the_others_kept(tmp_path, capsys, field,
                                                                  value, said):
    rows = [good(q) for q in QUESTIONS]
    rows[2] = with_field(rows[2], field, value)
    path = write(tmp_path / "samples.jsonl", rows)
    for kept in (lambda: [row["question_id"] for row in read_samples(path)],
                 lambda: [made.question_id for made in read_summaries(path)]):
        assert kept() == ["w0", "w1", "w3"]
        warnings = capsys.readouterr().err.splitlines()
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith(f"freshrag: warning: {path}:3: skipped") and said in warnings[0]


def test_the_resumes_plan_asks_only_the_skipped_pair_again(tmp_path):
    rows = [good(q, system) for q in QUESTIONS for system in ("naive", "mine")]
    rows[5] = with_field(rows[5], "retrievals", -2)  # w2/mine
    path = write(tmp_path / "samples.jsonl", rows)
    plan = make_plan(DATASET, RunConfig(out=tmp_path, systems=("naive", "mine")),
                     read_samples(path), None)
    assert [(q.id, name) for q, name, _ in plan.pairs] == [("w2", "mine")]


def test_a_readable_row_of_the_pair_written_before_the_bad_one_stands(tmp_path, capsys):
    rows = [good(QUESTIONS[0]), with_field(good(QUESTIONS[0]), "usage", {"answer": 5})]
    [row] = read_samples(write(tmp_path / "samples.jsonl", rows))
    assert row["usage"] == {} and "samples.jsonl:2: skipped" in capsys.readouterr().err


@pytest.mark.parametrize("line, said", [
    pytest.param("[1, 2]", "expected a JSON object", id="not-an-object"),
    pytest.param("{not json", "not valid JSON", id="not-json"),
])
def test_a_line_that_is_no_row_at_all_is_still_refused(tmp_path, line, said):
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(good(QUESTIONS[0])) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ResultsError, match=rf"{path}:2: {said}"):
        read_samples(path)

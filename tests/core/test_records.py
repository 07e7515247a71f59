"""The records typed once (harness/core/records.py): the readers' shape check of a samples row is
derived from the record, what the writers write is what the records declare, and a judge pass's
score becomes a grade in one place for the report and the agreement alike."""

import json
from typing import get_type_hints

from freshrag.core.records import GRADE_FIELDS, SampleFields, SampleRow, ScoreRow
from freshrag.core.row_check import REQUIRED, SAMPLE_FIELDS, sample_problem
from freshrag.core.samples import judge_scores, sample_row
from freshrag.core.types import Grade, LLMResponse, Question, SystemAnswer, Usage
from freshrag.reporting.agreement import with_repeat
from freshrag.scoring.base import ScoreResult
from freshrag.scoring.store import SCORES, answer_sha256, score_grade, score_row, with_judge_pass
from tests.support.rows import summary

NONE = type(None)
# The JSON types the readers accepted before the check was derived from the record: a change
# here changes what a reader refuses (tests/fuzz/test_run_dirs.py)
ACCEPTED = {
    "dataset": (str, NONE), "question_id": (str,), "question": (str,), "gold_title": (str, NONE),
    "gold_titles": (list, NONE), "hops": (int, NONE), "multihop": (str, NONE), "system": (str,),
    "epoch": (int, NONE), "status": (str,), "answer": (str, NONE), "retrievals": (int, NONE),
    "usage": (dict,), "grade": (dict, NONE), "calls": (list,), "details": (dict, NONE),
    "steps": (list,), "stopped": (str, NONE), "latency_s": (int, float, NONE),
    "answer_latency_s": (int, float, NONE),
    "error": (str, NONE), "error_detail": (str, NONE), "finished_at": (str, NONE),
}


def _call(role: str) -> LLMResponse:
    return LLMResponse(role, "m", "text", None, None, Usage(3, 2), 0.1, False, [])


def _row(grade: Grade | None = Grade(4, 5, reason="It names the date.")) -> SampleRow:
    question = Question("q1", "When?", "Title", label="fact_single")
    answer = SystemAnswer("Then.", calls=[_call("answer")])
    return sample_row("A_f", question, "naive", answer, grade, [_call("answer"), _call("judge")],
                      1.5)


def test_the_shape_check_is_the_records_in_its_order():
    assert list(SAMPLE_FIELDS) == list(get_type_hints(SampleFields))
    assert SAMPLE_FIELDS == ACCEPTED and list(SAMPLE_FIELDS) == list(ACCEPTED)
    assert REQUIRED == ("question_id", "gold_title", "system", "status", "retrievals", "usage",
                        "grade")


def test_the_writers_write_only_what_the_records_declare():
    row = _row()
    assert set(row) <= set(get_type_hints(SampleRow)) and sample_problem(json.loads(
        json.dumps(row))) is None
    scored = score_row(row, "faithfulness", 0, ScoreResult("scored", {"faithfulness": 1.0}),
                       [_call("scorer")], 0.5)
    assert set(scored) <= set(get_type_hints(ScoreRow))


def test_a_row_is_read_by_its_judge_scores():
    assert judge_scores(summary(_row())) == {"truthfulness": 4, "relevance": 5}
    assert judge_scores(summary(_row(Grade(None, None, "no tool call")))) is None
    assert judge_scores(summary({**_row(), "status": "failed", "error": "timeout"})) is None
    assert GRADE_FIELDS == ("truthfulness", "relevance")


def _judge_score(status: str = "scored", repeat: int = 0) -> dict:
    return {"dataset": "A_f", "question_id": "q1", "system": "naive", "scorer": "judge",
            "repeat": repeat, "status": status,
            "metrics": {"truthfulness": 2, "relevance": 3} if status == "scored" else {},
            "reason": None if status == "scored" else "no tool call", "raw": ['{"x": 1}'],
            "usage": {"judge": {"input": 7, "output": 1, "estimated": False}},
            "details": {"reason": "It misses the year.", "context_cut": None}}


def test_one_grade_from_a_judge_pass_for_the_report_and_the_agreement(tmp_path):
    score = _judge_score()
    ungraded = _row(Grade(None, None, "not scored in the released file"))
    seen = with_judge_pass({**ungraded, "scores": {"judge": {**score, "models": {}}}})
    assert seen["grade"] == {**score_grade(score), "graded_by": "freshrag score"}
    assert seen["grade"]["truthfulness"] == 2 and seen["grade"]["reason"] == "It misses the year."
    (tmp_path / SCORES).write_text(json.dumps({**score, "answer_sha256": answer_sha256(ungraded["answer"])}) + "\n")
    [repeated] = with_repeat([ungraded], tmp_path, 0)
    assert repeated["grade"] == score_grade(score)


def test_an_unscored_judge_pass_is_a_grade_with_its_reason_and_no_scores():
    grade = score_grade(_judge_score("unscored"))
    assert grade["unscored_reason"] == "no tool call"
    assert (grade["truthfulness"], grade["relevance"]) == (None, None)


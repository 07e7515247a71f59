"""A judge pass is merged into an answer the run left ungraded by one implementation in both
forms (harness/scoring/store.py): the whole row the viewer and the exports show
(`with_judge_pass`) and the summary every table reads (`judged`) take the same grade, models,
tokens and scores."""

from __future__ import annotations

from typing import Any

import pytest

from freshrag.scoring.store import answer_sha256, judged, with_judge_pass
from tests.support.rows import summary
from tests.support.runs import sample


def judge_pass(truth: int = 2, status: str = "scored") -> dict[str, Any]:
    """A judge pass's score (repeat 0) as reports attach it: the judge's tokens, and a decision
    role's its run never had, one of them estimated."""
    return {"status": status, "metrics": {"truthfulness": truth, "relevance": 3},
            "reason": None, "raw": ['{"truthfulness": 2}'], "answer_sha256": answer_sha256(
                "an answer"), "details": {"reason": "It misses the year."},
            "models": {"judge": "judge-2"},
            "usage": {"judge": {"input": 70, "output": 7, "estimated": True},
                      "decision": {"input": 5, "output": 1}}}


def imported(truth: int | None, scores: dict[str, Any]) -> dict[str, Any]:
    """An imported row (its models its own, no calls) with the scores reports attach;
    truth=None: the run left it ungraded."""
    return {**sample("q1", "naive", truth=truth), "calls": [], "models": {"answer": "model-a"},
            "scores": scores}


def test_both_forms_take_one_grade_models_tokens_and_scores():
    faith = {**judge_pass(), "metrics": {"faithfulness": 1.0}}
    row = imported(None, {"judge": judge_pass(), "faithfulness": faith})
    whole = with_judge_pass(row)
    assert whole["usage"] == {
        "answer": {"input": 100, "output": 10, "estimated": False},
        "judge": {"input": 970, "output": 97, "estimated": True},  # the run's 900/90 and the pass's
        "decision": {"input": 5, "output": 1, "estimated": False}}
    assert whole["models"] == {"answer": "model-a", "judge": "judge-2"}
    assert whole["scores"] == {"faithfulness": faith}
    assert (whole["grade"]["truthfulness"], whole["grade"]["graded_by"]) == (2, "freshrag score")
    assert whole["grade"]["raw"] == ['{"truthfulness": 2}']  # the whole row keeps the replies
    assert judged(summary(row)) == summary(whole)  # the summary's merge is the same


@pytest.mark.parametrize("scores, truth", [
    pytest.param({"judge": judge_pass(status="unscored")}, None, id="pass-unscored"),
    pytest.param({"judge": judge_pass(truth=7)}, None, id="pass-off-the-scale"),
    pytest.param({}, None, id="no-pass"),
    pytest.param({"judge": judge_pass()}, 4, id="graded-by-the-run"),
])
def test_neither_form_changes_an_answer_the_pass_does_not_grade(scores, truth):
    row = imported(truth, scores)
    assert with_judge_pass(row) is row
    assert judged(summary(row)) == summary(row)

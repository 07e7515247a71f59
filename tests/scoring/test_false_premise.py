"""The staleness verdict of an answer to a false-premise question (`premise: "false"`, built by
`--style changed --false-premise`): an answer that corrects the premise (the value now, or the
value then denied) is current, one that accepts it is stale. Matching decides only the value
now stated alone; the value then alone, neither value, or both go to the judge (scripted here),
whose prompt is told of the premise; a question that presumes nothing keeps the plain rule."""

from __future__ import annotations

import json

import pytest

from freshrag.core.types import Question
from freshrag.scoring.base import ScoreInput
from freshrag.scoring.scorepass import score_input
from freshrag.scoring.staleness import FALSE_PREMISE, Staleness
from tests.support.fakes import ScriptedLLM, ToolReply

PREMISED = Question("q1-false-premise", "Why has the population total of Springfield stayed at "
                    "4,812?", "Springfield", reference="5,020", value_then="4,812",
                    change="slow", premise="false")
PLAIN = Question("q1", "What is the current population total of Springfield?", "Springfield",
                 reference="5,020", value_then="4,812", change="slow", premise="none")
STATUS = Question("q2-false-premise", "Why is the status of Old Mill still an abandoned ruin "
                  "closed to visitors since the fire?", "Old Mill",
                  reference="converted into a museum of local history and crafts",
                  value_then="an abandoned ruin closed to visitors since the fire",
                  premise="false")


def judged(verdict: str) -> ToolReply:
    return ToolReply("classify_staleness", json.dumps({"verdict": verdict, "reason": "so"}))


def scored(question: Question, answer: str, script: list) -> tuple:
    llm = ScriptedLLM(script)
    result = Staleness().score(llm, ScoreInput(question, answer, None))
    assert not llm.script, "every scripted reply was asked for"
    return result, llm


@pytest.mark.parametrize("answer, script, verdict, source", [
    pytest.param("It has not: Springfield has 5,020 inhabitants now.", [], "current", "match",
                 id="corrects-with-the-value-now"),
    pytest.param("It is no longer 4,812; the question's premise is wrong.", [judged("current")],
                 "current", "judge", id="denies-the-value-then"),
    pytest.param("That premise is false: it changed.", [judged("current")], "current", "judge",
                 id="says-the-premise-is-wrong"),
    pytest.param("It stayed at 4,812 because no census was held.", [judged("stale")], "stale",
                 "judge", id="accepts-restating-the-value-then"),
    pytest.param("Because few people moved there or left.", [judged("stale")], "stale", "judge",
                 id="accepts-without-a-value"),
    pytest.param("It grew from 4,812 to 5,020, so it did not stay.", [judged("current")],
                 "current", "judge", id="both-values"),
    pytest.param("I don't know.", [], "abstained", "pattern", id="abstains"),
])
def test_an_answer_to_a_false_premise_is_current_when_it_corrects_it(answer, script, verdict,
                                                                      source):
    result, llm = scored(PREMISED, answer, script)
    assert result.status == "scored"
    assert (result.details["verdict"], result.details["source"]) == (verdict, source)
    assert result.metrics == {name: float(name == verdict) for name in Staleness.metrics}
    if script:
        [request] = llm.requests
        assert FALSE_PREMISE in request["messages"][0]["content"]
        shown = request["messages"][-1]["content"]
        assert PREMISED.text in shown and "4,812" in shown and "5,020" in shown


def test_long_values_under_a_false_premise_go_to_the_judge_told_of_it():
    result, llm = scored(STATUS, "It was never rebuilt after the fire.", [judged("stale")])
    assert result.details["verdict"] == "stale"
    assert FALSE_PREMISE in llm.requests[0]["messages"][0]["content"]


def test_a_question_that_presumes_nothing_keeps_the_plain_rule():
    result, _ = scored(PLAIN, "It stayed at 4,812 because no census was held.", [])
    assert (result.details["verdict"], result.details["source"]) == ("stale", "match")
    result, llm = scored(PLAIN, "It grew from 4,812 to 5,020.", [judged("current")])
    assert FALSE_PREMISE not in llm.requests[0]["messages"][0]["content"]


def test_a_row_carries_its_premise_to_the_scorer():
    row = {"question_id": "q1-false-premise", "question": PREMISED.text,
           "gold_title": "Springfield", "reference": "5,020", "value_then": "4,812",
           "change": "slow", "premise": "false", "answer": "It stayed at 4,812."}
    assert score_input(row, {}, 1).question == PREMISED  # type: ignore[arg-type]

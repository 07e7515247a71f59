"""The `confidence` and `self-check` deciders against the scripted fake model and a fake index:
the probability read from logprobs (or recorded as unavailable), the self-rating parsed strictly,
what each records, and which calls each decision leads to."""

import math

import pytest

from freshrag.core.types import LLMResponse, Usage
from freshrag.systems.confidence import THRESHOLD, retrieve_probability
from freshrag.systems.prompts import NEED_PROMPT, NEED_TOP_LOGPROBS, SELF_CHECK_QUESTION
from freshrag.systems.self_check import parse_rating
from tests.support.fakes import LogprobReply, ToolReply
from tests.support.systems import QUESTION, extracts_in, run_system


def first_token(token, top):
    """logprobs of a reply whose first token is `token`, `top` being {token: probability}."""
    return [{"token": token, "logprob": math.log(top.get(token, 0.01)),
             "top": [{"token": t, "logprob": math.log(p)} for t, p in top.items()]}]


def response(logprobs=None, tool=None):
    name, arguments = tool or (None, None)
    return LLMResponse("decision", "m", "yes", name, arguments, Usage(), 0.0, False, [],
                       logprobs=logprobs)


@pytest.mark.parametrize("logprobs, expected, reason", [
    pytest.param(first_token("Yes", {"Yes": 0.6, "No": 0.2}), 0.75, None, id="yes-and-no"),
    pytest.param(first_token("no", {"no": 0.5, " yes": 0.2, "YES": 0.3}), 0.5, None,
                 id="case-and-space-variants-summed"),
    pytest.param(first_token("Yes", {"Yes": 0.9, "Sure": 0.1}), 1.0, None, id="only-yes"),
    pytest.param(first_token("No.", {"No.": 0.7, "Maybe": 0.3}), 0.0, None, id="only-no"),
    pytest.param([{"token": "Yes", "logprob": math.log(0.4), "top": []}], 1.0, None,
                 id="chosen-token-counts-when-list-empty"),
    pytest.param(None, None, "the endpoint returned no logprobs", id="no-logprobs"),
    pytest.param([], None, "the endpoint returned no logprobs", id="empty-logprobs"),
    pytest.param(first_token("Maybe", {"Maybe": 0.8, "Perhaps": 0.2}), None,
                 "neither yes nor no among the first token's 2 alternatives", id="no-yes-no"),
    pytest.param([{"token": "Yes", "logprob": float("-inf"), "top": []}], None,
                 "neither yes nor no among the first token's 1 alternatives", id="minus-infinity"),
])
def test_probability_of_retrieving_from_the_first_token(logprobs, expected, reason):
    probability = retrieve_probability(response(logprobs))
    assert probability.reason == reason
    if expected is None:
        assert probability.value is None
    else:
        assert probability.value == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("top, decision, retrievals", [
    pytest.param({"yes": 0.8, "no": 0.2}, "retrieve", 1, id="above-threshold"),
    pytest.param({"yes": 0.5, "no": 0.5}, "retrieve", 1, id="at-threshold"),
    pytest.param({"yes": 0.2, "no": 0.8}, "no-retrieve", 0, id="below-threshold"),
])
def test_confidence_retrieves_at_or_above_the_threshold(top, decision, retrievals):
    script = [LogprobReply("yes", first_token("yes", top)), "Nine."]
    answer, requests, queries = run_system("confidence", script)
    asked, answered = requests
    assert asked["role"] == "decision" and asked["top_logprobs"] == NEED_TOP_LOGPROBS
    assert asked["messages"][0]["content"] == NEED_PROMPT and asked["tools"] is None
    assert asked["messages"][1]["content"].startswith(f"Question: {QUESTION.text}\n\n")
    assert answer.details["decision"] == decision and answer.retrievals == retrievals
    assert answer.details["p_retrieve"] == pytest.approx(top["yes"])
    assert answer.details["threshold"] == THRESHOLD and answer.details["p_unavailable"] is None
    assert answered["role"] == "answer" and extracts_in(answered) == bool(retrievals)
    assert queries == ([QUESTION.text] if retrievals else []) and answer.text == "Nine."


def test_confidence_without_logprobs_records_them_unavailable_and_does_not_retrieve():
    answer, requests, queries = run_system("confidence", [LogprobReply("yes", None), "Nine."])
    assert answer.details["decision"] == "none" and answer.details["p_retrieve"] is None
    assert answer.details["p_unavailable"] == "the endpoint returned no logprobs"
    assert answer.details["decision_raw"] == "yes"  # kept, but never read as a decision
    assert queries == [] and answer.retrievals == 0 and not extracts_in(requests[1])


def rate(value):
    return ToolReply("rate_confidence", f'{{"confidence": {value}}}')


@pytest.mark.parametrize("reply, rating", [
    pytest.param(rate(1), 1, id="one"), pytest.param(rate(5), 5, id="five"),
    pytest.param(rate(4.0), 4, id="whole-float"),
    pytest.param(rate(0), None, id="below-scale"), pytest.param(rate(6), None, id="above-scale"),
    pytest.param(rate(2.5), None, id="fraction"), pytest.param(rate("true"), None, id="boolean"),
    pytest.param(rate('"3"'), None, id="string"),
    pytest.param(ToolReply("rate_confidence", '{"confidence": 3'), None, id="garbled-json"),
    pytest.param(ToolReply("rate_confidence", '[3]'), None, id="not-an-object"),
    pytest.param(ToolReply("submit_grade", '{"confidence": 3}'), None, id="other-function"),
])
def test_self_check_rating_is_parsed_strictly(reply, rating):
    assert parse_rating(response(tool=(reply.name, reply.arguments))) == rating


@pytest.mark.parametrize("rating, decision, retrieves", [
    pytest.param(1, "retrieve", True, id="unsure"), pytest.param(3, "retrieve", True, id="three"),
    pytest.param(4, "no-retrieve", False, id="four"), pytest.param(5, "no-retrieve", False, id="sure"),
    pytest.param("9", "none", False, id="unusable-keeps-first-answer"),
])
def test_self_check_answers_then_rates_then_retrieves_below_the_threshold(rating, decision,
                                                                          retrieves):
    script = ["Eight.", rate(rating)] + (["Nine."] if retrieves else [])
    answer, requests, queries = run_system("self-check", script)
    assert [r["role"] for r in requests] == ["decision", "decision"] + (["answer"] if retrieves else [])
    rated = requests[1]
    assert rated["tool_choice"] == "rate_confidence"
    assert rated["messages"][-2:] == [{"role": "assistant", "content": "Eight."},
                                      {"role": "user", "content": SELF_CHECK_QUESTION}]
    assert answer.details["decision"] == decision
    assert answer.details["confidence"] == (rating if isinstance(rating, int) else None)
    assert answer.details["first_answer"] == "Eight."
    assert answer.text == ("Nine." if retrieves else "Eight.")
    assert answer.retrievals == int(retrieves) and bool(queries) == retrieves
    if retrieves:
        assert extracts_in(requests[2])

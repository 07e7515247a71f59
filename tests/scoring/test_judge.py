import json

import pytest

from freshrag.core.row_check import sample_problem
from freshrag.core.samples import sample_row
from freshrag.core.types import Article, Question, SystemAnswer, Usage
from freshrag.llm.toolcall import room_for
from freshrag.scoring import judge
from freshrag.scoring.base import ScoreInput
from tests.support.fakes import ScriptedLLM, ToolReply

QUESTION = Question("q1", "Who designed the Velmora bridge?", "Velmora")
ARTICLE = Article("Velmora", "The Velmora bridge was designed by Ada Quill. " * 1000)


def grade_call(arguments: str, name: str = "submit_grade") -> ToolReply:
    return ToolReply(name, arguments)


@pytest.mark.parametrize("reply, reason", [
    pytest.param("plain text", "no submit_grade call", id="no-tool-call"),
    pytest.param(grade_call('{"truthfulness": 4, "relevance": 5}', "other"), "no submit_grade call",
                 id="wrong-function"),
    pytest.param(grade_call('{"truthfulness": 4,'), "invalid JSON", id="truncated-json"),
    pytest.param(grade_call('[4, 5]'), "not an object", id="array"),
    pytest.param(grade_call('{"truthfulness": 4}'), "missing field 'relevance'", id="missing-field"),
    pytest.param(grade_call('{"truthfulness": "4", "relevance": 5}'), "not a number", id="string"),
    pytest.param(grade_call('{"truthfulness": true, "relevance": 5}'), "not a number", id="bool"),
    pytest.param(grade_call('{"truthfulness": null, "relevance": 5}'), "not a number", id="null"),
    pytest.param(grade_call('{"truthfulness": 4.5, "relevance": 5}'), "not a whole number", id="fraction"),
    pytest.param(grade_call('{"truthfulness": NaN, "relevance": 5}'), "not a whole number", id="nan"),
    pytest.param(grade_call('{"truthfulness": 0, "relevance": 5}'), "out of range", id="zero"),
    pytest.param(grade_call('{"truthfulness": 4, "relevance": 20}'), "out of range", id="twenty"),
    pytest.param(grade_call('{"truthfulness": -1, "relevance": 5}'), "out of range", id="negative"),
])
def test_bad_replies_are_retried_once_then_unscored_with_reason(reply, reason):
    llm = ScriptedLLM([reply, reply])
    grade, calls = judge.grade(llm, QUESTION, "Ada Quill.", ARTICLE)
    assert not grade.scored
    assert grade.truthfulness is None and grade.relevance is None
    assert reason in grade.unscored_reason
    assert len(calls) == 2 and [r["attempt"] for r in llm.requests] == [0, 1]
    expected_raw = None if isinstance(reply, str) else reply.arguments
    assert grade.raw == [expected_raw, expected_raw]


@pytest.mark.parametrize("arguments, expected", [
    pytest.param('{"truthfulness": 4, "relevance": 5}', (4, 5), id="ints"),
    pytest.param('{"relevance": 1, "truthfulness": 1}', (1, 1), id="lowest"),
    pytest.param('{"truthfulness": 3.0, "relevance": 2}', (3, 2), id="integral-float"),
    pytest.param('{"truthfulness": 5, "relevance": 5, "note": "x"}', (5, 5), id="extra-field"),
])
def test_valid_grades_are_parsed(arguments, expected):
    grade, calls = judge.grade(ScriptedLLM([grade_call(arguments)]), QUESTION, "Ada Quill.", ARTICLE)
    assert (grade.truthfulness, grade.relevance) == expected and grade.scored
    assert len(calls) == 1


def test_second_attempt_can_rescue_the_grade():
    llm = ScriptedLLM([grade_call("oops"), grade_call('{"truthfulness": 2, "relevance": 3}')])
    grade, calls = judge.grade(llm, QUESTION, "Ada Quill.", ARTICLE)
    assert (grade.truthfulness, grade.relevance) == (2, 3)
    assert grade.raw == ["oops", '{"truthfulness": 2, "relevance": 3}']
    assert sum((c.usage for c in calls), Usage()) == Usage(20, 10)


def test_judge_call_is_forced_deterministic_bounded_and_sees_the_article_cut():
    """One forced submit_grade call at temperature 0, bounded in output tokens, whose prompt holds
    the question, the answer and the gold article cut at the paper's 15,000 characters."""
    llm = ScriptedLLM([grade_call('{"truthfulness": 4, "relevance": 5}')])
    judge.grade(llm, QUESTION, "Ada Quill.", ARTICLE)
    [request] = llm.requests
    assert request["role"] == "judge" and request["temperature"] == 0.0
    assert 0 < request["max_tokens"] <= 512
    [tool] = request["tools"]
    assert request["tool_choice"] == tool["function"]["name"] == "submit_grade"
    schema = tool["function"]["parameters"]
    assert set(schema["required"]) == {"truthfulness", "relevance"}
    for field in ("truthfulness", "relevance"):
        assert schema["properties"][field]["type"] == "integer"
        assert schema["properties"][field]["enum"] == [1, 2, 3, 4, 5]
    assert "does not know" in request["messages"][0]["content"]
    user = request["messages"][1]["content"]
    assert QUESTION.text in user and "Ada Quill." in user
    article = f"{ARTICLE.title}\n\n{ARTICLE.content}"  # 46,009 characters
    assert article[:15_000] in user and article[:15_001] not in user


# ------------------------------------------------------------------ the judge's reason


def test_the_reason_is_optional_bounded_and_has_room_in_the_reply():
    """A model that gives the ratings alone still grades; a grammar-constrained one cannot run
    on in the reason, and the reply's token bound leaves room for a reason of full length."""
    reason = judge.GRADE_TOOL["function"]["parameters"]["properties"]["reason"]
    assert "reason" not in judge.GRADE_TOOL["function"]["parameters"]["required"]
    assert reason["type"] == "string" and reason["maxLength"] == judge.REASON_CHARS
    assert "\\n" in reason["pattern"]  # no line break: one line
    assert judge.JUDGE_MAX_TOKENS >= room_for(judge.REASON_CHARS)
    grade, _ = judge.grade(ScriptedLLM([grade_call('{"truthfulness": 4, "relevance": 5}')]),
                           QUESTION, "Ada Quill.", ARTICLE)
    assert grade.scored and grade.reason is None


@pytest.mark.parametrize("given, kept", [
    pytest.param('"Ada Quill designed it, as the article says."',
                 "Ada Quill designed it, as the article says.", id="a-sentence"),
    pytest.param('"The article names\\n  Ada Quill."', "The article names Ada Quill.",
                 id="line-breaks-made-one-line"),
    pytest.param("42", None, id="a-number-dropped"),
    pytest.param('["true", "relevant"]', None, id="a-list-dropped"),
    pytest.param('{"why": "true"}', None, id="an-object-dropped"),
    pytest.param("null", None, id="null"),
    pytest.param('"   "', None, id="blank-dropped"),
    pytest.param('", "', None, id="punctuation-dropped"),
    pytest.param('"1.0.1.1.1.1"', None, id="no-word-dropped"),
])
def test_a_reason_is_kept_and_a_malformed_one_dropped_without_costing_the_grade(given, kept):
    reply = grade_call(f'{{"truthfulness": 2, "relevance": 3, "reason": {given}}}')
    llm = ScriptedLLM([reply])
    grade, calls = judge.grade(llm, QUESTION, "Ada Quill.", ARTICLE)
    assert (grade.truthfulness, grade.relevance, grade.scored) == (2, 3, True)
    assert grade.reason == kept
    assert len(calls) == len(llm.requests) == 1  # no second attempt for a reason


def test_a_reason_too_long_is_cut_and_the_grade_kept():
    long = "The answer is right. " * 40  # 840 characters, over any bound of one sentence
    grade, _ = judge.grade(ScriptedLLM([grade_call(json.dumps(
        {"truthfulness": 5, "relevance": 4, "reason": long}))]), QUESTION, "Ada Quill.", ARTICLE)
    assert (grade.truthfulness, grade.relevance) == (5, 4)
    assert len(grade.reason) == judge.REASON_CHARS and grade.reason.endswith("…")
    assert long.startswith(grade.reason[:-1])


def test_an_unscored_grade_gives_no_reason_even_when_the_reply_had_one():
    bad = grade_call('{"truthfulness": 9, "relevance": 3, "reason": "Looks great."}')
    grade, _ = judge.grade(ScriptedLLM([bad, bad]), QUESTION, "Ada Quill.", ARTICLE)
    assert not grade.scored and grade.reason is None
    assert "Looks great." in grade.raw[0]  # still kept in the raw arguments


def test_the_run_row_keeps_the_reason_and_checks_its_type():
    grade, calls = judge.grade(ScriptedLLM([grade_call(
        '{"truthfulness": 4, "relevance": 4, "reason": "Matches the article."}')]),
        QUESTION, "Ada Quill.", ARTICLE)
    row = sample_row("A_f", QUESTION, "baseline", SystemAnswer("Ada Quill."), grade, calls, 0.1)
    assert row["grade"]["reason"] == "Matches the article."
    assert sample_problem(row) is None
    broken = {**row, "grade": {**row["grade"], "reason": 7}}
    assert "grade 'reason' must be text or null" in sample_problem(broken)


def test_the_judge_scorer_keeps_the_reason_in_its_details():
    reply = grade_call('{"truthfulness": 3, "relevance": 5, "reason": "Half right."}')
    result = judge.Judge().score(ScriptedLLM([reply]),
                                 ScoreInput(QUESTION, "Ada Quill.", None, ARTICLE))
    assert (result.status, result.metrics) == ("scored", {"truthfulness": 3, "relevance": 5})
    assert result.details["reason"] == "Half right."
    odd = grade_call('{"truthfulness": 3, "relevance": 5, "reason": false}')
    result = judge.Judge().score(ScriptedLLM([odd]), ScoreInput(QUESTION, "x", None, ARTICLE))
    assert result.status == "scored" and result.details["reason"] is None

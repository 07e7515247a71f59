"""Every scorer of harness/scoring against the scripted fake model: a good reply gives the share
the reply implies, a malformed or empty one is unscored with the reason (never a number), and an
answer with nothing to measure is not applicable. Each case is a row of a table."""

import json

import pytest

from freshrag.core.types import Article, Question
from freshrag.scoring import SCORERS
from freshrag.scoring.base import ScoreInput, sentences
from freshrag.scoring.claims import NO_ARTICLE, NO_SOURCE
from freshrag.scoring.scorepass import make_scorers, missing_inputs
from tests.support.fakes import BagOfWordsEmbedder, ScriptedLLM, ToolReply

ARTICLE = Article("Lake Town", "Lake Town has four bridges. Its mayor is Ola Berg. It hosts a fair.")
CONTEXT = "Title: Lake Town\nLake Town has four bridges. Its mayor is Ola Berg. It hosts a fair."


def item(answer="Lake Town has four bridges. Its mayor is Ola.", context=CONTEXT, reference=None,
         label=None):
    question = Question("q1", "How many bridges does Lake Town have?", "Lake Town",
                        reference=reference, label=label)
    return ScoreInput(question, answer, context, ARTICLE)


def call(name, **arguments):
    return ToolReply(name, json.dumps(arguments))


def scored(name, script, given=None):
    llm = ScriptedLLM(list(script))
    result = make_scorers([name], BagOfWordsEmbedder(dim=64).embed)[name].score(llm, given or item())
    assert not llm.script, "every scripted reply was asked for"
    return result, llm


STATEMENTS = call("submit_statements", statements=["Lake Town has four bridges.", "Its mayor is Ola."])


@pytest.mark.parametrize("script, given, status, value, reason", [
    pytest.param([STATEMENTS, call("submit_verdicts", supported=[True, False])], None,
                 "scored", 0.5, None, id="one-of-two-supported"),
    pytest.param([STATEMENTS, call("submit_verdicts", supported=[True, True])], None,
                 "scored", 1.0, None, id="all-supported"),
    pytest.param([STATEMENTS, call("submit_verdicts", supported=[True])], None,
                 "unscored", None, "1 verdicts for 2 statements", id="too-few-verdicts"),
    pytest.param([STATEMENTS, call("submit_verdicts", supported=["yes", "no"])], None,
                 "unscored", None, "list of true/false", id="verdicts-not-booleans"),
    pytest.param([ToolReply("submit_statements", "{not json")], None,
                 "unscored", None, "invalid JSON", id="malformed-json"),
    pytest.param(["Sure! The statements are..."], None,
                 "unscored", None, "no submit_statements call", id="text-instead-of-call"),
    pytest.param([call("submit_statements", statements=[])], None,
                 "unscored", None, "no statements in the answer", id="empty-statement-list"),
    pytest.param([call("submit_statements", statements="one")], None,
                 "unscored", None, "list of strings", id="statements-not-a-list"),
    pytest.param([], item(context=None), "not_applicable", None, "nothing was retrieved",
                 id="nothing-retrieved"),
    pytest.param([], item(answer="  "), "not_applicable", None, "empty answer", id="empty-answer"),
])
def test_faithfulness(script, given, status, value, reason):
    result, llm = scored("faithfulness", script, given)
    assert result.status == status
    assert result.metrics.get("faithfulness") == value
    assert (reason or "") in (result.reason or "")
    if len(llm.requests) == 2:  # the verdicts are asked against the retrieved context
        assert CONTEXT in llm.requests[1]["messages"][1]["content"]
        assert llm.requests[1]["tool_choice"] == "submit_verdicts"


@pytest.mark.parametrize("script, given, status, value, reason", [
    pytest.param([call("submit_needed_sentences", needed=[1, 2])], None, "scored", 2 / 4, None,
                 id="two-of-four"),
    pytest.param([call("submit_needed_sentences", needed=[2, 2])], None, "scored", 1 / 4, None,
                 id="duplicates-count-once"),
    pytest.param([call("submit_needed_sentences", needed=[])], None, "scored", 0.0, None,
                 id="none-needed-is-a-real-zero"),
    pytest.param([call("submit_needed_sentences", needed=[9])], None, "unscored", None,
                 "outside 1..4", id="number-out-of-range"),
    pytest.param([call("submit_needed_sentences", needed=[True])], None, "unscored", None,
                 "whole numbers", id="boolean-is-not-a-number"),
    pytest.param([call("submit_needed_sentences")], None, "unscored", None, "miss ['needed']",
                 id="field-missing"),
    pytest.param([], item(context=None), "not_applicable", None, "nothing was retrieved",
                 id="nothing-retrieved"),
])
def test_context_relevance(script, given, status, value, reason):
    result, llm = scored("context-relevance", script, given)
    assert result.status == status
    assert result.metrics.get("context_relevance") == value
    assert (reason or "") in (result.reason or "")


def test_context_is_split_into_the_sentences_the_share_counts():
    assert sentences(CONTEXT) == ["Title: Lake Town", "Lake Town has four bridges.",
                                  "Its mayor is Ola Berg.", "It hosts a fair."]


@pytest.mark.parametrize("script, given, status, reason", [
    pytest.param([call("submit_questions", questions=["How many bridges does Lake Town have?",
                                                      "Who is the mayor of Lake Town?"])],
                 None, "scored", None, id="good"),
    pytest.param([call("submit_questions", questions=[])], None, "unscored",
                 "no question in the reply", id="empty-list"),
    pytest.param([call("submit_questions", questions=[1, 2])], None, "unscored",
                 "list of strings", id="numbers-not-questions"),
    pytest.param([""], None, "unscored", "no submit_questions call", id="empty-reply"),
    pytest.param([], item(answer=""), "not_applicable", "empty answer", id="empty-answer"),
])
def test_answer_relevance(script, given, status, reason):
    result, _ = scored("answer-relevance", script, given)
    assert result.status == status
    assert (reason or "") in (result.reason or "")
    if status == "scored":  # the asked question itself has similarity 1 with itself
        similarities = result.details["similarities"]
        assert similarities[0] == pytest.approx(1.0)
        assert result.metrics["answer_relevance"] == pytest.approx(sum(similarities) / 2, abs=1e-3)
        assert similarities[1] < 1.0


@pytest.mark.parametrize("script, given, status, metrics, reason", [
    pytest.param([STATEMENTS, call("submit_verdicts", supported=[True, False]),
                  call("submit_statements", statements=["Lake Town has four bridges."]),
                  call("submit_verdicts", supported=[True])], None, "scored",
                 {"claims_precision": 0.5, "claims_recall": 1.0}, None, id="good"),
    pytest.param([call("submit_statements", statements=[]),
                  call("submit_statements", statements=["Lake Town has four bridges."]),
                  call("submit_verdicts", supported=[False])], item(answer="Hello!"), "scored",
                 {"claims_recall": 0.0}, None, id="no-answer-claims-gives-recall-only"),
    pytest.param([call("submit_statements", statements=[]),
                  call("submit_statements", statements=[])], None, "unscored", {},
                 "no statements in the answer and no key claims", id="nothing-to-count"),
    pytest.param([STATEMENTS, call("submit_verdicts", supported=[True, True]),
                  ToolReply("submit_statements", "[]")], None, "unscored", {},
                 "not an object", id="malformed-key-claims"),
    pytest.param([], item(answer=""), "not_applicable", {}, "empty answer", id="empty-answer"),
])
def test_claims(script, given, status, metrics, reason):
    result, llm = scored("claims", script, given)
    assert result.status == status
    assert result.metrics == metrics
    assert (reason or "") in (result.reason or "")


def test_claims_recall_is_against_the_reference_when_the_question_has_one():
    script = [STATEMENTS, call("submit_verdicts", supported=[True, True]),
              call("submit_statements", statements=["It has four bridges.", "It has a fair."]),
              call("submit_verdicts", supported=[True, False])]
    result, llm = scored("claims", script, item(reference="Four bridges, and a yearly fair."))
    assert result.metrics == {"claims_precision": 1.0, "claims_recall": 0.5}
    assert result.details["recall_against"] == "reference"
    # the key claims were split from the reference, and checked against the answer
    assert "Four bridges, and a yearly fair." in llm.requests[2]["messages"][1]["content"]
    assert "Source:\nLake Town has four bridges. Its mayor is Ola." in \
        llm.requests[3]["messages"][1]["content"]
    # precision was checked against the gold article
    assert ARTICLE.content in llm.requests[1]["messages"][1]["content"]


def general(reference=None):
    """A general query of a traffic mix: no gold article, so the scorer is given none."""
    question = Question("g1", "What is 17 times 23?", None, kind="general", need=False,
                        reference=reference)
    return ScoreInput(question, "It is 391.", None, None)


def test_claims_of_a_general_query_is_not_applicable_and_asks_nothing():
    result, llm = scored("claims", [], general())
    assert (result.status, result.reason) == ("not_applicable", NO_SOURCE)
    assert not llm.requests


def test_claims_of_a_general_query_with_a_reference_is_recall_alone():
    script = [call("submit_statements", statements=["17 times 23 is 391."]),
              call("submit_verdicts", supported=[True])]
    result, llm = scored("claims", script, general(reference="391"))
    assert (result.status, result.metrics) == ("scored", {"claims_recall": 1.0})
    assert result.details["precision"] == NO_ARTICLE  # nothing to check the answer against
    assert len(llm.requests) == 2


def test_claims_without_the_article_of_a_question_that_has_one_is_a_bug_not_a_score():
    with pytest.raises(ValueError, match="no article given for 'Lake Town'"):
        scored("claims", [], ScoreInput(item().question, "Four.", None, None))


def test_the_articles_a_score_pass_misses_leave_general_queries_out():
    rows = [{"status": "ok", "gold_title": None}, {"status": "ok", "gold_title": "Lake Town"}]
    assert missing_inputs(rows, ["judge", "claims"], {"Lake Town": ARTICLE}) is None
    missing = missing_inputs(rows + [{"status": "ok", "gold_title": "Elsewhere"}], ["claims"],
                             {"Lake Town": ARTICLE})
    assert missing and "1 title not at hand (e.g. 'Elsewhere')" in missing


@pytest.mark.parametrize("script, answer, status, abstained, source, reason", [
    pytest.param([], "I don't know.", "scored", 1.0, "pattern", None, id="pattern-dont-know"),
    pytest.param([], "The extracts do not mention it.", "scored", 1.0, "pattern", None,
                 id="pattern-context"),
    pytest.param([], "", "scored", 1.0, "empty", None, id="empty-answer"),
    pytest.param([call("submit_abstention", abstained=False)], "Four.", "scored", 0.0, "model",
                 None, id="model-answered"),
    pytest.param([call("submit_abstention", abstained=True)], "That is beyond me.", "scored",
                 1.0, "model", None, id="model-abstained"),
    pytest.param([call("submit_abstention", abstained="no")], "Four.", "unscored", None, None,
                 "true or false", id="not-a-boolean"),
    pytest.param(["no"], "Four.", "unscored", None, None, "no submit_abstention call",
                 id="text-reply"),
])
def test_abstention(script, answer, status, abstained, source, reason):
    result, _ = scored("abstention", script, item(answer=answer))
    assert result.status == status
    assert result.metrics.get("abstained") == abstained
    assert result.details.get("source") == source
    assert (reason or "") in (result.reason or "")


@pytest.mark.parametrize("script, status, metrics", [
    pytest.param([call("submit_grade", truthfulness=4, relevance=5)], "scored",
                 {"truthfulness": 4, "relevance": 5}, id="good"),
    pytest.param([call("submit_grade", truthfulness=9, relevance=5),
                  call("submit_grade", truthfulness=3, relevance=2)], "scored",
                 {"truthfulness": 3, "relevance": 2}, id="retried-once"),
    pytest.param([call("submit_grade", truthfulness=9, relevance=5), ""], "unscored", {},
                 id="malformed-twice"),
])
def test_judge_scorer_repeat_k_asks_attempts_of_its_own(script, status, metrics):
    llm = ScriptedLLM(list(script))
    result = SCORERS["judge"]().score(llm, ScoreInput(item().question, "Four.", None, ARTICLE,
                                                      repeat=3))
    assert (result.status, result.metrics) == (status, metrics)
    assert [r["attempt"] for r in llm.requests] == [6, 7][:len(script)]  # repeat 3: 2*3, 2*3+1


def test_every_scorer_has_a_role_and_its_metrics():
    from freshrag.core.types import ROLES
    for name, factory in SCORERS.items():
        scorer = factory()
        assert scorer.name == name and scorer.role in ROLES and scorer.metrics

"""One rule fits an article to a model's window: on a context overflow the text is halved, at
most twice (`freshrag.llm.fitting.chat_fitting`). The builder's recency classifier (tests/builders), the
judge and the oracle use it, and record the cut; what is still too long after the halvings is an
unscored grade (judge) or a failed pair (oracle), with the reason."""

import pytest

from freshrag.core.dataset import Dataset
from freshrag.core.types import Article, Question, SystemContext
from freshrag.llm.errors import ContextTooLong
from freshrag.llm.fitting import chat_fitting
from freshrag.run.runner import CallRecorder, answer_and_grade
from freshrag.scoring import judge
from freshrag.systems import SYSTEMS
from tests.support.fakes import ScriptedLLM, ToolReply

TOO_LONG = ContextTooLong("judge endpoint http://x/v1 failed after 1 attempt(s): HTTP 400: "
                          "maximum context length is 8192 tokens")
QUESTION = Question("q1", "How many spans does the Velmora bridge have?", "Velmora")
ARTICLE = Article("Velmora", "The Velmora bridge has nine spans of pale granite. " * 600)
FULL = ARTICLE.prompt_text()  # title + text cut to the paper's 15,000 characters
GRADE = ToolReply("submit_grade", '{"truthfulness": 5, "relevance": 4}')


def user_text(request):
    return request["messages"][-1]["content"]


def sent_article(request, system_prompt=False):
    """How much of the article a request carried: the longest prefix of FULL in it."""
    content = request["messages"][0 if system_prompt else -1]["content"]
    return max(n for n in (len(FULL), len(FULL) // 2, len(FULL) // 4) if FULL[:n] in content)


def test_the_text_is_halved_until_the_model_takes_it_and_the_cut_is_told():
    llm = ScriptedLLM([TOO_LONG, TOO_LONG, "fits"])
    fitted = chat_fitting(llm, "answer", "x" * 1000, lambda text: {"messages": [
        {"role": "user", "content": text}]})
    assert [len(user_text(r)) for r in llm.requests] == [1000, 500, 250]
    assert fitted.response.text == "fits"
    assert (fitted.chars, fitted.halvings) == (250, 2)
    assert fitted.cut == {"chars": 250, "halvings": 2}


def test_a_text_that_fits_is_sent_whole_and_not_marked_cut():
    llm = ScriptedLLM(["fits"])
    fitted = chat_fitting(llm, "answer", "x" * 1000, lambda text: {"messages": [
        {"role": "user", "content": text}]})
    assert (fitted.chars, fitted.halvings, fitted.cut) == (1000, 0, None)


def test_too_long_even_at_a_quarter_says_how_far_it_was_cut():
    llm = ScriptedLLM([TOO_LONG] * 3)
    with pytest.raises(ContextTooLong, match=r"even cut to 250 of 1,000 characters") as raised:
        chat_fitting(llm, "answer", "x" * 1000, lambda text: {"messages": [
            {"role": "user", "content": text}]})
    assert "maximum context length" in str(raised.value)  # the endpoint's own words kept
    assert len(llm.requests) == 3


def test_the_judge_sees_the_article_halved_to_fit_and_the_grade_records_the_cut():
    llm = ScriptedLLM([TOO_LONG, GRADE])
    grade, calls = judge.grade(llm, QUESTION, "Nine.", ARTICLE)
    assert (grade.truthfulness, grade.relevance) == (5, 4)
    assert [sent_article(r) for r in llm.requests] == [len(FULL), len(FULL) // 2]
    assert grade.context_cut == {"chars": len(FULL) // 2, "halvings": 1}
    assert len(calls) == 1


def test_the_judge_retries_a_bad_reply_on_the_text_that_fitted():
    llm = ScriptedLLM([TOO_LONG, ToolReply("submit_grade", "{"), GRADE])
    grade, calls = judge.grade(llm, QUESTION, "Nine.", ARTICLE)
    assert grade.scored and len(calls) == 2
    assert [sent_article(r) for r in llm.requests] == [len(FULL), len(FULL) // 2, len(FULL) // 2]
    assert [r["attempt"] for r in llm.requests] == [0, 0, 1]
    assert grade.context_cut == {"chars": len(FULL) // 2, "halvings": 1}


def test_an_article_the_judge_cannot_take_is_unscored_with_the_reason_not_a_failed_pair():
    llm = ScriptedLLM(["Nine.", TOO_LONG, TOO_LONG, TOO_LONG])
    dataset = Dataset("d", [QUESTION], {"Velmora": ARTICLE}, {})
    recorder = CallRecorder(llm)  # as in a run: every call of the pair is recorded
    system = SYSTEMS["baseline"](SystemContext(llm=recorder, articles=dataset.articles))
    row = answer_and_grade(dataset, QUESTION, "baseline", system, recorder)
    assert row["status"] == "ok" and row["answer"] == "Nine."
    assert row["grade"]["truthfulness"] is None
    assert "too long for the judge model's context" in row["grade"]["unscored_reason"]
    assert f"even cut to {len(FULL) // 4:,} of {len(FULL):,} characters" in \
        row["grade"]["unscored_reason"]


def test_the_grade_in_a_row_says_how_far_the_judge_article_was_cut():
    llm = ScriptedLLM(["Nine.", TOO_LONG, TOO_LONG, GRADE])
    dataset = Dataset("d", [QUESTION], {"Velmora": ARTICLE}, {})
    recorder = CallRecorder(llm)  # as in a run: every call of the pair is recorded
    system = SYSTEMS["baseline"](SystemContext(llm=recorder, articles=dataset.articles))
    row = answer_and_grade(dataset, QUESTION, "baseline", system, recorder)
    assert row["grade"]["context_cut"] == {"chars": len(FULL) // 4, "halvings": 2}


def test_the_oracle_halves_the_gold_article_to_fit_and_records_the_cut():
    llm = ScriptedLLM([TOO_LONG, "Nine."])
    answer = SYSTEMS["oracle"](SystemContext(llm=llm, articles={"Velmora": ARTICLE})) \
        .answer(QUESTION)
    assert answer.text == "Nine." and len(answer.calls) == 1
    assert [sent_article(r, system_prompt=True) for r in llm.requests] == \
        [len(FULL), len(FULL) // 2]
    assert answer.details == {"article_cut": True,
                              "context_cut": {"chars": len(FULL) // 2, "halvings": 1}}


def test_a_gold_article_the_oracle_cannot_fit_fails_the_pair_naming_it():
    llm = ScriptedLLM([TOO_LONG] * 3)
    dataset = Dataset("d", [QUESTION], {"Velmora": ARTICLE}, {})
    recorder = CallRecorder(llm)  # as in a run: every call of the pair is recorded
    system = SYSTEMS["oracle"](SystemContext(llm=recorder, articles=dataset.articles))
    row = answer_and_grade(dataset, QUESTION, "oracle", system, recorder)
    assert row["status"] == "failed" and row["grade"] is None
    assert "gold article 'Velmora' too long for the answer model's context" in row["error"]

"""The oracle hands the answerer every gold article (docs/methods.md#multi-article-questions): a
multi-article question's in hop order, a read step each, cut alike to fit the window."""

import pytest

from freshrag.core.types import Article, Question, SystemContext
from freshrag.llm.client import ContextTooLong
from freshrag.systems import SYSTEMS
from freshrag.systems.prompts import ARTICLE_PROMPT, ARTICLES_PROMPT
from tests.support.fakes import ScriptedLLM

TOO_LONG = ContextTooLong("answer endpoint http://x/v1: HTTP 400: maximum context length")
VELMORA = Article("Velmora", "The Velmora bridge spans the river Tarn. " * 500)  # > 15,000
TARN = Article("Tarn", "The Tarn is 380 km long. " * 200)
ARTICLES = {a.title: a for a in (VELMORA, TARN)}
BRIDGE = Question("m1", "How long is the river the Velmora bridge spans?", "Velmora",
                  gold_titles=("Velmora", "Tarn"), hops=2, multihop="bridge")


def oracle(llm):
    return SYSTEMS["oracle"](SystemContext(llm, ARTICLES))


def test_the_oracle_reads_every_gold_article_in_hop_order():
    llm = ScriptedLLM(["380 km."])
    answer = oracle(llm).answer(BRIDGE)
    assert [(step.kind, step.title) for step in answer.steps] == [
        ("read", "Velmora"), ("read", "Tarn"), ("answer", None)]
    system = llm.requests[0]["messages"][0]["content"]
    assert system == ARTICLES_PROMPT.format(
        articles=VELMORA.prompt_text() + "\n\n" + TARN.prompt_text())
    assert answer.details == {"article_cut": True, "context_cut": None}


def test_the_oracle_cuts_every_gold_article_alike_to_fit():
    llm = ScriptedLLM([TOO_LONG, TOO_LONG, "380 km."])
    answer = oracle(llm).answer(BRIDGE)
    quarter = len(VELMORA.prompt_text()) // 4
    system = llm.requests[2]["messages"][0]["content"]
    assert system == ARTICLES_PROMPT.format(
        articles=VELMORA.prompt_text()[:quarter] + "\n\n" + TARN.prompt_text()[:quarter])
    assert answer.details["context_cut"] == {"chars": quarter, "halvings": 2}


def test_a_gold_set_too_long_fails_the_pair_naming_its_articles():
    with pytest.raises(ContextTooLong, match="gold articles 'Velmora', 'Tarn' too long"):
        oracle(ScriptedLLM([TOO_LONG] * 3)).answer(BRIDGE)


def test_one_gold_article_is_handed_over_as_before():
    llm = ScriptedLLM(["A river."])
    answer = oracle(llm).answer(Question("q1", "What does it span?", "Tarn"))
    assert llm.requests[0]["messages"][0]["content"] == ARTICLE_PROMPT.format(
        article=TARN.prompt_text())
    assert [(step.kind, step.title) for step in answer.steps] == [("read", "Tarn"),
                                                                  ("answer", None)]

"""Shared RAG pieces: the strict decision parser, and retrieved text cut to the context window."""

import pytest

from freshrag.core.answering import ANSWER_MAX_TOKENS
from freshrag.core.types import LLMResponse, Question, RetrievedChunk, SystemContext, Usage
from freshrag.llm.tokens import count_messages
from freshrag.systems.naive import Naive
from freshrag.systems.rag import TOKEN_MODEL, fitted_messages, parse_decision
from tests.support.fakes import FakeRetriever, ScriptedLLM

QUESTION = Question("q1", "How many spans does the Velmora bridge have?", "Velmora")
CHUNKS = [RetrievedChunk(f"Article {i}", i, f"Title: Article {i}\n" + "word " * 900, 0.9 - i / 10)
          for i in range(5)]


def reply(tool_name, arguments, text=None):
    return LLMResponse("decision", "m", text, tool_name, arguments, Usage(), 0.0, False, [])


@pytest.mark.parametrize("response, label", [
    pytest.param(reply("f", '{"retrieve": true}'), "retrieve", id="true"),
    pytest.param(reply("f", '{"retrieve": false}'), "no-retrieve", id="false"),
    pytest.param(reply(None, None, "I'd rather answer."), "none", id="no-call"),
    pytest.param(reply("g", '{"retrieve": true}'), "none", id="other-function"),
    pytest.param(reply("f", '{"retrieve": tr'), "none", id="truncated-json"),
    pytest.param(reply("f", '{"retrieve": 1}'), "none", id="number"),
    pytest.param(reply("f", '{"retrieve": "true"}'), "none", id="string"),
    pytest.param(reply("f", '[true]'), "none", id="not-an-object"),
    pytest.param(reply("f", '{}'), "none", id="missing-field"),
])
def test_decisions_are_parsed_strictly(response, label):
    decision = parse_decision(response, "f")
    assert decision.label == label and decision.retrieve == (label == "retrieve")
    assert decision.raw == (response.tool_arguments or response.text)


def prompt_tokens(messages):
    return count_messages(messages, TOKEN_MODEL)


def test_extracts_that_fit_are_not_cut():
    messages, cut = fitted_messages(QUESTION, CHUNKS, context_tokens=32_000)
    assert cut is None and all(c.text in messages[0]["content"] for c in CHUNKS)


def test_extracts_beyond_the_window_are_cut_in_rank_order_and_recorded():
    messages, cut = fitted_messages(QUESTION, CHUNKS, context_tokens=3_000)
    assert CHUNKS[0].text in messages[0]["content"] and CHUNKS[-1].text not in messages[0]["content"]
    assert cut["extracts_dropped"] > 0 and cut["question_cut"] is False
    assert cut["extracts_kept"] + cut["extracts_dropped"] == len(CHUNKS)
    assert prompt_tokens(messages) + ANSWER_MAX_TOKENS <= 3_000
    assert messages[-1]["content"] == QUESTION.text


def test_a_question_longer_than_the_window_is_cut_and_answered_without_extracts():
    huge = Question("q2", "Why? " * 5_000, "Velmora")
    llm = ScriptedLLM(["Because."])
    context = SystemContext(llm=llm, articles={}, retriever=FakeRetriever(CHUNKS),
                            context_tokens=2_048)
    answer = Naive(context).answer(huge)
    [request] = llm.requests
    assert answer.text == "Because." and answer.details["context_cut"]["question_cut"] is True
    assert answer.details["context_cut"]["extracts_kept"] == 0
    assert prompt_tokens(request["messages"]) + ANSWER_MAX_TOKENS <= 2_048
    assert huge.text.startswith(request["messages"][-1]["content"])

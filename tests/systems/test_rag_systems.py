"""The retrieving strategies against the scripted fake model and a fake index: every decision
(true, false, missing, garbled), what each records, and tokens summed over all calls."""

import pytest

from freshrag.systems.prompts import MORE_INFORMATION_QUESTION, RETRIEVE_TOOL
from tests.support.fakes import ToolReply
from tests.support.systems import CHUNKS, QUESTION, USAGE, extracts_in, run_system

RETRIEVE = ToolReply("retrieve_information", '{"retrieve": true}')
NO_RETRIEVE = ToolReply("retrieve_information", '{"retrieve": false}')
MORE = ToolReply("more_information", '{"retrieve": true}')
NO_MORE = ToolReply("more_information", '{"retrieve": false}')


def test_naive_retrieves_for_every_question_and_answers_with_the_extracts():
    answer, [request], queries = run_system("naive", ["Nine."])
    assert queries == [QUESTION.text] and answer.retrievals == 1 and answer.text == "Nine."
    assert extracts_in(request) and "headed by the title" in request["messages"][0]["content"]
    assert request["role"] == "answer" and request["messages"][-1]["content"] == QUESTION.text
    assert answer.details["retrieved"] == [  # each chunk's text too: the viewer shows it
        {"title": c.title, "index": c.index, "score": c.score, "text": c.text} for c in CHUNKS]
    assert answer.details["context_cut"] is None
    assert answer.usage_by_role() == {"answer": USAGE}


@pytest.mark.parametrize("system", ["boolean", "dated-boolean"])
@pytest.mark.parametrize("script, decision, retrieved, calls", [
    pytest.param([RETRIEVE, "Nine."], "retrieve", True, 2, id="true"),
    pytest.param([NO_RETRIEVE, "Eight."], "no-retrieve", False, 2, id="false"),
    pytest.param(["Seven, I believe."], "none", False, 1, id="missing-answers-in-text"),
    pytest.param([ToolReply("retrieve_information", '{"retrieve": tru'), "Six."], "none", False, 2,
                 id="garbled-json"),
    pytest.param([ToolReply("retrieve_information", '{"retrieve": "yes"}'), "Six."], "none", False, 2,
                 id="not-a-boolean"),
    pytest.param([ToolReply("search_web", '{"retrieve": true}'), "Six."], "none", False, 2,
                 id="other-function"),
])
def test_boolean_agents_follow_the_decision(system, script, decision, retrieved, calls):
    answer, requests, queries = run_system(system, list(script), knowledge_cutoff="2021-09-30",
                                           today="2026-11-22")
    first = requests[0]
    assert first["role"] == "decision" and first["tool_choice"] == "auto"
    assert first["tools"] == [RETRIEVE_TOOL]
    assert answer.details["decision"] == decision
    assert answer.retrievals == int(retrieved) and (queries == [QUESTION.text]) == retrieved
    assert len(requests) == calls and answer.text == script[-1]
    if calls == 2:
        assert requests[1]["role"] == "answer" and extracts_in(requests[1]) == retrieved
    # Tokens are summed over every call, per role.
    expected = {"decision": USAGE} if calls == 1 else {"decision": USAGE, "answer": USAGE}
    assert answer.usage_by_role() == expected


def test_the_raw_decision_is_recorded():
    answer, _, _ = run_system("boolean", [ToolReply("retrieve_information", "{oops"), "Six."])
    assert answer.details["decision_raw"] == "{oops"


def test_dated_boolean_states_today_and_the_cutoff():
    _, [first, _], _ = run_system("dated-boolean", [RETRIEVE, "Nine."],
                                  knowledge_cutoff="2021-09-30", today="2026-11-22")
    prompt = first["messages"][0]["content"]
    assert "Today's date is 2026-11-22" in prompt and "after 2021-09-30" in prompt


def test_dated_boolean_refuses_to_start_without_a_cutoff():
    with pytest.raises(ValueError, match="knowledge cutoff"):
        run_system("dated-boolean", [])


@pytest.mark.parametrize("verdict, decision, retrieved", [
    pytest.param(MORE, "retrieve", True, id="true"),
    pytest.param(NO_MORE, "no-retrieve", False, id="false"),
    pytest.param("Yes, it could.", "none", False, id="missing"),
    pytest.param(ToolReply("more_information", "retrieve=yes"), "none", False, id="garbled"),
])
def test_advanced_answers_first_then_asks_whether_more_information_helps(verdict, decision,
                                                                         retrieved):
    script = ["Eight, probably.", verdict] + (["Nine."] if retrieved else [])
    answer, requests, queries = run_system("advanced", script)
    first, asked = requests[0], requests[1]
    assert first["role"] == "decision" and first["tools"] is None
    assert asked["role"] == "decision" and asked["tool_choice"] == "more_information"
    assert asked["messages"][-2] == {"role": "assistant", "content": "Eight, probably."}
    assert asked["messages"][-1] == {"role": "user", "content": MORE_INFORMATION_QUESTION}
    assert answer.details["decision"] == decision
    assert answer.details["first_answer"] == "Eight, probably."
    if retrieved:
        assert answer.text == "Nine." and answer.retrievals == 1 and queries == [QUESTION.text]
        assert requests[2]["role"] == "answer" and extracts_in(requests[2])
        assert answer.usage_by_role() == {"decision": USAGE + USAGE, "answer": USAGE}
    else:
        assert answer.text == "Eight, probably." and answer.retrievals == 0 and queries == []
        assert answer.usage_by_role() == {"decision": USAGE + USAGE}


def test_hyde_retrieves_with_a_hypothetical_passage():
    passage = "The Velmora bridge is a bridge with nine spans over the river."
    answer, [write, reply], queries = run_system("hyde", [passage, "Nine."])
    # The passage is written from the question alone, asked for in the style of the corpus...
    assert write["role"] == "answer" and write["tools"] is None
    assert [m["role"] for m in write["messages"]] == ["system", "user"]
    assert "Wikipedia article" in write["messages"][0]["content"]
    assert write["messages"][1]["content"] == QUESTION.text and not extracts_in(write)
    # ...serves only as the search query, and the answer sees the extracts, never the passage.
    assert queries == [f"{QUESTION.text}\n{passage}"]
    assert extracts_in(reply) and all(passage not in m["content"] for m in reply["messages"])
    assert reply["messages"][-1]["content"] == QUESTION.text
    assert answer.text == "Nine." and answer.retrievals == 1
    assert answer.details["hypothetical"] == passage
    assert answer.usage_by_role() == {"answer": USAGE + USAGE}


@pytest.mark.parametrize("name, script", [
    pytest.param("naive", ["Nine."], id="naive"),
    pytest.param("boolean", [RETRIEVE, "Nine."], id="boolean"),
    pytest.param("dated-boolean", [RETRIEVE, "Nine."], id="dated-boolean"),
    pytest.param("advanced", ["Eight.", MORE, "Nine."], id="advanced"),
    pytest.param("hyde", ["A bridge with nine spans.", "Nine."], id="hyde"),
])
def test_every_call_is_bounded_in_output_tokens(name, script):
    """A grammar-constrained local model can pad a forced call's JSON until its context is full;
    every call a system makes carries a max_tokens bound."""
    context = {"today": "2026-11-23", "knowledge_cutoff": "2024-06-30"} \
        if name == "dated-boolean" else {}
    _, requests, _ = run_system(name, script, **context)
    assert len(requests) == len(script)
    assert all(r["max_tokens"] is not None and 0 < r["max_tokens"] <= 512 for r in requests)

"""The multi-step agents (docs/methods.md#agents) against the scripted fake model and a fake
index: the searches each makes, both articles of a two-article question found, the bounds
(max_steps and token_budget, with `stopped`), replies they cannot use, the router's routes; then
a dry run's range against their call shapes, and a live run on the fake server whose rows' steps
hold every call."""

import json

import pytest

from freshrag.cli.main import main
from freshrag.core.answering import ANSWER_MAX_TOKENS
from freshrag.core.config import load_settings
from freshrag.core.dataset import load_dataset
from freshrag.core.samples import read_samples
from freshrag.core.types import (
    Question,
    RetrievedChunk,
    SystemContext,
    call_shape,
    uses_steps,
)
from freshrag.cost.estimate import StandInRetriever, estimate
from freshrag.llm.client import LLMClient
from freshrag.llm.tokens import count_messages
from freshrag.run.config import RunConfig
from freshrag.run.plan import make_plan
from freshrag.systems import SYSTEMS
from freshrag.systems.prompts import ANSWER_PROMPT, REACT_PROMPT, ROUTER_PROMPT, UNUSABLE_REPLY
from tests.support.agent_script import searches_then_answers
from tests.support.datasets import write_dataset
from tests.support.fakes import FakeRetriever, ScriptedLLM, ToolReply
from tests.support.systems import ARTICLES, CHUNKS, QUESTION, USAGE, extracts_in

AGENTS = ("react", "iterative", "decompose", "router")
CALL = USAGE.input + USAGE.output  # the tokens of one scripted call


def search(query):
    return ToolReply("search", json.dumps({"query": query}))


def reason(thought, again):
    return ToolReply("reason_step", json.dumps({"thought": thought, "search_again": again}))


def split(*questions):
    return ToolReply("sub_questions", json.dumps({"sub_questions": list(questions)}))


def route(retrieve, multi_step):
    return ToolReply("route_question", json.dumps({"retrieve": retrieve, "multi_step": multi_step}))


def run_agent(name, script, retriever=None, question=QUESTION, **context):
    """The agent `name` answers with `script` as the model's replies, every one used: (its
    answer, the requests it sent, the queries it searched with)."""
    llm = ScriptedLLM(script, usage=USAGE)
    retriever = retriever or FakeRetriever(CHUNKS)
    system = SYSTEMS[name](SystemContext(llm=llm, articles=ARTICLES, retriever=retriever,
                                         **context))
    answer = system.answer(question)
    assert not llm.script, "the agent made fewer calls than scripted"
    # the steps are the answer: its calls, its retrievals, its text
    assert [c for s in answer.steps for c in s.calls] == answer.calls
    assert answer.retrievals == sum(s.kind == "search" for s in answer.steps) == len(
        retriever.queries)
    assert answer.text == next(s.text for s in reversed(answer.steps) if s.kind == "answer")
    return answer, llm.requests, retriever.queries


def searched(answer):
    return [s.query for s in answer.steps if s.kind == "search"]


def test_every_agent_is_registered_bounded_and_retrieving():
    for name in AGENTS:
        assert uses_steps(SYSTEMS[name]) and SYSTEMS[name].uses_index, name
        built = SYSTEMS[name](SystemContext(ScriptedLLM([]), ARTICLES, max_steps=7))
        assert call_shape(built).steps[1] == 7, name  # the most calls follow the context's bound


# ------------------------------------------------------------------ the searches each makes

THOUGHT = "The Velmora bridge was built by Ostrava Line engineers."


@pytest.mark.parametrize("name, script, queries, kinds", [
    pytest.param("react", [search("Velmora bridge"), search("Velmora spans"), "Nine."],
                 ["Velmora bridge", "Velmora spans"], ["search", "search", "answer"],
                 id="react"),
    pytest.param("react", [ToolReply("answer", '{"text": "Nine."}')], [], ["answer"],
                 id="react-answers-without-searching"),
    pytest.param("iterative", [reason(THOUGHT, True), reason("So nine spans.", False), "Nine."],
                 [QUESTION.text, THOUGHT],
                 ["search", "reason", "search", "reason", "answer"], id="iterative"),
    pytest.param("decompose", [split("Where is Velmora?", "How many spans?"), "In Ost.",
                               "Nine.", "Nine."],
                 ["Where is Velmora?", "How many spans?"],
                 ["reason", "search", "reason", "search", "reason", "answer"], id="decompose"),
    pytest.param("decompose", [split(), "Nine."], [QUESTION.text], ["reason", "search", "answer"],
                 id="decompose-none-needed"),
])
def test_each_agent_makes_exactly_the_searches_scripted(name, script, queries, kinds):
    answer, requests, asked = run_agent(name, script)
    assert asked == queries == searched(answer)
    assert [s.kind for s in answer.steps] == kinds
    assert len(answer.calls) == len(script) and answer.stopped is None
    assert answer.text == "Nine." and answer.details["decision"] is None
    assert all(s.retrieved == tuple(CHUNKS) for s in answer.steps if s.kind == "search")


def test_react_tells_the_model_what_each_search_found():
    answer, requests, _ = run_agent("react", [search("Velmora bridge"), "Nine."])
    first, second = requests
    assert first["tools"][0]["function"]["name"] == "search"  # first: a dry run's high calls it
    assert first["tool_choice"] == "auto" and first["messages"][0]["content"] == REACT_PROMPT
    call, observed = second["messages"][-2:]
    assert call["tool_calls"][0]["function"] == {"name": "search",
                                                 "arguments": '{"query": "Velmora bridge"}'}
    assert observed == {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"],
                        "content": "\n\n".join(c.text for c in CHUNKS)}
    assert [r["title"] for r in answer.details["retrieved"]] == [c.title for c in CHUNKS]


def test_react_cuts_observations_to_share_the_window():
    long = [RetrievedChunk("Velmora", i, "Title: Velmora\n" + "granite arches " * 400, 0.9 - i / 10)
            for i in range(3)]
    script = [search("Velmora bridge"), search("Velmora arches"), "Nine."]
    _, requests, _ = run_agent("react", script, FakeRetriever(long), context_tokens=4096)
    observed = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    # each search gets its share of the room: less than one whole chunk here, but some of it
    assert len(observed) == 2 and all(long[0].text[:100] in text for text in observed)
    assert all(len(text) < len(long[0].text) for text in observed)
    sent = count_messages(requests[-1]["messages"], "gpt-4", requests[-1]["tools"])
    assert sent + ANSWER_MAX_TOKENS <= 4096 * 0.9  # with room for the answer


# ------------------------------------------------------------------ two articles, both found

CORPUS = {
    "Velmora Bridge": RetrievedChunk("Velmora Bridge", 0, "Title: Velmora Bridge\nThe Velmora "
                                     "bridge opened in 2023 with nine spans.", 0.8),
    "Kettering Comet": RetrievedChunk("Kettering Comet", 0, "Title: Kettering Comet\nThe "
                                      "Kettering comet was first seen in 2024.", 0.7),
}
BOTH = Question("q2", "Did the Velmora bridge open before the Kettering comet was first seen?",
                None)


class TitleRetriever(FakeRetriever):
    """Finds an article's chunk when the query names its first word: a question that needs two
    articles is answered only by searching for each."""

    def retrieve(self, query):
        self.queries.append(query)
        return [chunk for title, chunk in CORPUS.items() if title.split()[0].lower() in
                query.lower() and query != BOTH.text]


@pytest.mark.parametrize("name, script", [
    pytest.param("react", [search("Velmora bridge opening"), search("Kettering comet seen"),
                           "Yes."], id="react"),
    pytest.param("iterative", [reason("The Velmora bridge opened in 2023.", True),
                               reason("The Kettering comet was seen in 2024.", True),
                               reason("So the bridge opened first.", False), "Yes."],
                 id="iterative"),
    pytest.param("decompose", [split("When did the Velmora bridge open?",
                                     "When was the Kettering comet seen?"),
                               "In 2023.", "In 2024.", "Yes."], id="decompose"),
])
def test_a_two_article_question_finds_both_articles(name, script):
    answer, requests, _ = run_agent(name, script, TitleRetriever([]), BOTH)
    found = {c.title for s in answer.steps if s.kind == "search" for c in s.retrieved}
    assert found == set(CORPUS)
    assert {r["title"] for r in answer.details["retrieved"]} == set(CORPUS)
    final = json.dumps(requests[-1]["messages"])  # the answer saw both
    assert all(json.dumps(chunk.text)[1:-1] in final for chunk in CORPUS.values())


# ------------------------------------------------------------------ the bounds

def never_answering(name, max_steps):
    """A script that keeps searching until the bound, then the closing answer."""
    loop = {"react": [search(f"query {i}") for i in range(max_steps - 1)],
            "iterative": [reason(f"thought {i}", True) for i in range(max_steps - 1)],
            "decompose": [split(*(f"sub {i}?" for i in range(max_steps)))]
            + [f"note {i}" for i in range(max_steps - 2)],
            "router": [route(True, True)] + [search(f"query {i}") for i in range(max_steps - 2)]}
    return loop[name] + ["Closing."]


@pytest.mark.parametrize("max_steps", [3, 5, 8])
@pytest.mark.parametrize("name", AGENTS)
def test_an_agent_that_never_answers_stops_at_max_steps(name, max_steps):
    answer, requests, queries = run_agent(name, never_answering(name, max_steps),
                                          max_steps=max_steps)
    assert len(answer.calls) == len(requests) == max_steps
    assert answer.stopped == "max_steps" and answer.text == "Closing."
    assert requests[-1]["tools"] is None  # the closing call offers no tool
    assert all(r["max_tokens"] for r in requests)  # every call bounded in output too
    expected = {"react": [f"query {i}" for i in range(max_steps - 1)],
                "iterative": [QUESTION.text] + [f"thought {i}" for i in range(max_steps - 1)],
                "decompose": [f"sub {i}?" for i in range(max_steps - 2)],
                "router": [f"query {i}" for i in range(max_steps - 2)]}[name]
    assert queries == expected
    high, = {call_shape(SYSTEMS[name](SystemContext(ScriptedLLM([]), ARTICLES,
                                                    max_steps=max_steps))).steps[1]}
    assert high == max_steps


@pytest.mark.parametrize("name", AGENTS)
def test_with_one_step_an_agent_only_makes_its_closing_answer(name):
    answer, requests, queries = run_agent(name, ["Closing."], max_steps=1)
    assert answer.stopped == "max_steps" and [s.kind for s in answer.steps][-1] == "answer"
    assert len(requests) == 1 and requests[0]["tools"] is None


@pytest.mark.parametrize("name, script, queries", [
    pytest.param("react", [search("a"), search("b"), "Closing."], ["a", "b"], id="react"),
    pytest.param("iterative", [reason("a", True), reason("b", True), "Closing."],
                 [QUESTION.text, "a", "b"], id="iterative"),
    pytest.param("decompose", [split("a", "b", "c"), "note a", "Closing."], ["a"],
                 id="decompose"),
    pytest.param("router", [route(True, True), search("a"), "Closing."], ["a"], id="router"),
])
def test_a_spent_token_budget_makes_the_next_call_the_closing_answer(name, script, queries):
    """Two calls spend the budget: the third is the closing one, at most one call past it."""
    answer, requests, asked = run_agent(name, script, token_budget=2 * CALL)
    assert asked == queries and len(answer.calls) == 3
    assert answer.stopped == "budget" and answer.text == "Closing."
    assert requests[-1]["tools"] is None


@pytest.mark.parametrize("budget", [None, 10 * CALL])
def test_a_budget_not_reached_leaves_max_steps_the_bound(budget):
    answer, requests, _ = run_agent("react", never_answering("react", 5), token_budget=budget)
    assert answer.stopped == "max_steps" and len(requests) == 5


# ------------------------------------------------------------------ replies they cannot use

@pytest.mark.parametrize("reply", [
    pytest.param(ToolReply("search", '{"query": "Velmora'), id="broken-json"),
    pytest.param(ToolReply("lookup", '{"query": "Velmora"}'), id="unknown-tool"),
    pytest.param(ToolReply("search", "{}"), id="missing-query"),
    pytest.param(ToolReply("search", '{"query": "  "}'), id="blank-query"),
    pytest.param(ToolReply("search", '["Velmora"]'), id="not-an-object"),
    pytest.param(ToolReply("answer", '{"answer": "Nine."}'), id="answer-without-text"),
    pytest.param("", id="empty-reply"),
])
def test_react_counts_an_unusable_reply_as_a_turn_and_tells_the_model(reply):
    answer, requests, queries = run_agent("react", [reply, "Nine."])
    assert queries == [] and answer.text == "Nine." and answer.stopped is None
    assert [s.kind for s in answer.steps] == ["reason", "answer"]
    assert answer.steps[0].text == (reply.arguments if isinstance(reply, ToolReply) else "")
    assert answer.details["unusable"] == 1
    told = requests[1]["messages"][-1]
    assert told["role"] == "user" and told["content"].startswith(UNUSABLE_REPLY.split("(")[0])


def test_react_that_only_sends_unusable_replies_still_stops_at_max_steps():
    garbage = ToolReply("search", "{")
    answer, requests, _ = run_agent("react", [garbage] * 4 + ["Closing."])
    assert answer.stopped == "max_steps" and answer.details["unusable"] == 4
    assert len(requests) == 5


@pytest.mark.parametrize("reply", [
    pytest.param(ToolReply("reason_step", '{"thought": "x", "search_again": tru'),
                 id="broken-json"),
    pytest.param(ToolReply("search", '{"query": "x"}'), id="other-function"),
    pytest.param(ToolReply("reason_step", '{"thought": "x"}'), id="missing-search-again"),
    pytest.param(ToolReply("reason_step", '{"thought": "x", "search_again": "yes"}'),
                 id="search-again-not-boolean"),
    pytest.param(ToolReply("reason_step", '{"search_again": true}'), id="missing-thought"),
    pytest.param("I think it has nine spans.", id="text"),
])
def test_iterative_ends_its_search_at_an_unusable_reasoning_reply(reply):
    answer, requests, queries = run_agent("iterative", [reply, "Nine."])
    assert queries == [QUESTION.text] and answer.stopped is None
    assert [s.kind for s in answer.steps] == ["search", "reason", "answer"]
    assert answer.steps[1].text == (reply.arguments if isinstance(reply, ToolReply) else reply)
    assert extracts_in(requests[1]) and answer.details["thoughts"] == []


@pytest.mark.parametrize("reply", [
    pytest.param(ToolReply("sub_questions", '{"sub_questions": ["a"'), id="broken-json"),
    pytest.param(ToolReply("route_question", '{"sub_questions": ["a"]}'), id="other-function"),
    pytest.param(ToolReply("sub_questions", '{"sub_questions": "a"}'), id="not-a-list"),
    pytest.param(ToolReply("sub_questions", '{"sub_questions": ["a", 3]}'), id="not-text"),
    pytest.param(ToolReply("sub_questions", '{"sub_questions": ["a", " "]}'), id="blank"),
    pytest.param(ToolReply("sub_questions", '{}'), id="missing-list"),
    pytest.param("Where is Velmora?", id="text"),
])
def test_decompose_takes_an_unusable_split_as_none_needed(reply):
    answer, requests, queries = run_agent("decompose", [reply, "Nine."])
    assert queries == [QUESTION.text] and answer.details["sub_questions"] is None
    assert [s.kind for s in answer.steps] == ["reason", "search", "answer"]
    assert extracts_in(requests[1]) and answer.stopped is None


# ------------------------------------------------------------------ the router

@pytest.mark.parametrize("decision, label, script, queries, roles", [
    pytest.param(route(False, False), "no-retrieve", ["Eight."], [], ["decision", "answer"],
                 id="no-retrieve"),
    pytest.param(route(True, False), "one-retrieval", ["Nine."], [QUESTION.text],
                 ["decision", "answer"], id="one-retrieval"),
    pytest.param(route(True, True), "multi-step", [search("Velmora"), "Nine."], ["Velmora"],
                 ["decision", "answer", "answer"], id="multi-step"),
    pytest.param(route(False, True), "multi-step", ["Nine."], [], ["decision", "answer"],
                 id="multi-step-whatever-retrieve-says"),
    *[pytest.param(reply, "none", ["Eight."], [], ["decision", "answer"], id=f"none-{case}")
      for case, reply in (("broken-json", ToolReply("route_question", '{"retrieve": tr')),
                          ("missing-multi-step", ToolReply("route_question", '{"retrieve": true}')),
                          ("not-boolean", ToolReply("route_question",
                                                    '{"retrieve": 1, "multi_step": 0}')),
                          ("other-function", ToolReply("search", '{"query": "x"}')),
                          ("text", "Eight."))],
])
def test_the_router_follows_its_route(decision, label, script, queries, roles):
    answer, requests, asked = run_agent("router", [decision, *script])
    assert asked == queries and [r["role"] for r in requests] == roles
    assert answer.details["decision"] == label and answer.steps[0].kind == "decide"
    assert answer.steps[0].text == label and answer.steps[0].calls == (answer.calls[0],)
    assert requests[0]["messages"][0]["content"] == ROUTER_PROMPT
    assert requests[0]["tool_choice"] == "route_question"
    second = requests[1]["messages"][0]["content"]
    if label in ("no-retrieve", "none"):
        assert second == ANSWER_PROMPT and answer.text == "Eight." and requests[1]["tools"] is None
        assert "retrieved" not in answer.details  # as a system that did not retrieve
    elif label == "one-retrieval":
        assert extracts_in(requests[1]) and requests[1]["tools"] is None
    else:
        assert second == REACT_PROMPT and requests[1]["tool_choice"] == "auto"
    assert answer.stopped is None and answer.text == script[-1]


# ------------------------------------------------------------------ the dry run and the live run

def estimated_calls(tmp_path, name, max_steps):
    """The dry run's [low, high] calls per role (the judge's aside) of one answer of `name`."""
    write_dataset(tmp_path, 1)
    dataset = load_dataset(tmp_path / "questions.jsonl", tmp_path / "articles.jsonl")
    config = RunConfig(out=tmp_path / "run", systems=(name,), probe=None, max_steps=max_steps)
    jobs = make_plan(dataset, config, [], None).jobs(
        SYSTEMS, StandInRetriever(dataset.articles, 1024, 48, 2))
    result = estimate(LLMClient(load_settings(None)), jobs, {}, observed={})
    rows = [row for row in result["rows"] if row["role"] != "judge"]
    assert all(row["cached_calls"] == [0, 0] for row in rows)  # no call of the walk repeats
    return {row["role"]: row["calls"] for row in rows}


@pytest.mark.parametrize("max_steps", [3, 5])
@pytest.mark.parametrize("name", AGENTS)
def test_the_dry_run_spans_an_agent_s_fewest_and_most_calls(tmp_path, fake, name, max_steps):
    shape = call_shape(SYSTEMS[name](SystemContext(ScriptedLLM([]), ARTICLES,
                                                   max_steps=max_steps)))
    assert estimated_calls(tmp_path, name, max_steps) == {
        role: list(span) for role, span in shape.calls.items()}
    assert shape.steps[1] == max_steps and fake.calls == 0


def test_a_live_run_of_every_agent_records_a_step_for_every_call(tmp_path, fake_server):
    """react searches twice, then answers; iterative (the fake fills search_again true) runs to
    its bound; decompose (an empty list) searches once; router (both booleans true) hands over
    to react, which searches twice."""
    fake_server(reply=searches_then_answers(2))
    q, a = write_dataset(tmp_path, 2)
    assert main(["run", "--questions", str(q), "--articles", str(a), "--out",
                 str(tmp_path / "run"), "--systems", ",".join(AGENTS), "--no-probe"]) == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 2 * len(AGENTS) and all(row["status"] == "ok" for row in rows)
    expected = {"react": (["search", "search", "answer"], None),
                "iterative": (["search", *["reason", "search"] * 4, "answer"], "max_steps"),
                "decompose": (["reason", "search", "answer"], None),
                "router": (["decide", "search", "search", "answer"], None)}
    for row in rows:
        kinds, stopped = expected[row["system"]]
        assert [step["kind"] for step in row["steps"]] == kinds, row["system"]
        assert row.get("stopped") == stopped
        made = [call for call in row["calls"] if call["role"] != "judge"]
        assert sum(step["calls"] for step in row["steps"]) == len(made)
        assert row["retrievals"] == kinds.count("search")
        by_role: dict[str, int] = {}  # the steps' tokens are the calls' made
        for step in row["steps"]:
            for role, usage in step["usage"].items():
                by_role[role] = by_role.get(role, 0) + usage["input"] + usage["output"]
        assert by_role == {role: sum(c["usage"]["input"] + c["usage"]["output"]
                                     for c in made if c["role"] == role)
                           for role in {c["role"] for c in made}}
    iterative = next(row for row in rows if row["system"] == "iterative")
    assert [s["repeated"] for s in iterative["steps"] if s["kind"] == "search"] == [
        False, False, True, True, True]  # the fake thinks "x" each time

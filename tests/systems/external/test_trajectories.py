"""The trajectory a system outside freshrag brings (systems/external/trajectory.py): `steps` or
an agent's OpenAI `messages` in a service's reply or an answers file's column, and Ragas'
multi-turn samples, each made into the answer's steps; every bad trajectory named by its field
and where it came from. The Ragas files beside this module are what ragas 0.4.3 wrote
(`EvaluationDataset.to_jsonl`, `to_pandas().to_csv(index=False)`) for two MultiTurnSamples."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.core.types import Question, RetrievedChunk, Step, SystemContext
from freshrag.llm.client import EndpointError
from freshrag.systems.external.answers_file import AnswersFileError, factory, load_answers
from freshrag.systems.external.http import HttpSettings, HttpSystem, settings_from_table
from freshrag.systems.external.trajectory import (
    TrajectoryError,
    conversation_ends,
    reported_steps,
    steps_from,
    steps_from_messages,
)
from tests.support.datasets import write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer

HERE = Path(__file__).parent
QUESTIONS = [Question(id=f"q{i}", text=f"How many bridges does Town {i} have?",
                      gold_title=f"Town {i}") for i in range(1, 4)]
STEPS = [{"kind": "decide", "text": "retrieve"},
         {"kind": "search", "query": "Town 1 bridges",
          "retrieved": [{"title": "Town 1", "index": 2, "score": 0.9}]},
         {"kind": "read", "title": "Town 1"},
         {"kind": "answer", "text": "Four bridges."}]


def call(call_id, name, arguments):
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def agent_messages(town=1):
    """What an OpenAI agent's conversation holds: two searches in one turn (their results
    returned out of order), then the answer."""
    return [
        {"role": "system", "content": "Answer with the wiki's search tool."},
        {"role": "user", "content": f"How many bridges does Town {town} have?"},
        {"role": "assistant", "content": None, "tool_calls": [
            call("c1", "search_wiki", {"query": f"Town {town} bridges"}),
            call("c2", "search_wiki", {"q": f"bridges of Town {town}", "k": 3})]},
        {"role": "tool", "tool_call_id": "c2", "content": json.dumps(
            {"results": [{"title": "Bridges", "index": 0, "score": 0.4}]})},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(
            [{"title": f"Town {town}", "index": 1, "score": 0.8, "text": "Four bridges."},
             {"title": "River", "index": 0, "score": 0.5}])},
        {"role": "assistant", "content": f"Town {town} has four bridges."}]


def chunk(title, index, score, text=""):
    return RetrievedChunk(title, index, text, score)


AGENT_STEPS = [
    Step("search", query="Town 1 bridges",
         retrieved=(chunk("Town 1", 1, 0.8, "Four bridges."), chunk("River", 0, 0.5))),
    Step("search", query="bridges of Town 1", retrieved=(chunk("Bridges", 0, 0.4),)),
    Step("answer", text="Town 1 has four bridges.")]


# --- the converter ---------------------------------------------------------------------------

def test_steps_in_the_rows_shape_become_steps_and_a_rows_own_fields_are_ignored():
    row_step = {**STEPS[1], "repeated": False, "calls": 2, "usage": {}, "latency_s": 1.5}
    assert steps_from([STEPS[0], row_step, *STEPS[2:]]) == [
        Step("decide", text="retrieve"),
        Step("search", query="Town 1 bridges", retrieved=(chunk("Town 1", 2, 0.9),)),
        Step("read", title="Town 1"), Step("answer", text="Four bridges.")]


def test_an_openai_conversation_becomes_its_searches_and_answer():
    assert steps_from_messages(agent_messages()) == AGENT_STEPS


@pytest.mark.parametrize("messages, expected", [
    pytest.param([{"role": "assistant", "content": "Let me look.", "tool_calls": [
        call("a", "search", {"search_query": "x"})]}, {"role": "tool", "content": "[]"},
        {"role": "assistant", "content": "Done."}],
        [Step("reason", text="Let me look."), Step("search", query="x"),
         Step("answer", text="Done.")], id="text-beside-calls-is-reason"),
    pytest.param([{"role": "assistant", "tool_calls": [call("a", "fetch", {"input": "x"})]},
                  {"role": "tool", "tool_call_id": "a", "content": "plain text, no titles"}],
                 [Step("search", query="x")], id="result-not-json-no-chunks"),
    pytest.param([{"role": "assistant", "tool_calls": [call("a", "find", {"query": "x"})]},
                  {"role": "tool", "tool_call_id": "a",
                   "content": '[{"title": "T", "score": 1}, {"text": "untitled"}]'}],
                 [Step("search", query="x")], id="a-result-without-titles-no-chunks"),
    pytest.param([{"role": "assistant", "tool_calls": [call("a", "find", {"query": "x"})]},
                  {"role": "tool", "tool_call_id": "a",
                   "content": '[{"title": "T"}, {"title": "U", "score": 0.5}]'}],
                 [Step("search", query="x", retrieved=(chunk("T", 0, 0.0), chunk("U", 1, 0.5)))],
                 id="index-its-place-score-0-where-not-given"),
    pytest.param([{"role": "assistant", "tool_calls": [
        call("a", "open_page", {"title": "Town 1"}), call("b", "add", {"a": 1, "b": 2})]}],
        [Step("read", title="Town 1"), Step("reason", text='add({"a": 1, "b": 2})')],
        id="title-is-read-other-call-is-reason"),
    pytest.param([{"type": "ai", "content": "", "tool_calls": [
        {"name": "calc", "args": {"x": {1}}}]}], [Step("reason", text='calc({"x": "{1}"})')],
        id="arguments-json-cannot-hold"),
    pytest.param([{"role": "assistant", "content": "Thinking."},
                  {"role": "user", "content": "Go on."},
                  {"role": "assistant", "content": [{"type": "text", "text": "Four."}]}],
                 [Step("reason", text="Thinking."), Step("answer", text="Four.")],
                 id="earlier-text-is-reason-content-parts-read"),
    pytest.param([{"role": "assistant", "tool_calls": [
        {"id": "a", "function": {"name": "search", "arguments": {"query": "x"}}}]}],
        [Step("search", query="x")], id="arguments-as-an-object"),
    pytest.param([{"type": "ai", "content": "", "tool_calls": [
        {"name": "search", "args": {"query": "a"}}, {"name": "search", "args": {"query": "b"}}]},
        {"type": "tool", "content": '[{"title": "A"}]'},
        {"type": "tool", "content": '[{"title": "B"}]'}, {"type": "ai", "content": "AB."}],
        [Step("search", query="a", retrieved=(chunk("A", 0, 0.0),)),
         Step("search", query="b", retrieved=(chunk("B", 0, 0.0),)), Step("answer", text="AB.")],
        id="ragas-results-answer-calls-in-order"),
])
def test_conversion_rules(messages, expected):
    assert steps_from_messages(messages) == expected


@pytest.mark.parametrize("steps, messages, expected", [
    pytest.param({"kind": "search"}, None, r"^steps must be a list of step objects",
                 id="steps-not-list"),
    pytest.param(["search"], None, r"^steps\[0\] must be a step object", id="step-not-object"),
    pytest.param([{"kind": "plan"}], None, r"^steps\[0\].kind 'plan' is not one of decide, "
                 r"search, read, reason, answer", id="unknown-kind"),
    pytest.param([{"kind": "search", "query": 3}], None,
                 r"^steps\[0\].query must be text or null", id="query-not-text"),
    pytest.param([{"kind": "search", "retrieved": [{"title": "T", "score": "high"}]}], None,
                 r"^steps\[0\].retrieved\[0\] must be \{title: text", id="bad-chunk"),
    pytest.param([{"kind": "answer", "answer": "x"}], None,
                 r"^steps\[0\]: unknown field\(s\) \['answer'\]", id="unknown-step-field"),
    pytest.param(None, {"role": "user"}, r"^messages must be a list of message objects",
                 id="messages-not-list"),
    pytest.param(None, [{"content": "hi"}], r"^messages\[0\] must be an object with a role",
                 id="message-without-role"),
    pytest.param(None, ["hi"], r"^messages\[0\] must be an object with a role",
                 id="message-not-object"),
    pytest.param(None, [{"role": "assistant", "tool_calls": {"id": "a"}}],
                 r"^messages\[0\].tool_calls must be a list", id="tool-calls-not-list"),
    pytest.param(None, [{"role": "assistant", "tool_calls": [
        {"id": "a", "function": {"name": "search", "arguments": "{query: x"}}]}],
        r"^messages\[0\].tool_calls\[0\].function.arguments is not JSON: '\{query: x'",
        id="arguments-not-json"),
    pytest.param(None, [{"role": "assistant", "tool_calls": [
        {"function": {"name": "s", "arguments": "[1]"}}]}],
        r"^messages\[0\].tool_calls\[0\].function.arguments must be a JSON object",
        id="arguments-not-object"),
    pytest.param(None, [{"role": "assistant", "tool_calls": [{"id": "a"}]}],
                 r"^messages\[0\].tool_calls\[0\] must be an object with a function's name",
                 id="call-without-name"),
    pytest.param(None, [{"role": "assistant", "content": 4}],
                 r"^messages\[0\].content must be text or a list of content parts",
                 id="content-not-text"),
    pytest.param(STEPS, [], r"^gives both steps and messages", id="both"),
])
def test_a_bad_trajectory_is_named_by_its_field(steps, messages, expected):
    with pytest.raises(TrajectoryError, match=expected):
        reported_steps(steps, messages)


# --- a service -------------------------------------------------------------------------------

def service(reply):
    return lambda request, headers: {"json": reply}


def ask(server, settings=None, question=QUESTIONS[0]):
    settings = settings or HttpSettings("agent", f"http://127.0.0.1:{server.port}/agent")
    return HttpSystem(SystemContext(llm=None, articles={}), settings).answer(question)


def test_a_service_replying_steps_gives_the_answer_its_steps():
    reply = {"answer": "Four bridges.", "steps": STEPS,
             "usage": {"input_tokens": 300, "output_tokens": 20}}
    with FakeOpenAIServer(services={"/agent": service(reply)}) as server:
        answer = ask(server)
    assert [step.kind for step in answer.steps] == ["decide", "search", "read", "answer"]
    assert answer.steps[1].retrieved == (chunk("Town 1", 2, 0.9),)
    assert all(step.calls == () for step in answer.steps)  # the tokens are the reply's usage
    assert len(answer.calls) == 1 and answer.retrievals == 1  # its one search


def test_a_service_replying_an_agents_messages_gives_its_searches_and_answer():
    reply = {"answer": "Town 1 has four bridges.", "messages": agent_messages()}
    with FakeOpenAIServer(services={"/agent": service(reply)}) as server:
        answer = ask(server)
    assert answer.steps == AGENT_STEPS
    assert answer.retrievals == 2 and "retrievals" not in answer.details["unknown"]


def test_a_services_trajectory_may_live_at_a_configured_path_or_be_left_out():
    reply = {"answer": "x", "trace": {"log": agent_messages()}, "messages": "not a trajectory"}
    with FakeOpenAIServer(services={"/agent": service(reply)}) as server:
        url = f"http://127.0.0.1:{server.port}/agent"
        settings = settings_from_table("agent", {"url": url, "reply": {
            "messages": "trace.log"}}, "freshrag.toml")
        assert ask(server, settings).steps == AGENT_STEPS
        ignored = settings_from_table("agent", {"url": url, "reply": {"messages": ""}}, "f")
        assert ask(server, ignored).steps == []


@pytest.mark.parametrize("reply, expected", [
    pytest.param({"answer": "x", "steps": "search then answer"},
                 r"steps must be a list of step objects", id="steps-not-list"),
    pytest.param({"answer": "x", "steps": [{"kind": "think"}]},
                 r"steps\[0\].kind 'think' is not one of", id="unknown-kind"),
    pytest.param({"answer": "x", "messages": [{"role": "assistant", "tool_calls": [
        {"function": {"name": "s", "arguments": "{bad"}}]}]},
        r"messages\[0\].tool_calls\[0\].function.arguments is not JSON", id="arguments"),
    pytest.param({"answer": "x", "trace": {"log": [{"content": "no role"}]}},
                 r"trace.log\[0\] must be an object with a role", id="configured-path-named"),
])
def test_a_bad_trajectory_fails_the_pair_naming_the_field_and_the_service(reply, expected):
    with FakeOpenAIServer(services={"/agent": service(reply)}) as server:
        url = f"http://127.0.0.1:{server.port}/agent"
        settings = settings_from_table("agent", {"url": url, "reply": {
            "messages": "trace.log" if "trace" in reply else "messages"}}, "f")
        with pytest.raises(EndpointError, match=expected) as caught:
            ask(server, settings)
    assert str(caught.value).startswith(f"system 'agent' at {url}: ")


# --- an answers file -------------------------------------------------------------------------

def replay(answers, question):
    return factory(answers)(SystemContext(llm=None, articles={})).answer(question)


def write_csv(path, columns, rows):
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def test_an_answers_file_with_a_messages_column_in_jsonl_and_csv(tmp_path):
    jsonl = tmp_path / "agent.jsonl"
    jsonl.write_text(json.dumps({"id": "q1", "answer": "Four.", "messages": agent_messages()})
                     + "\n" + json.dumps({"id": "q2", "answer": "Five.", "steps": STEPS}) + "\n",
                     encoding="utf-8")
    by_jsonl = load_answers(jsonl, QUESTIONS, "agent")
    assert replay(by_jsonl, QUESTIONS[0]).steps == AGENT_STEPS
    assert [s.kind for s in replay(by_jsonl, QUESTIONS[1]).steps] == [
        "decide", "search", "read", "answer"]
    table = write_csv(tmp_path / "agent.csv", ["question", "answer", "messages"],
                      [[QUESTIONS[0].text, "Four.", json.dumps(agent_messages())],
                       [QUESTIONS[1].text, "Five.", ""]])
    by_csv = load_answers(table, QUESTIONS, "agent")
    first = replay(by_csv, QUESTIONS[0])
    assert first.steps == AGENT_STEPS and first.retrievals == 2
    second = replay(by_csv, QUESTIONS[1])
    assert second.steps == [] and second.retrievals is None  # an empty cell: none reported


@pytest.mark.parametrize("name", ["ragas_multi_turn.jsonl", "ragas_multi_turn.csv"])
def test_ragas_multi_turn_samples_import_as_ragas_writes_them(tmp_path, name):
    answers = load_answers(HERE / name, QUESTIONS, "ragas")
    assert answers.rules == {"question text": 2} and answers.unanswered == ["q3"]
    answer = replay(answers, QUESTIONS[1])
    assert answer.text == "Town 2 has 5 bridges."
    assert answer.steps == [
        Step("reason", text="I will search the wiki."),
        Step("search", query="Town 2 bridges", retrieved=(chunk("Town 2", 3, 0.82),)),
        Step("search", query="bridges of Town 2"), Step("answer", text="Town 2 has 5 bridges.")]
    assert answer.retrievals == 2 and answer.details["reference"] == "5 bridges."
    assert answer.details["reference_tool_calls"] == [{"name": "search",
                                                       "args": {"query": "Town 2"}}]
    assert conversation_ends(json.loads((HERE / "ragas_multi_turn.jsonl").read_text(
        encoding="utf-8").splitlines()[0])["user_input"], "user_input") == (
        QUESTIONS[0].text, "Town 1 has 4 bridges.")


RAGAS_TURN = [{"content": QUESTIONS[0].text, "type": "human"},
              {"content": "Four.", "type": "ai"}]


@pytest.mark.parametrize("row, expected", [
    pytest.param({"id": "q1", "answer": "x", "messages": {"role": "user"}},
                 r"a.jsonl:1: messages must be a list of message objects", id="messages-not-list"),
    pytest.param({"id": "q1", "answer": "x", "steps": [{"kind": "look"}]},
                 r"a.jsonl:1: steps\[0\].kind 'look' is not one of", id="unknown-kind"),
    pytest.param({"id": "q1", "answer": "x", "messages": [{"role": "assistant", "tool_calls": [
        call("a", "s", {})], "content": None}, {"role": "assistant", "tool_calls": "a"}]},
        r"a.jsonl:1: messages\[1\].tool_calls must be a list", id="tool-calls-not-list"),
    pytest.param({"user_input": [{"content": QUESTIONS[0].text}, *RAGAS_TURN[1:]]},
                 r"a.jsonl:1: user_input\[0\] must be an object with a role", id="ragas-no-type"),
    pytest.param({"user_input": RAGAS_TURN, "messages": []},
                 r"a.jsonl:1: gives its trajectory twice", id="ragas-and-messages"),
    pytest.param({"user_input": RAGAS_TURN[:1]},
                 r"a.jsonl:1: no answer text at user_input's last ai message", id="ragas-no-ai"),
    pytest.param({"user_input": [RAGAS_TURN[0], {"type": "ai", "content": "x", "tool_calls": [
        {"name": "search", "args": "{not json"}]}]},
        r"a.jsonl:1: user_input\[1\].tool_calls\[0\].args is not JSON", id="ragas-args"),
])
def test_a_bad_trajectory_in_an_answers_file_is_named_by_file_line_and_field(tmp_path, row,
                                                                              expected):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(AnswersFileError, match=expected):
        load_answers(path, QUESTIONS, "a")


@pytest.mark.parametrize("cell, expected", [
    pytest.param("[{'role': 'user'", r"a.csv:2: messages is neither a JSON nor a Python list",
                 id="not-a-list"),
    pytest.param('[{"role": "assistant", "tool_calls": [{"function": {"name": "s", '
                 '"arguments": "nope"}}]}]',
                 r"a.csv:2: messages\[0\].tool_calls\[0\].function.arguments is not JSON",
                 id="arguments-not-json"),
])
def test_a_bad_messages_cell_is_named_by_file_line_and_field(tmp_path, cell, expected):
    path = write_csv(tmp_path / "a.csv", ["id", "answer", "messages"], [["q1", "x", cell]])
    with pytest.raises(AnswersFileError, match=expected):
        load_answers(path, QUESTIONS, "a")


# --- end to end ------------------------------------------------------------------------------

def agent_service(request, headers):
    town = request["question"].split("Town ")[1].split(" ")[0]
    return {"json": {"answer": f"Town {town} has four bridges.",
                     "messages": agent_messages(int(town))}}


def test_a_run_writes_the_trajectories_of_a_service_and_an_answers_file(tmp_path, fake_server):
    server = fake_server(services={"/agent": agent_service, "/broken": service(
        {"answer": "x", "messages": [{"content": "a message without a role"}]})})
    questions, articles = write_dataset(tmp_path / "data", n=2)
    ragas = tmp_path / "ragas.jsonl"
    ragas.write_text("".join(json.dumps({"user_input": [
        {"content": f"How many bridges does Town {i} have?", "type": "human"},
        {"content": "", "type": "ai", "tool_calls": [{"name": "search",
                                                      "args": {"query": f"Town {i}"}}]},
        {"content": json.dumps([{"title": f"Town {i}", "index": 0, "score": 0.7}]),
         "type": "tool"},
        {"content": "Some bridges.", "type": "ai"}]}) + "\n" for i in range(2)),
        encoding="utf-8")
    base = f"http://127.0.0.1:{server.port}"
    specs = f"agent={base}/agent,theirs={ragas},broken={base}/broken"
    assert main(["run", "--questions", str(questions), "--articles", str(articles), "--out",
                 str(tmp_path / "run"), "--systems", specs, "--no-probe"]) == 1  # broken's pairs
    rows = {(row["system"], row["question"]): row
            for row in read_samples(tmp_path / "run" / "samples.jsonl")}
    broken = [rows.pop(key) for key in list(rows) if key[0] == "broken"]
    assert [row["status"] for row in broken] == ["failed", "failed"]
    assert broken[0]["error"].endswith(f"system 'broken' at {base}/broken: messages[0] must be "
                                       f"an object with a role (or Ragas' type human, ai or "
                                       f"tool), got {{'content': 'a message without a role'}}")
    assert "Traceback" not in broken[0]["error"]
    assert all(row["status"] == "ok" for row in rows.values()) and len(rows) == 4
    agent = [{k: step[k] for k in ("kind", "query", "retrieved", "text", "repeated", "calls")}
             for step in rows["agent", "How many bridges does Town 1 have?"]["steps"]]
    assert agent == [
        {"kind": "search", "query": "Town 1 bridges", "text": None, "repeated": False, "calls": 0,
         "retrieved": [{"title": "Town 1", "index": 1, "score": 0.8},
                       {"title": "River", "index": 0, "score": 0.5}]},
        {"kind": "search", "query": "bridges of Town 1", "text": None, "repeated": False,
         "calls": 0, "retrieved": [{"title": "Bridges", "index": 0, "score": 0.4}]},
        {"kind": "answer", "query": None, "retrieved": [], "text": "Town 1 has four bridges.",
         "repeated": False, "calls": 0}]
    theirs = rows["theirs", "How many bridges does Town 0 have?"]
    assert [(s["kind"], s["query"], s["retrieved"]) for s in theirs["steps"]] == [
        ("search", "Town 0", [{"title": "Town 0", "index": 0, "score": 0.7}]),
        ("answer", None, [])]
    assert theirs["answer"] == "Some bridges." and theirs["retrievals"] == 1

"""The run's endpoint for agent frameworks (harness/llm/forward.py;
docs/own-system.md#agents-of-your-own-langgraph-openai-agents-sdk): a session's requests are made by the run's client on the
answering thread and replied in OpenAI's shape; a request without the session's key, or of
another shape, is refused naming what is wrong; an error of the run's LLM reaches the framework
unretried and fails the pair or stops the run; a closed session serves nothing; the calls are
cached, counted and the pair's own. The openai SDK stands in for a framework here; LangGraph and
the Agents SDK run in tests/test_agent_examples.py."""

from __future__ import annotations

import http.client
import json
import threading

import openai
import pytest

from freshrag.core.dataset import Dataset
from freshrag.core.types import Article, Question, RetrievedChunk, SystemContext, Usage
from freshrag.cost.budget import BudgetExceeded
from freshrag.llm.cache import ResponseCache
from freshrag.llm.client import EndpointError
from freshrag.llm.forward import MAX_BODY, Endpoint
from freshrag.run.plan import CallRecorder, answer_and_grade
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import FakeRetriever, ScriptedLLM, ToolReply
from tests.support.llm import client

QUESTION = "How many spans does the Velmora bridge have?"
MESSAGES = [{"role": "user", "content": QUESTION}]
SEARCH = {"type": "function", "function": {"name": "search", "parameters": {
    "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}
CHUNK = RetrievedChunk("Velmora bridge", 0, "The Velmora bridge has seven spans.", 0.9)


def searches_once(request: dict) -> dict:
    """The model: a search first, then the answer once a tool result is in the conversation."""
    if any(message["role"] == "tool" for message in request["messages"]):
        return {"content": "Seven spans.", "usage": {"prompt_tokens": 40, "completion_tokens": 3}}
    return {"tool_call": {"name": "search", "arguments": {"query": "Velmora bridge"}},
            "usage": {"prompt_tokens": 30, "completion_tokens": 5}}


def framework(session) -> openai.OpenAI:
    return openai.OpenAI(base_url=session.base_url, api_key=session.api_key)


def react(session) -> str:
    """A framework's loop: ask, run the tool the model calls, ask again with its result."""
    sdk = framework(session)
    messages = list(MESSAGES)
    while True:
        reply = sdk.chat.completions.create(model="any", messages=messages, tools=[SEARCH])
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
        call = message.tool_calls[0]
        messages += [message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id,
                      "content": session.search(json.loads(call.function.arguments)["query"])}]


def context(llm, retriever=None) -> SystemContext:
    return SystemContext(llm=llm, articles={}, retriever=retriever,
                         endpoint=Endpoint(llm, retriever))


def test_a_text_reply_comes_back_in_openais_shape_and_is_an_answer_step():
    with FakeOpenAIServer(reply=lambda request: {"content": "Seven spans."}) as server:
        llm = client(server.base_url)
        with context(llm).endpoint("answer") as session:
            reply = session.run(lambda: framework(session).chat.completions.create(
                model="any", messages=MESSAGES, temperature=0.5, max_completion_tokens=40))
            answer = session.answer(reply.choices[0].message.content)
    assert server.calls == 1 and server.requests[0]["messages"] == MESSAGES
    assert (server.requests[0]["temperature"], server.requests[0]["max_tokens"]) == (0.5, 40)
    assert reply.choices[0].finish_reason == "stop" and reply.model == "fake-model"
    [call] = answer.calls
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == \
        (call.usage.input, call.usage.output) != (0, 0)
    assert answer.text == "Seven spans." and [s.kind for s in answer.steps] == ["answer"]
    assert answer.steps[0].calls == (call,) and answer.retrievals == 0


def test_a_tool_call_and_the_tool_result_go_through_to_the_model_and_are_steps():
    retriever = FakeRetriever([CHUNK])
    with FakeOpenAIServer(reply=searches_once) as server:
        with context(client(server.base_url), retriever).endpoint("answer") as session:
            text = session.run(lambda: react(session))
            answer = session.answer(text)
    first, second = server.requests
    assert first["tool_choice"] == "auto" and first["tools"] == [SEARCH]
    assistant, tool = second["messages"][1:]
    assert assistant["tool_calls"][0]["function"] == {"name": "search",
                                                      "arguments": '{"query": "Velmora bridge"}'}
    assert tool == {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"],
                    "content": CHUNK.text}
    assert text == "Seven spans." and retriever.queries == ["Velmora bridge"]
    assert [(s.kind, s.query) for s in answer.steps] == [
        ("reason", None), ("search", "Velmora bridge"), ("answer", None)]
    assert answer.steps[1].retrieved == (CHUNK,) and answer.retrievals == 1
    assert answer.usage_by_role() == {"answer": Usage(70, 8)}
    assert answer.details["decision"] == "retrieve"


@pytest.mark.parametrize("given, sent", [
    pytest.param("auto", "auto", id="auto"),
    pytest.param("none", "none", id="none"),
    pytest.param("required", "required", id="required"),
    pytest.param({"type": "function", "function": {"name": "search"}},
                 {"type": "function", "function": {"name": "search"}}, id="a-function"),
])
def test_tool_choice_reaches_the_model_as_the_framework_gave_it(given, sent):
    with FakeOpenAIServer() as server:
        with context(client(server.base_url)).endpoint("answer") as session:
            session.run(lambda: framework(session).chat.completions.create(
                model="any", messages=MESSAGES, tools=[SEARCH], tool_choice=given))
    assert server.requests[0]["tool_choice"] == sent


def post(session, body: bytes, key: str | None = None, path: str = "/v1/chat/completions",
         length: int | None = None) -> tuple[int, dict]:
    """A raw request to the session's endpoint: its status and JSON reply."""
    port = int(session.base_url.rsplit(":", 1)[1].split("/")[0])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.putrequest("POST", path)
    connection.putheader("Authorization", f"Bearer {key or session.api_key}")
    connection.putheader("Content-Length", str(len(body) if length is None else length))
    connection.endheaders(body)
    response = connection.getresponse()
    reply = (response.status, json.loads(response.read()))
    connection.close()
    return reply


def asked(session, body: dict) -> tuple[int, dict]:
    """`body` posted from the framework's side while the session runs."""
    return session.run(lambda: post(session, json.dumps(body).encode()))


BAD = {"messages": MESSAGES}
@pytest.mark.parametrize("body, field, says", [
    pytest.param([1], None, "not a JSON object", id="not-an-object"),
    pytest.param({}, "messages", "non-empty list", id="no-messages"),
    pytest.param({"messages": [{"content": "hi"}]}, "messages[0]", "role", id="no-role"),
    pytest.param({"messages": [{"role": "user", "content": 3}]}, "messages[0].content", "text",
                 id="content-number"),
    pytest.param({**BAD, "tools": {"name": "search"}}, "tools", "list", id="tools-object"),
    pytest.param({**BAD, "tools": [{"type": "function"}]}, "tools[0].function.name", "name",
                 id="tool-without-name"),
    pytest.param({**BAD, "tools": [SEARCH], "tool_choice": "any"}, "tool_choice", "auto",
                 id="tool-choice"),
    pytest.param({**BAD, "temperature": "warm"}, "temperature", "number", id="temperature"),
    pytest.param({**BAD, "max_tokens": 0}, "max_tokens", "whole number", id="max-tokens"),
    pytest.param({**BAD, "max_completion_tokens": 2.5}, "max_completion_tokens", "whole number",
                 id="max-completion-tokens"),
    pytest.param({**BAD, "top_p": 0.5}, "top_p", "not forwarded", id="unforwarded-field"),
    pytest.param({**BAD, "n": 2}, "n", "one choice", id="several-choices"),
    pytest.param({**BAD, "stream": True}, "stream", "streaming is not forwarded", id="stream"),
    pytest.param({**BAD, "stream": "yes"}, "stream", "true or false", id="stream-not-bool"),
])
def test_a_bad_body_is_refused_naming_its_field(body, field, says):
    with FakeOpenAIServer() as server:
        with context(client(server.base_url)).endpoint("answer") as session:
            status, reply = asked(session, body)
    assert status == 400 and reply["error"]["param"] == field and says in reply["error"]["message"]
    assert server.calls == 0


@pytest.mark.parametrize("body, length, status, says", [
    pytest.param(b"{not json", None, 400, "not JSON", id="not-json"),
    pytest.param(b'{"messages": [], "temperature": NaN}', None, 400, "not JSON", id="nan"),
    pytest.param(b"{}", MAX_BODY + 1, 413, "over", id="too-large"),
])
def test_a_body_that_is_no_json_or_too_large_is_refused(body, length, status, says):
    with FakeOpenAIServer() as server:
        with context(client(server.base_url)).endpoint("answer") as session:
            got, reply = session.run(lambda: post(session, body, length=length))
    assert got == status and says in reply["error"]["message"] and server.calls == 0


def test_a_request_without_the_sessions_key_or_to_another_path_is_refused():
    with FakeOpenAIServer() as server:
        with context(client(server.base_url)).endpoint("answer") as session:
            with pytest.raises(openai.AuthenticationError):
                session.run(lambda: openai.OpenAI(base_url=session.base_url, api_key="guess")
                            .chat.completions.create(model="any", messages=MESSAGES))
            assert post(session, b"{}", path="/v1/embeddings")[0] == 404
            models = framework(session).models.list()
    assert [model.id for model in models] == ["answer"] and server.calls == 0


def test_a_closed_session_or_one_not_running_its_agent_serves_nothing():
    with FakeOpenAIServer() as server:
        with context(client(server.base_url)).endpoint("answer") as session:
            status, reply = post(session, json.dumps(BAD).encode())  # outside session.run
            assert status == 409 and "session.run" in reply["error"]["message"]
            session.answer("")
            with pytest.raises(RuntimeError, match="before its answer"):
                session.run(lambda: None)
        assert post(session, json.dumps(BAD).encode())[0] == 401  # its key is forgotten
    assert server.calls == 0


def test_an_llm_error_reaches_the_framework_unretried_and_is_raised_by_run():
    refusal = {"error": {"status": 400, "message": "model overloaded with nonsense"}}
    with FakeOpenAIServer(reply=lambda request: refusal) as server:
        with context(client(server.base_url)).endpoint("answer") as session:
            seen, sent = [], []
            take = session.take
            session.take = lambda exchange: (sent.append(exchange), take(exchange))[1]

            def agent():
                sdk = framework(session)  # the SDK's own retries (2) stay on
                for _ in range(2):
                    try:
                        sdk.chat.completions.create(model="any", messages=MESSAGES)
                    except openai.APIStatusError as err:
                        seen.append(err.status_code)
                return "carried on"

            with pytest.raises(EndpointError, match="model overloaded"):
                session.run(agent)
    assert seen == [502, 502] and len(sent) == 2  # the framework did not retry
    assert server.calls == 1  # and no call was made after the failure


class Agent:
    """A system answering through the endpoint, as a user's framework would."""

    def __init__(self, context):
        self.context = context

    def answer(self, question):
        with self.context.endpoint("answer") as session:
            return session.answer(session.run(lambda: react(session)))


def pair(llm) -> dict:
    recorder = CallRecorder(llm)
    dataset = Dataset("example", [Question("q1", QUESTION, "Velmora bridge")],
                      {"Velmora bridge": Article("Velmora bridge", CHUNK.text)}, {})
    built = Agent(context(recorder, FakeRetriever([CHUNK])))
    return answer_and_grade(dataset, dataset.questions[0], "agent", built, recorder)


def test_a_pair_failing_part_way_fails_with_the_llms_error_and_keeps_the_calls_made():
    llm = ScriptedLLM([ToolReply("search", '{"query": "Velmora"}'),
                       EndpointError("answer endpoint http://x: HTTP 400: too long")],
                      usage=Usage(30, 5))
    row = pair(llm)
    assert row["status"] == "failed" and "HTTP 400: too long" in row["error"]
    assert row["usage"]["answer"]["input"] == 30  # the search call, made before the failure


def test_an_llm_error_that_stops_the_run_stops_it():
    llm = ScriptedLLM([ToolReply("search", '{"query": "Velmora"}'), BudgetExceeded("capped")])
    with pytest.raises(BudgetExceeded, match="capped"):
        pair(llm)


def test_a_pairs_calls_through_the_endpoint_are_recorded_on_its_thread_and_graded():
    llm = ScriptedLLM([ToolReply("search", '{"query": "Velmora"}'), "Seven spans.",
                       ToolReply("submit_grade", '{"truthfulness": 5, "relevance": 4}')])
    row = pair(llm)
    assert row["status"] == "ok" and row["answer"] == "Seven spans."
    assert row["grade"]["truthfulness"] == 5
    assert [step["kind"] for step in row["steps"]] == ["reason", "search", "answer"]
    assert row["retrievals"] == 1 and row["usage"]["answer"]["input"] == 20


def test_a_call_through_the_endpoint_is_cached_and_counted(tmp_path):
    def answered() -> tuple[str, list]:
        cache = ResponseCache(tmp_path / "cache.sqlite")
        llm = client(server.base_url, cache=cache)
        with context(llm, FakeRetriever([CHUNK])).endpoint("answer") as session:
            answer = session.answer(session.run(lambda: react(session)))
        cache.close()
        return answer.text, answer.calls

    with FakeOpenAIServer(reply=searches_once) as server:
        first, calls = answered()
        assert server.calls == 2 and not any(call.cache_hit for call in calls)
        again, cached = answered()
    assert server.calls == 2 and again == first == "Seven spans."  # the second: all cached
    assert [call.cache_hit for call in cached] == [True, True]
    assert [call.usage for call in cached] == [call.usage for call in calls]


def test_sessions_on_many_threads_keep_their_own_calls():
    with FakeOpenAIServer(reply=lambda request: {"content": request["messages"][0]["content"]}) \
            as server:
        llm = client(server.base_url)
        answers: dict[int, object] = {}

        def one(n: int) -> None:
            with context(llm).endpoint("answer") as session:
                reply = session.run(lambda: framework(session).chat.completions.create(
                    model="any", messages=[{"role": "user", "content": f"question {n}"}]))
                answers[n] = session.answer(reply.choices[0].message.content)

        threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert {n: (a.text, len(a.calls)) for n, a in answers.items()} == {
        n: (f"question {n}", 1) for n in range(8)}


def test_a_role_that_is_none_is_refused_when_opened():
    with pytest.raises(ValueError, match="no role 'answers'"):
        with context(ScriptedLLM([])).endpoint("answers"):
            pass

"""The run's endpoint for agent frameworks served as a real server (harness/llm/forward.py;
docs/faults.md#the-endpoint-for-agent-frameworks): a burst of parallel requests from sessions
at once is answered whole by a client that never retries; a body holding a lone surrogate is
read by the one decode rule and the session goes on; a call past the most the system's
`call_shape` declares is refused in OpenAI's error shape and the answer is `stopped` there."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from freshrag.core.dataset import Dataset
from freshrag.core.samples import read_samples
from freshrag.core.types import Article, CallShape, Question, SystemContext
from freshrag.llm.cache import ResponseCache
from freshrag.llm.forward import Endpoint
from freshrag.run.plan import CallRecorder, answer_and_grade, built
from tests.support.burst import burst, post
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import ScriptedLLM, ToolReply
from tests.support.llm import client
from tests.support.runs import run_cli

FFFD = "\ufffd"
QUESTION = Question("q1", "How many spans does the Velmora bridge have?", "Velmora bridge")
DATASET = Dataset("example", [QUESTION], {"Velmora bridge": Article(
    "Velmora bridge", "The Velmora bridge has seven spans.")}, {"questions": Path("q.jsonl")})
SEARCH = {"type": "function", "function": {"name": "search", "parameters": {
    "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}
GRADE = ToolReply("submit_grade", '{"truthfulness": 2, "relevance": 3}')


def test_three_sessions_of_48_parallel_requests_are_all_answered_and_none_reset():
    outcome = burst(sessions=3, parallel=48)  # raw HTTP: nothing retried
    assert (outcome["answered"], outcome["reset"], outcome["refused"], outcome["lost"]) == \
        (144, 0, 0, 0)


def surrogate_body(text: str) -> bytes:
    """A request whose message holds "\\ud800", as a framework's JSON may (valid JSON)."""
    return json.dumps({"messages": [{"role": "user", "content": text + "\ud800"}]}).encode()


def test_a_body_holding_a_lone_surrogate_reaches_the_model_as_unicode_text():
    llm = ScriptedLLM(["Seven.", "Seven again."])
    with Endpoint(llm, None)("answer") as session:
        replies = session.run(lambda: [post(session.base_url, session.api_key,
                                            surrogate_body(f"spans {n}")) for n in (1, 2)])
    assert [status for status, _ in replies] == [200, 200]
    assert [r["messages"][0]["content"] for r in llm.requests] == [f"spans 1{FFFD}",
                                                                   f"spans 2{FFFD}"]


def test_a_lone_surrogate_in_a_body_never_fails_the_session_with_the_cache_on(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(reply=lambda request: {"content": "Seven."}) as server:
        with Endpoint(client(server.base_url, cache=cache), None)("answer") as session:
            replies = session.run(lambda: [post(session.base_url, session.api_key, body) for body
                                           in (surrogate_body("spans"), surrogate_body("spans"),
                                               json.dumps({"messages": [
                                                   {"role": "user", "content": "ok"}]}).encode())])
    cache.close()
    assert [status for status, _ in replies] == [200, 200, 200]  # the second from the cache
    assert server.calls == 2 and server.requests[0]["messages"][0]["content"] == f"spans{FFFD}"


class Looping:
    """An agent whose framework calls a tool at every call, for ever (its own limit missing),
    while it declares at most 3 calls; what the framework was told when refused is kept."""

    uses_endpoint = True
    call_shape = CallShape({"answer": (1, 3)})
    told: list[tuple[int, dict]] = []

    def __init__(self, context: SystemContext):
        self.context = context

    def answer(self, question: Question):
        assert self.context.endpoint is not None
        with self.context.endpoint("answer") as session:
            return session.answer(session.run(lambda: self.loop(session, question)))

    def loop(self, session, question: Question) -> str:
        sdk = openai.OpenAI(base_url=session.base_url, api_key=session.api_key, max_retries=0)
        messages = [{"role": "user", "content": question.text}]
        for _ in range(40):
            try:
                reply = sdk.chat.completions.create(model="any", messages=messages,
                                                    tools=[SEARCH], tool_choice="required")
            except openai.APIStatusError as err:
                self.told.append((err.status_code, err.body))
                raise
            call = reply.choices[0].message.tool_calls[0]
            messages += [reply.choices[0].message.model_dump(exclude_none=True), {
                "role": "tool", "tool_call_id": call.id, "content": "nothing found"}]
        return "gave up"


def test_a_call_past_the_declared_most_is_refused_and_the_answer_stopped_at_it():
    Looping.told = []
    llm = ScriptedLLM([ToolReply("search", '{"query": "Velmora"}')] * 3 + [GRADE])
    recorder = CallRecorder(llm)
    system = built(Looping, SystemContext(llm=recorder, articles={},
                                          endpoint=Endpoint(recorder, None)))
    row = answer_and_grade(DATASET, QUESTION, "looping", system, recorder)
    [(status, body)] = Looping.told
    assert status == 400 and "at most 3 calls" in body["message"]  # OpenAI's error shape
    assert set(body) >= {"message", "type", "param", "code"}
    assert [r["role"] for r in llm.requests] == ["answer"] * 3 + ["judge"]
    assert row["status"] == "ok" and row["stopped"] == "max_steps"
    assert "at most 3 calls" in row["details"]["bound"] and len(row["steps"]) == 3
    assert row["grade"]["truthfulness"] == 2


PLUGIN = '''
import openai

from freshrag import CallShape, SystemAnswer


class Looping:
    uses_endpoint = True
    call_shape = CallShape({"answer": (1, 2)})

    def __init__(self, context):
        self.context = context

    def answer(self, question):
        with self.context.endpoint("answer") as session:
            return session.answer(session.run(lambda: self.loop(session, question)))

    def loop(self, session, question):
        sdk = openai.OpenAI(base_url=session.base_url, api_key=session.api_key)
        messages = [{"role": "user", "content": question.text}]
        tools = [{"type": "function", "function": {"name": "search", "parameters": {
            "type": "object", "properties": {"query": {"type": "string"}}}}}]
        for _ in range(40):
            reply = sdk.chat.completions.create(model="any", messages=messages, tools=tools,
                                                tool_choice="required")
            call = reply.choices[0].message.tool_calls[0]
            messages += [reply.choices[0].message.model_dump(exclude_none=True), {
                "role": "tool", "tool_call_id": call.id, "content": "nothing found"}]
        return "gave up"
'''


def test_a_run_holds_an_agent_to_its_declared_most(tmp_path, fake_server):
    (tmp_path / "looping.py").write_text(PLUGIN)
    server = fake_server()
    assert run_cli(tmp_path, "--systems", f"{tmp_path / 'looping.py'}:Looping",
                   "--no-probe") == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 3 and all(row["status"] == "ok" for row in rows)
    assert all(row["stopped"] == "max_steps" and "at most 2 calls" in row["details"]["bound"]
               for row in rows)
    answered = [r for r in server.requests if r.get("tools", [{}])[0].get("function", {})
                .get("name") == "search"]
    assert len(answered) == 3 * 2


@pytest.mark.parametrize("most", [None, 5])
def test_a_framework_within_its_bound_is_not_stopped(most):
    llm = ScriptedLLM(["Seven spans."])
    endpoint = Endpoint(llm, None)
    endpoint.most = most
    with endpoint("answer") as session:
        status, _ = session.run(lambda: post(session.base_url, session.api_key, json.dumps(
            {"messages": [{"role": "user", "content": "spans?"}]}).encode()))
        answer = session.answer("Seven spans.")
    assert status == 200 and answer.stopped is None and "bound" not in answer.details

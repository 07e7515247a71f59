"""The embedded runtime's adapter (harness/llm/embedded_server.py): OpenAI tool requests become
grammar-constrained JSON requests to llama.cpp, and the JSON comes back as tool calls. The
adapter runs here in front of the fake OpenAI server standing in for llama.cpp; the real runtime
with SmolLM2 is tests/integration/test_embedded_runtime.py."""

import json
import threading

import openai
import pytest

from freshrag.llm.embedded_server import (
    AUTO,
    FORCED,
    REQUIRED,
    AdapterError,
    adapt_reply,
    adapt_request,
    adapter_server,
    plain_messages,
)
from tests.support.fake_openai_server import FakeOpenAIServer

GRADE = {"type": "function", "function": {
    "name": "submit_grade", "description": "Grade the answer.",
    "parameters": {"type": "object", "properties": {"score": {"type": "integer"}},
                   "required": ["score"]}}}
RETRIEVE = {"type": "function", "function": {
    "name": "retrieve", "description": "Search.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                   "required": ["query"]}}}
MESSAGES = [{"role": "system", "content": "You grade."}, {"role": "user", "content": "Grade it."}]


def reply_with(text: str, finish: str = "stop") -> dict:
    return {"choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}}


@pytest.mark.parametrize("choice, tools, mode, schema_of", [
    pytest.param({"type": "function", "function": {"name": "submit_grade"}}, [GRADE, RETRIEVE],
                 FORCED, "arguments", id="forced-by-name"),
    pytest.param("required", [GRADE], FORCED, "arguments", id="required-one-tool"),
    pytest.param("required", [GRADE, RETRIEVE], REQUIRED, "name-and-arguments", id="required"),
    pytest.param("auto", [RETRIEVE], AUTO, "call-or-response", id="auto"),
])
def test_a_tool_request_becomes_a_json_schema_request(choice, tools, mode, schema_of):
    body = {"model": "m", "messages": MESSAGES, "tools": tools, "tool_choice": choice,
            "max_tokens": 40, "parallel_tool_calls": False}
    adapted, got = adapt_request(body)
    assert got == mode
    assert "tools" not in adapted and "tool_choice" not in adapted
    assert "parallel_tool_calls" not in adapted and adapted["max_tokens"] == 40
    schema = adapted["response_format"]["json_schema"]["schema"]
    if schema_of == "arguments":
        assert schema == GRADE["function"]["parameters"]
    elif schema_of == "name-and-arguments":
        assert [s["properties"]["name"] for s in schema["anyOf"]] == [
            {"const": "submit_grade"}, {"const": "retrieve"}]
    else:
        call, response = schema["anyOf"]
        assert call["properties"]["tool_call"]["properties"]["name"] == {"const": "retrieve"}
        assert response["properties"] == {"response": {"type": "string"}}
    # the tools are described in the one system message, which keeps its own text first
    system = adapted["messages"][0]["content"]
    assert system.startswith("You grade.\n\n") and tools[0]["function"]["name"] in system
    assert [m["role"] for m in adapted["messages"]] == ["system", "user"]


def test_requests_without_tools_or_with_tool_choice_none_pass_through():
    plain = {"model": "m", "messages": MESSAGES, "temperature": 0}
    assert adapt_request(plain) == (plain, None)
    adapted, mode = adapt_request({**plain, "tools": [GRADE], "tool_choice": "none"})
    assert (adapted, mode) == (plain, None)


def test_a_request_naming_a_tool_it_does_not_carry_is_refused():
    with pytest.raises(AdapterError, match="'missing'"):
        adapt_request({"messages": MESSAGES, "tools": [GRADE],
                       "tool_choice": {"type": "function", "function": {"name": "missing"}}})


def test_tool_calls_and_results_in_the_history_become_text_the_template_renders():
    history = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "retrieve", "arguments": '{"query": "x"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Found: x is y."}]
    assert plain_messages(history) == [
        {"role": "assistant",
         "content": json.dumps([{"name": "retrieve", "arguments": '{"query": "x"}'}])},
        {"role": "user", "content": "Result of the function call: Found: x is y."}]


@pytest.mark.parametrize("mode, body, text, expected", [
    pytest.param(FORCED, {"tools": [GRADE], "tool_choice": "required"}, '{"score": 3}',
                 ("submit_grade", {"score": 3}), id="forced"),
    pytest.param(REQUIRED, {"tools": [GRADE, RETRIEVE], "tool_choice": "required"},
                 '{"name": "retrieve", "arguments": {"query": "q"}}',
                 ("retrieve", {"query": "q"}), id="required"),
    pytest.param(AUTO, {"tools": [RETRIEVE], "tool_choice": "auto"},
                 '{"tool_call": {"name": "retrieve", "arguments": {"query": "q"}}}',
                 ("retrieve", {"query": "q"}), id="auto-calls"),
    pytest.param(AUTO, {"tools": [RETRIEVE], "tool_choice": "auto"}, '{"response": "Bob."}',
                 "Bob.", id="auto-answers"),
])
def test_the_json_comes_back_as_a_tool_call_or_text(mode, body, text, expected):
    message = adapt_reply(reply_with(text), mode, body)["choices"][0]
    if isinstance(expected, str):
        assert message["message"]["content"] == expected
        assert "tool_calls" not in message["message"]
        return
    call = message["message"]["tool_calls"][0]
    assert message["finish_reason"] == "tool_calls" and message["message"]["content"] is None
    assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == expected


def test_a_reply_cut_before_its_json_closes_stays_text_with_its_finish_reason():
    cut = reply_with('{"score": 1', finish="length")
    choice = adapt_reply(cut, FORCED, {"tools": [GRADE], "tool_choice": "required"})["choices"][0]
    assert choice["finish_reason"] == "length"
    assert choice["message"] == {"role": "assistant", "content": '{"score": 1'}


@pytest.fixture
def adapter():
    """The adapter in front of a fake llama.cpp that answers every chat request with a
    scripted text (the JSON the grammar would have produced)."""
    scripted = {"text": '{"score": 4}'}
    with FakeOpenAIServer(reply=lambda request: {"content": scripted["text"]}) as upstream:
        server = adapter_server(0, upstream.port)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
                               api_key="none", max_retries=0)
        yield client, upstream, scripted
        server.shutdown()
        server.server_close()


def test_over_http_the_sdk_gets_a_forced_call_and_llama_cpp_got_the_schema(adapter):
    client, upstream, _ = adapter
    reply = client.chat.completions.create(model="m", messages=MESSAGES, tools=[GRADE],
                                           tool_choice={"type": "function",
                                                        "function": {"name": "submit_grade"}})
    call = reply.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("submit_grade",
                                                                          {"score": 4})
    sent = upstream.requests[-1]
    assert "tools" not in sent
    assert sent["response_format"]["json_schema"]["schema"] == GRADE["function"]["parameters"]
    assert reply.usage.prompt_tokens > 0  # the runtime's own count comes through


def test_over_http_a_streamed_tool_request_arrives_as_one_chunk(adapter):
    client, _, _ = adapter
    chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, tools=[GRADE],
                                                 tool_choice="required", stream=True))
    calls = [c.choices[0].delta.tool_calls for c in chunks if c.choices]
    assert len(calls) == 1 and calls[0][0].index == 0
    assert json.loads(calls[0][0].function.arguments) == {"score": 4}


def test_over_http_a_plain_request_passes_through_untouched(adapter):
    client, upstream, scripted = adapter
    scripted["text"] = "Bob won."
    reply = client.chat.completions.create(model="m", messages=MESSAGES, temperature=0)
    assert reply.choices[0].message.content == "Bob won."
    assert upstream.requests[-1] == {"model": "m", "messages": MESSAGES, "temperature": 0}


def test_over_http_a_bad_body_is_a_400_naming_the_problem(adapter):
    client, upstream, _ = adapter
    calls = upstream.calls
    with pytest.raises(openai.BadRequestError, match="not among the tools"):
        client.chat.completions.create(model="m", messages=MESSAGES, tools=[GRADE],
                                       tool_choice={"type": "function",
                                                    "function": {"name": "nope"}})
    assert upstream.calls == calls  # nothing reached llama.cpp

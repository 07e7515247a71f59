"""Whatever an endpoint sends back, and however slowly (harness/llm/client.py, deadline.py): each
fault is an EndpointError naming the role and endpoint (never another exception, never a hang),
nothing of it is cached, a 401/403 stops every later call to that endpoint, and a stop abandons
a request in flight within a second."""

import json
import threading
import time

import pytest

from freshrag.llm import deadline
from freshrag.llm.cache import ResponseCache
from freshrag.llm.client import AccessDenied, EndpointError
from freshrag.llm.replies import MAX_REPLY_CHARS
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import SECRET
from tests.support.llm import MESSAGES, client

COMPLETION = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "fine"}}]}


def with_choice(**message):
    return {**COMPLETION, "choices": [{**COMPLETION["choices"][0],
                                       "message": {"role": "assistant", **message}}]}


BAD_REPLIES = {
    "html-page": ({"body": "<html><body>Bad gateway</body></html>"}, "not a chat completion"),
    "cut-json": ({"body": json.dumps(COMPLETION)[:40], "content_type": "application/json"},
                 "not an OpenAI response"),
    "body-shorter-than-its-length": ({"json": COMPLETION, "length": 4000}, "APIConnectionError"),
    "5000-digit-number": ({"body": '{"choices": [], "created": ' + "9" * 5000 + "}",
                           "content_type": "application/json"}, "not an OpenAI response"),
    "no-choices": ({"json": {**COMPLETION, "choices": []}}, "no choices"),
    "text-is-a-number": ({"json": with_choice(content=12)}, "text is int"),
    "call-without-arguments": ({"json": with_choice(content=None, tool_calls=[
        {"id": "t", "type": "function", "function": {"name": "f"}}])}, "tool call"),
    "over-long-text": ({"json": with_choice(content="x" * (MAX_REPLY_CHARS + 1))},
                       "more than the 1,000,000"),
    "a-json-list": ({"json": [1, 2]}, "not a chat completion"),
}


@pytest.mark.parametrize("raw, reason", BAD_REPLIES.values(), ids=BAD_REPLIES)
def test_a_reply_that_is_no_completion_is_an_endpoint_error_and_never_cached(raw, reason, tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(reply=lambda request: {"raw": raw}) as server:
        llm = client(server.base_url, cache, max_attempts=1, timeout_s=5)
        for _ in range(2):  # not cached: asked again
            with pytest.raises(EndpointError) as err:
                llm.chat("answer", MESSAGES)
            assert type(err.value) is EndpointError
            assert f"answer endpoint {server.base_url}" in str(err.value)
            assert reason in str(err.value) and SECRET not in str(err.value)
        assert server.calls == 2


def test_usage_that_is_no_count_is_estimated_instead():
    reply = {**COMPLETION, "usage": {"prompt_tokens": -3, "completion_tokens": 10 ** 12}}
    with FakeOpenAIServer(reply=lambda request: {"raw": {"json": reply}}) as server:
        response = client(server.base_url).chat("answer", MESSAGES)
    assert response.usage.estimated and 0 < response.usage.input < 100


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_server_that_sends_a_byte_at_a_time_meets_the_deadline(where):
    body = json.dumps(COMPLETION)
    raw = {"json": COMPLETION, "drip": 0.05} if where == "headers" else \
        {"body": body, "content_type": "application/json", "drip": 0.05}
    # each byte comes well within any read timeout; the whole reply would take 10 s and more
    with FakeOpenAIServer(reply=lambda request: {"raw": raw}) as server:
        llm = client(server.base_url, max_attempts=1, timeout_s=1.0)
        started = time.monotonic()
        with pytest.raises(EndpointError) as err:
            llm.chat("answer", MESSAGES)
        took = time.monotonic() - started
    assert took < 3.0, f"the 1 s deadline took {took:.1f} s"
    assert "Timeout" in str(err.value) or "timed out" in str(err.value)


def test_a_slow_reply_within_the_deadline_is_read():
    raw = {"body": json.dumps(COMPLETION), "content_type": "application/json", "drip": 0.002}
    with FakeOpenAIServer(reply=lambda request: {"raw": raw}) as server:
        assert client(server.base_url, timeout_s=10).chat("answer", MESSAGES).text == "fine"


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_stops_every_later_call_to_that_endpoint(status):
    refusal = {"error": {"status": status, "message": "Incorrect API key provided",
                         "type": "invalid_request_error"}}
    with FakeOpenAIServer(reply=lambda request: refusal) as server:
        llm = client(server.base_url, max_attempts=4)
        for _ in range(3):
            with pytest.raises(AccessDenied) as err:
                llm.chat("answer", MESSAGES)
        assert server.calls == 1  # not retried, and nothing sent after the first refusal
        assert f"answer endpoint {server.base_url} refused the key" in str(err.value)
    assert f"HTTP {status}" in str(err.value) and SECRET not in str(err.value)


@pytest.fixture
def stop_afterwards():
    yield
    deadline.STOP.clear()  # the process-wide stop, set by the test: clear for the next tests


def test_a_stop_abandons_a_request_in_flight_within_a_second(stop_afterwards):
    outcome = {}

    def call(llm):
        started = time.monotonic()
        try:
            llm.chat("answer", MESSAGES)
        except BaseException as err:  # noqa: BLE001 - which one is what the test checks
            outcome["error"] = err
        outcome["took"] = time.monotonic() - started

    with FakeOpenAIServer(delay=30) as server:  # a request that would hang for 30 s
        thread = threading.Thread(target=call, args=(client(server.base_url, timeout_s=60),))
        thread.start()
        time.sleep(0.5)
        deadline.STOP.set()
        thread.join(timeout=5)
        assert not thread.is_alive()
    assert isinstance(outcome["error"], deadline.Stopped)
    assert outcome["took"] < 2.0


def test_a_logprob_that_is_no_finite_number_is_none_and_the_reply_cached(tmp_path):
    """A server may send -Infinity or NaN (Python reads both); the cache writes strict JSON, so
    such a logprob is None, which a decider skips as it would an impossible token."""
    tokens = [{"token": "Yes", "logprob": -0.5, "top_logprobs": [
        {"token": "Yes", "logprob": -0.5}, {"token": "No", "logprob": float("-inf")}]},
        {"token": ".", "logprob": float("nan"), "top_logprobs": []}]
    reply = {**COMPLETION, "choices": [{**COMPLETION["choices"][0], "logprobs": {
        "content": tokens}}]}
    body = json.dumps(reply)
    assert "-Infinity" in body and "NaN" in body
    cache = ResponseCache(tmp_path / "cache.sqlite")
    raw = {"body": body, "content_type": "application/json"}
    with FakeOpenAIServer(reply=lambda request: {"raw": raw}) as server:
        llm = client(server.base_url, cache)
        first, second = (llm.chat("answer", MESSAGES, top_logprobs=2) for _ in range(2))
    assert server.calls == 1 and second.cache_hit  # cached, and read back
    for response in (first, second):
        assert [t["logprob"] for t in response.logprobs] == [-0.5, None]
        assert [t["logprob"] for t in response.logprobs[0]["top"]] == [-0.5, None]
    stored, = cache.values()
    json.loads(json.dumps(stored), parse_constant=pytest.fail)  # nothing non-finite stored


@pytest.mark.parametrize("body", [
    pytest.param("<html>Bad gateway</html>", id="html-page"),
    pytest.param(json.dumps({"object": "list", "data": [{"index": 0, "embedding": "x"}]}),
                 id="vector-of-text"),
    pytest.param(json.dumps({"object": "list", "data": 5}), id="data-not-a-list"),
])
def test_an_embeddings_reply_of_another_shape_is_an_endpoint_error(body):
    def embeddings(request, headers):
        return {"body": body, "content_type": "application/json"}

    with FakeOpenAIServer(services={"/v1/embeddings": embeddings}) as server:
        llm = client(server.base_url, max_attempts=1)
        with pytest.raises(EndpointError) as err:
            llm.embed("answer", ["a text"])
    assert type(err.value) is EndpointError and "(embeddings)" in str(err.value)

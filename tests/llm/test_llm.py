import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from freshrag.core.files import SymlinkError
from freshrag.llm.cache import ResponseCache
from freshrag.llm.client import ContextTooLong, EndpointError, EndpointUnreachable
from freshrag.llm.local_server import free_port
from tests.support.fake_openai_server import FakeOpenAIServer, FaultPlan
from tests.support.fakes import SECRET
from tests.support.links import PRECIOUS
from tests.support.llm import MESSAGES, client


def test_usage_comes_from_the_api():
    def reply(req):
        return {"content": "nine", "usage": {"prompt_tokens": 123, "completion_tokens": 7}}
    with FakeOpenAIServer(reply=reply) as server:
        response = client(server.base_url).chat("answer", MESSAGES)
    assert response.text == "nine" and response.role == "answer" and response.messages == MESSAGES
    assert (response.usage.input, response.usage.output, response.usage.estimated) == (123, 7, False)
    assert server.requests[0]["model"] == "fake-model"


def test_missing_usage_is_counted_locally_and_flagged():
    with FakeOpenAIServer(report_usage=False) as server:
        response = client(server.base_url).chat("answer", MESSAGES)
    assert response.usage.estimated
    assert response.usage.input > len(MESSAGES[0]["content"].split())  # words + chat framing
    assert response.usage.output > 0


def test_forced_tool_call_returns_raw_arguments():
    tool = {"type": "function", "function": {"name": "decide", "parameters": {
        "type": "object", "properties": {"retrieve": {"type": "boolean"}}}}}
    with FakeOpenAIServer() as server:
        response = client(server.base_url).chat("judge", MESSAGES, tools=[tool], tool_choice="decide")
    assert server.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "decide"}}
    assert (response.tool_name, response.tool_arguments) == ("decide", '{"retrieve": true}')


def test_a_reply_from_the_cache_took_no_time_at_the_endpoint(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(delay=0.2) as server:
        llm = client(server.base_url, cache)
        first, again = llm.chat("answer", MESSAGES), llm.chat("answer", MESSAGES)
    # the first call's 0.2 s is not replayed into a step of a run answered from the cache
    assert first.latency_s >= 0.2 and again.cache_hit and again.latency_s == 0.0


def test_cache_answers_repeats_without_calling_and_attempt_bypasses_it(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer() as server:
        llm = client(server.base_url, cache)
        first = llm.chat("answer", MESSAGES)
        again = llm.chat("answer", MESSAGES)
        assert server.calls == 1 and again.cache_hit and not first.cache_hit
        assert again.text == first.text and again.usage == first.usage
        llm.chat("answer", MESSAGES, temperature=1.0)
        llm.chat("answer", MESSAGES, attempt=1)
        assert server.calls == 3
    key_dump = (tmp_path / "cache.sqlite").read_bytes()
    assert SECRET.encode() not in key_dump


@pytest.mark.parametrize("faults", [
    pytest.param(FaultPlan(rate_limit=0.5, seed=1), id="429"),
    pytest.param(FaultPlan(server_error=0.5, seed=2), id="500"),
    pytest.param(FaultPlan(timeout=0.5, hang_seconds=5, seed=3), id="timeout"),
])
def test_transient_errors_are_retried_until_success(faults):
    with FakeOpenAIServer(faults=faults) as server:
        llm = client(server.base_url, max_attempts=10, timeout_s=0.5)
        for _ in range(6):
            assert llm.chat("answer", MESSAGES).text.startswith("echo:")
        assert server.calls > 6  # some calls were retried


def test_retries_are_bounded_and_the_message_names_the_endpoint_not_the_key():
    with FakeOpenAIServer(faults=FaultPlan(rate_limit=1.0)) as server:
        with pytest.raises(EndpointError) as err:
            client(server.base_url, max_attempts=3).chat("answer", MESSAGES)
        assert server.calls == 3
        assert server.base_url in str(err.value)
    assert "after 3 attempts" in str(err.value)
    assert "HTTP 429" in str(err.value) and SECRET not in str(err.value)


def test_client_errors_are_not_retried():
    with FakeOpenAIServer() as server:
        llm = client(server.base_url.replace("/v1", "/nowhere"), max_attempts=5)
        with pytest.raises(EndpointError, match="HTTP 404"):
            llm.chat("answer", MESSAGES)
        assert server.calls == 0


@pytest.mark.parametrize("message, overflow", [
    # llama.cpp's server and OpenAI word it like this
    ("This model's maximum context length is 8192 tokens. However, you requested 8478 tokens",
     True),
    ("Requested tokens (9000) exceed context window of 8192", True),
    ("Invalid value for 'temperature'", False),
])
def test_a_context_overflow_is_told_apart_from_other_bad_requests(message, overflow):
    reply = lambda request: {"error": {"status": 400, "message": message}}  # noqa: E731
    with FakeOpenAIServer(reply=reply) as server:
        with pytest.raises(EndpointError) as raised:
            client(server.base_url).chat("answer", MESSAGES)
        assert isinstance(raised.value, ContextTooLong) is overflow
        assert server.calls == 1  # a 400 is never retried


def test_unreachable_endpoint_fails_after_retries_naming_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EndpointUnreachable) as err:
        client(url, max_attempts=2).chat("answer", MESSAGES)
    assert url in str(err.value) and "after 2 attempts" in str(err.value)
    assert SECRET not in str(err.value)


def replies_then(first, then="nine"):
    """A reply callable: `first` for the first call, then a plain text reply."""
    calls = []

    def reply(request):
        calls.append(request)
        return first if len(calls) == 1 else {"content": then}
    return reply


@pytest.mark.parametrize("first", [
    pytest.param({"content": ""}, id="empty-text"),
    pytest.param({"content": " \n "}, id="blank-text"),
    pytest.param({"content": None}, id="no-text-no-call"),
    pytest.param({"tool_call": {"name": "decide", "arguments": '{"retrieve": tr'}},
                 id="tool-call-invalid-json"),
    pytest.param({"tool_call": {"name": "decide", "arguments": '[true]'}},
                 id="tool-call-arguments-not-an-object"),
])
def test_an_unusable_reply_is_not_cached_so_the_same_request_asks_again(tmp_path, first):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(reply=replies_then(first)) as server:
        llm = client(server.base_url, cache)
        unusable = llm.chat("answer", MESSAGES)
        usable = llm.chat("answer", MESSAGES)
        again = llm.chat("answer", MESSAGES)
        assert server.calls == 2  # the unusable reply was not replayed; the usable one is
    assert not unusable.cache_hit and not usable.cache_hit and again.cache_hit
    assert usable.text == again.text == "nine"


@pytest.mark.parametrize("first", [
    pytest.param({"content": "a"}, id="text"),
    pytest.param({"tool_call": {"name": "decide", "arguments": '{"retrieve": false}'}},
                 id="tool-call"),
])
def test_a_usable_reply_is_cached(tmp_path, first):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(reply=replies_then(first)) as server:
        llm = client(server.base_url, cache)
        replies = [llm.chat("answer", MESSAGES) for _ in range(2)]
        assert server.calls == 1 and replies[1].cache_hit


def test_a_later_attempt_is_sent_with_another_seed_so_a_seeded_endpoint_samples_afresh():
    with FakeOpenAIServer() as server:
        llm = client(server.base_url)
        llm.seed = 7
        for attempt in (0, 1, 2):
            llm.chat("answer", MESSAGES, attempt=attempt)
        llm.seed = None
        llm.chat("answer", MESSAGES, attempt=1)
    assert [request.get("seed") for request in server.requests] == [7, 8, 9, None]


def ask_at_once(llm, n):
    """`n` identical calls from `n` threads released together."""
    barrier = threading.Barrier(n)

    def ask(_):
        barrier.wait()
        return llm.chat("answer", MESSAGES)
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(ask, range(n)))


def test_identical_calls_in_flight_at_once_make_one_request(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(delay=0.3) as server:
        replies = ask_at_once(client(server.base_url, cache), 4)
        assert server.calls == 1
    assert sorted(r.cache_hit for r in replies) == [False, True, True, True]
    assert len({r.text for r in replies}) == 1


def test_a_call_waiting_on_one_whose_reply_was_unusable_asks_itself(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(reply=replies_then({"content": ""}), delay=0.3) as server:
        replies = ask_at_once(client(server.base_url, cache), 2)
        assert server.calls == 2  # the empty reply was not cached: the waiter asked again
    assert sorted(r.text or "" for r in replies) == ["", "nine"]
    assert not any(r.cache_hit for r in replies)


def test_without_a_cache_identical_calls_are_each_sent():
    with FakeOpenAIServer(delay=0.2) as server:
        ask_at_once(client(server.base_url), 3)
        assert server.calls == 3


def test_the_response_cache_refuses_a_symbolic_link(tmp_path, target):
    path = tmp_path / ".llm-cache.sqlite"
    path.symlink_to(target)
    with pytest.raises(SymlinkError, match="--no-cache") as raised:
        ResponseCache(path)
    assert str(raised.value).startswith(f"{path}: is a symbolic link")
    assert target.read_text(encoding="utf-8") == PRECIOUS

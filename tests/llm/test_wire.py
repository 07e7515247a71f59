"""The chat request as harness/llm/wire.py sends it, past the SDK's request path: the body the
client prepared, the SDK's URL and identifying headers with the key, the reply read as JSON, and
an error status as the SDK's own exception (so retries and messages are the SDK path's)."""

import pytest

from freshrag.llm.client import AccessDenied, EndpointError
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import SECRET
from tests.support.llm import MESSAGES, client

COMPLETION = {"id": "c", "object": "chat.completion", "created": 0, "model": "fake-model",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "Seven spans."}}],
              "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}
CHAT = "/v1/chat/completions"


def test_the_request_is_the_prepared_body_with_the_sdks_headers_and_key(monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-test")  # the SDK sends it as OpenAI-Organization
    with FakeOpenAIServer(services={CHAT: lambda request, headers: {"json": COMPLETION}}) as server:
        llm = client(server.base_url)
        response = llm.chat("answer", MESSAGES, max_tokens=20)
        expected, _ = llm.prepare("answer", MESSAGES, max_tokens=20)
        [(path, body, headers)] = server.service_requests
    assert (path, body) == (CHAT, expected)
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"].startswith("OpenAI/Python")
    assert headers["openai-organization"] == "org-test"
    assert not [name for name in headers if name.startswith("x-stainless")]
    assert (response.text, response.usage.input, response.usage.output) == ("Seven spans.", 12, 3)
    assert not response.usage.estimated


@pytest.mark.parametrize("status, retried", [(429, True), (500, True), (503, True), (404, False)])
def test_an_error_status_is_retried_as_the_sdks_errors_are(status, retried):
    replies = iter([{"json": {"error": {"message": "not now"}}, "status": status},
                    {"json": COMPLETION}])
    with FakeOpenAIServer(services={CHAT: lambda request, headers: next(replies)}) as server:
        llm = client(server.base_url, max_attempts=2)
        if retried:
            assert llm.chat("answer", MESSAGES).text == "Seven spans."
        else:
            with pytest.raises(EndpointError) as err:
                llm.chat("answer", MESSAGES)
            assert f"HTTP {status}" in str(err.value) and "not now" in str(err.value)
        assert len(server.service_requests) == (2 if retried else 1)


def test_a_refused_key_is_access_denied_with_the_endpoints_message():
    refusal = {"json": {"error": {"message": "Incorrect API key"}}, "status": 401}
    with FakeOpenAIServer(services={CHAT: lambda request, headers: refusal}) as server:
        with pytest.raises(AccessDenied) as err:
            client(server.base_url).chat("answer", MESSAGES)
    assert "HTTP 401" in str(err.value) and "Incorrect API key" in str(err.value)
    assert SECRET not in str(err.value)


def test_each_thread_keeps_its_own_http_client_and_all_share_one_ssl_context():
    """One HTTP client per worker thread (one small pool each, not one pool scanned by 128
    threads), reused by the thread's later calls; the SSL context made once for all of them."""
    import threading

    with FakeOpenAIServer(services={CHAT: lambda request, headers: {"json": COMPLETION}}) as server:
        llm = client(server.base_url)
        route = llm._route("answer", llm.settings.role("answer"))
        seen = {}

        def calls(name):
            llm.chat("answer", MESSAGES, attempt=1)
            first = route._http()
            llm.chat("answer", MESSAGES, attempt=2)
            seen[name] = (first, route._http())

        workers = [threading.Thread(target=calls, args=(n,)) for n in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert all(first is again for first, again in seen.values())
    assert len({id(first) for first, _ in seen.values()}) == 3
    contexts = {id(pool._ssl_context) for first, _ in seen.values()
                for pool in [first._transport._pool]}
    assert len(contexts) == 1

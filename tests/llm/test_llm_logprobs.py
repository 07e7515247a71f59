"""Log-probabilities through the LLM client (for the `confidence` decider): asked only when a
caller wants them, kept per token with their alternatives, replayed from the cache, and None
where the endpoint gives none."""

from freshrag.llm.cache import ResponseCache
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.llm import MESSAGES, client

LOGPROBS = [{"token": "Yes", "logprob": -0.2, "bytes": None,
             "top_logprobs": [{"token": "Yes", "logprob": -0.2, "bytes": None},
                              {"token": "No", "logprob": -1.8, "bytes": None}]}]
KEPT = [{"token": "Yes", "logprob": -0.2,
         "top": [{"token": "Yes", "logprob": -0.2}, {"token": "No", "logprob": -1.8}]}]


def test_logprobs_are_asked_for_kept_and_replayed_from_the_cache(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(reply=lambda req: {"content": "Yes", "logprobs": LOGPROBS}) as server:
        llm = client(server.base_url, cache)
        first = llm.chat("answer", MESSAGES, max_tokens=2, top_logprobs=5)
        again = llm.chat("answer", MESSAGES, max_tokens=2, top_logprobs=5)
        plain = llm.chat("answer", MESSAGES, max_tokens=2)
    assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 5
    assert first.logprobs == KEPT and again.cache_hit and again.logprobs == KEPT
    assert server.calls == 2  # the plain request is another request, not the cached one
    assert "logprobs" not in server.requests[1] and plain.logprobs is None


def test_an_endpoint_without_logprobs_gives_none():
    with FakeOpenAIServer(reply=lambda req: {"content": "Yes"}) as server:
        response = client(server.base_url).chat("answer", MESSAGES, top_logprobs=5)
    assert server.requests[0]["logprobs"] is True and response.logprobs is None

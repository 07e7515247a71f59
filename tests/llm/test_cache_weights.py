"""The response cache keys an endpoint's replies on what it says about the weights behind a model
name (harness/llm/weights.py, docs/run-format.md#the-response-cache): new weights under the
same name are asked anew, an endpoint that says nothing keeps the keys it had, and replies keyed
on the name alone are set aside with a note when the endpoint starts to say."""

import pytest

from freshrag.llm.cache import ResponseCache, cache_key
from freshrag.llm.weights import asked, identity
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.llm import MESSAGES, client


def llama_entry(size: int, created: int = 1) -> dict:
    """A model as llama.cpp's server lists it: `created` is the time of the request."""
    return {"id": "fake-model", "object": "model", "created": created, "owned_by": "llamacpp",
            "meta": {"n_params": 134515008, "size": size, "n_vocab": 49152}}


def test_new_weights_under_the_same_name_are_asked_anew(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(models=[llama_entry(size=100)]) as server:
        first = client(server.base_url, cache)
        assert not first.chat("answer", MESSAGES).cache_hit
        assert first.chat("answer", MESSAGES).cache_hit and server.calls == 1
        server.models = [llama_entry(size=100, created=2)]  # listed again: only the time moved
        assert client(server.base_url, cache).chat("answer", MESSAGES).cache_hit
        server.models = [llama_entry(size=200)]  # another GGUF file behind the same alias
        assert not client(server.base_url, cache).chat("answer", MESSAGES).cache_hit
        assert server.calls == 2


def test_an_endpoint_that_says_nothing_keeps_the_keys_of_existing_caches(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer() as server:  # GET /v1/models is a 404 here
        llm = client(server.base_url, cache)
        request, _ = llm.prepare("answer", MESSAGES)
        # the key as freshrag wrote it before it asked about weights
        old_key = cache_key({"base_url": server.base_url, "attempt": 0, **request})
        cache.put(old_key, {"text": "from an older cache", "tool_name": None,
                            "tool_arguments": None, "usage": {"input": 1, "output": 1},
                            "latency_s": 0.1})
        reply = llm.chat("answer", MESSAGES)
    assert reply.cache_hit and reply.text == "from an older cache" and server.calls == 0


def test_replies_keyed_on_the_name_alone_are_set_aside_with_a_note(tmp_path, capsys):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer() as server:
        url = server.base_url
        client(url, cache).chat("answer", MESSAGES)  # it said nothing: keyed on the name
        server.models = [llama_entry(size=100)]
        now = client(url, cache)
        assert not now.chat("answer", MESSAGES).cache_hit and server.calls == 2
        assert now.chat("answer", MESSAGES).cache_hit and server.calls == 2
    note = capsys.readouterr().err
    assert note.count("note: the response cache") == 1  # once per endpoint and model
    assert "'fake-model'" in note and url in note and "not used" in note


@pytest.mark.parametrize("entry, says", [
    pytest.param(llama_entry(size=100), '{"meta":{"n_params":134515008,"n_vocab":49152,'
                 '"size":100}}', id="llama.cpp-meta"),
    pytest.param({"id": "fake-model", "object": "model", "created": 1715367049,
                  "owned_by": "system"}, "", id="openai-name-only"),
    pytest.param({"id": "fake-model", "created": 1, "owned_by": "vllm", "root": "/ckpt/step-900",
                  "parent": None, "max_model_len": 2048}, '{"root":"/ckpt/step-900"}', id="vllm-root"),
    pytest.param({**llama_entry(size=100), "id": "other-model"}, "", id="another-model"),
])
def test_identity_is_what_the_entry_says_about_weights(entry, says):
    assert identity({"object": "list", "data": [entry]}, "fake-model") == says


@pytest.mark.parametrize("listing", [
    pytest.param(lambda: {"data": "not a list"}, id="odd-shape"),
    pytest.param(lambda: "<html>not found</html>", id="no-json"),
    pytest.param(lambda: 1 / 0, id="refused"),
])
def test_an_endpoint_that_cannot_list_its_models_gives_no_identity(listing):
    assert asked(listing, "fake-model") == ""

"""A system behind HTTP (systems/external/http.py) against a real HTTP service: the fake server's service
route, which can answer anything, slowly, or not at all."""

from __future__ import annotations

import time

import pytest

from freshrag.core.types import Question, SystemContext, Usage
from freshrag.llm.client import EndpointError, EndpointUnreachable
from freshrag.systems import SYSTEMS
from freshrag.systems.external.http import (
    HttpConfigError,
    HttpSettings,
    HttpSystem,
    settings_from_table,
)
from freshrag.systems.external.plugins import PluginError, resolve
from tests.support.fake_openai_server import FakeOpenAIServer

QUESTION = Question(id="q7", text="How many bridges does Town 1 have?", gold_title="Town 1")
FULL = {"answer": "Four bridges.", "retrievals": 2, "decision": True,
        "contexts": [{"title": "Town 1", "text": "Town 1 has 4 bridges.", "score": 0.9},
                     "Bridges are old."],
        "usage": {"input_tokens": 310, "output_tokens": 12}}


def service(*replies):
    """A service route answering with `replies` in turn (the last one repeats)."""
    script = list(replies)
    return lambda request, headers: script.pop(0) if len(script) > 1 else script[0]


def ask(server, settings=None, **options):
    settings = settings or HttpSettings("mine", f"http://127.0.0.1:{server.port}/rag", **options)
    return HttpSystem(SystemContext(llm=None, articles={}), settings).answer(QUESTION)


def test_everything_the_service_reports_is_recorded():
    with FakeOpenAIServer(services={"/rag": service({"json": FULL})}) as server:
        answer = ask(server)
        [(_, request, _)] = server.service_requests
    assert request == {"question": QUESTION.text, "id": "q7"}
    assert (answer.text, answer.retrievals) == ("Four bridges.", 2)
    assert answer.usage_by_role() == {"answer": Usage(310, 12)}
    assert answer.details["decision"] == "retrieve" and answer.details["unknown"] == []
    assert answer.details["retrieved"] == [{"title": "Town 1", "index": 0, "score": 0.9},
                                           {"title": "", "index": 1, "score": None}]
    assert answer.details["context"] == "Town 1 has 4 bridges.\n\nBridges are old."


def test_what_the_service_does_not_report_is_unknown_never_zero():
    with FakeOpenAIServer(services={"/rag": service({"json": {"answer": "Four."}})}) as server:
        answer = ask(server)
    assert answer.retrievals is None and answer.calls == []
    assert answer.details["unknown"] == ["input_tokens", "output_tokens", "retrievals", "decision"]


def test_field_names_and_headers_come_from_the_configuration(monkeypatch):
    monkeypatch.setenv("MY_RAG_TOKEN", "Bearer s3cret")
    with FakeOpenAIServer(services={"/v2/ask": service({"json": {"result": {"text": "Four."},
                                                                "n": 1}})}) as server:
        settings = settings_from_table("mine", {
            "url": f"http://127.0.0.1:{server.port}/v2/ask",
            "headers": {"Authorization": "MY_RAG_TOKEN"},
            "request": {"question": "query", "id": ""},
            "reply": {"answer": "result.text", "retrievals": "n"}}, "freshrag.toml")
        answer = ask(server, settings)
        [(_, request, headers)] = server.service_requests
    assert request == {"query": QUESTION.text}
    assert headers["authorization"] == "Bearer s3cret"
    assert (answer.text, answer.retrievals) == ("Four.", 1)
    assert "s3cret" not in str(settings.record())


def test_a_missing_header_variable_is_named_before_any_request(monkeypatch):
    monkeypatch.delenv("MY_RAG_TOKEN", raising=False)
    settings = HttpSettings("mine", "http://127.0.0.1:9/rag", headers_env={"X-Key": "MY_RAG_TOKEN"})
    with pytest.raises(HttpConfigError, match=r"X-Key comes from \$MY_RAG_TOKEN, which is not set"):
        HttpSystem(SystemContext(llm=None, articles={}), settings)


def test_a_server_error_is_asked_again_then_answers():
    with FakeOpenAIServer(services={"/rag": service({"status": 500, "body": "busy"},
                                                    {"json": FULL})}) as server:
        assert ask(server).text == "Four bridges."
        assert len(server.service_requests) == 2


@pytest.mark.parametrize("reply, expected", [
    pytest.param({"status": 500, "body": "down"}, r"HTTP 500: 'down' after 3 attempts",
                 id="5xx-for-good"),
    pytest.param({"body": "<html>login</html>"},
                 r"cannot be read as JSON \(text/html\): '<html>login</html>'", id="html"),
    pytest.param({"body": '{"answer": "x", "usage": {"input_tokens": ' + "7" * 5000 + "}}",
                  "content_type": "application/json"}, r"cannot be read as JSON", id="huge-int"),
    pytest.param({"json": {"text": "Four."}}, r"no answer text at 'answer'", id="no-answer-field"),
    pytest.param({"json": ["Four."]}, r"the reply is a JSON list, not an object", id="not-object"),
    pytest.param({"json": {"answer": "x", "retrievals": -1}}, r"retrievals must be a whole",
                 id="negative-count"),
    pytest.param({"json": {"answer": "x", "decision": "maybe"}}, r"decision must be",
                 id="bad-decision"),
    pytest.param({"json": {"answer": "x", "contexts": "one"}}, r"contexts must be a list",
                 id="contexts-not-list"),
    pytest.param({"json": {"answer": "x", "steps": {"kind": "answer"}}},
                 r"steps must be a list of step objects", id="steps-not-list"),
    pytest.param({"json": {"answer": "x", "messages": [{"role": "assistant", "tool_calls": 1}]}},
                 r"messages\[0\].tool_calls must be a list", id="tool-calls-not-list"),
])
def test_a_bad_reply_fails_the_pair_naming_the_service(reply, expected):
    with FakeOpenAIServer(services={"/rag": service(reply)}) as server:
        with pytest.raises(EndpointError, match=expected) as caught:
            ask(server, max_attempts=3)
        assert f"system 'mine' at http://127.0.0.1:{server.port}/rag" in str(caught.value)
    assert not isinstance(caught.value, EndpointUnreachable)


def test_a_service_that_sends_slowly_meets_the_deadline():
    slow = {"json": FULL, "drip": 0.2}  # about 40 s for the whole body
    with FakeOpenAIServer(services={"/rag": service(slow)}) as server:
        started = time.monotonic()
        with pytest.raises(EndpointError, match=r"within 1 s.* after 2 attempts"):
            ask(server, timeout_s=1.0, max_attempts=2)
        assert time.monotonic() - started < 6


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_stops_the_run(status):
    with FakeOpenAIServer(services={"/rag": service({"status": status, "body": "no"})}) as server:
        with pytest.raises(EndpointUnreachable, match=f"HTTP {status}.*headers of"):
            ask(server)
        assert len(server.service_requests) == 1


def test_a_service_that_is_not_listening_stops_the_run():
    with FakeOpenAIServer() as server:
        port = server.port
    with pytest.raises(EndpointUnreachable, match="cannot connect"):
        HttpSystem(SystemContext(llm=None, articles={}),
                   HttpSettings("mine", f"http://127.0.0.1:{port}/rag")).answer(QUESTION)


@pytest.mark.parametrize("table, expected", [
    pytest.param({"url": "ftp://x"}, r"url 'ftp://x' is not usable", id="bad-url"),
    pytest.param({}, r"url None is not usable: it is missing", id="no-url"),
    pytest.param({"url": "http://h/x", "timeout": 3}, r"unknown key\(s\) \['timeout'\]",
                 id="unknown-key"),
    pytest.param({"url": "http://h/x", "timeout_s": 0}, r"timeout_s must be seconds",
                 id="zero-timeout"),
    pytest.param({"url": "http://h/x", "reply": {"answr": "a"}},
                 r"\[systems.mine\].reply: unknown key\(s\) \['answr'\]", id="reply-key"),
    pytest.param({"url": "http://h/x", "headers": {"X": 3}}, r"must be a table of names",
                 id="header-not-name"),
])
def test_a_bad_service_table_is_named(table, expected):
    with pytest.raises(HttpConfigError, match=expected):
        settings_from_table("mine", table, "freshrag.toml")


def test_a_service_resolves_by_url_or_configured_name_with_its_identity():
    by_url = resolve("mine=http://127.0.0.1:8000/rag", SYSTEMS)
    assert (by_url.name, by_url.origin, by_url.where) == ("mine", "http",
                                                          "http://127.0.0.1:8000/rag")
    configured = {"svc": settings_from_table("svc", {"url": "http://127.0.0.1:8000/rag",
                                                     "reply": {"answer": "text"}}, "f")}
    by_name = resolve("svc", SYSTEMS, configured)
    assert by_name.name == "svc" and by_name.sha256 != by_url.sha256  # another field mapping
    with pytest.raises(PluginError, match=r"name the service, as NAME=http"):
        resolve("http://127.0.0.1:8000/rag", SYSTEMS)

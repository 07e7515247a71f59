"""A service's reply read at its paths (systems/external/reply.py): OpenAI's token names read by
default beside freshrag's, the reply's fields no path read named once per service, and a
service's identity (the hash of its settings) unchanged by what the defaults read and by its
deadline and attempts."""

from __future__ import annotations

import hashlib
import json

import pytest

from freshrag.core.types import Question, SystemContext, Usage
from freshrag.systems import SYSTEMS
from freshrag.systems.external.http import HttpSettings, HttpSystem, settings_from_table
from freshrag.systems.external.plugins import resolve
from freshrag.systems.external.reply import DEFAULT_REPLY, reply_values, unread, unread_lines
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.rows import summaries

QUESTION = Question(id="q7", text="How many bridges does Town 1 have?", gold_title="Town 1")
CHAT_USAGE = {"prompt_tokens": 310, "completion_tokens": 12, "total_tokens": 322}
RESPONSES_USAGE = {"input_tokens": 200, "output_tokens": 9, "total_tokens": 209}


def answer_of(reply, settings=None):
    """The answer of a service replying `reply` over HTTP (the fake server's service route)."""
    with FakeOpenAIServer(services={"/rag": lambda request, headers: {"json": reply}}) as server:
        settings = settings or HttpSettings("svc", f"http://127.0.0.1:{server.port}/rag")
        return HttpSystem(SystemContext(llm=None, articles={}), settings).answer(QUESTION)


@pytest.mark.parametrize("usage, expected, not_read", [
    pytest.param(CHAT_USAGE, Usage(310, 12), [], id="chat-completions"),
    pytest.param(RESPONSES_USAGE, Usage(200, 9), [], id="responses-api"),
    pytest.param({**CHAT_USAGE, "input_tokens": 5, "output_tokens": 1}, Usage(5, 1),
                 ["usage.completion_tokens", "usage.prompt_tokens"],
                 id="both-names-documented-first"),
])
def test_openai_usage_is_counted_with_no_configuration(usage, expected, not_read):
    answer = answer_of({"answer": "Four.", "usage": usage})
    assert answer.usage_by_role() == {"answer": expected}
    assert answer.details["unknown"] == ["retrievals", "decision"]
    assert answer.details["service"].get("unread", []) == not_read


def test_a_configured_path_is_read_alone():
    """A path the user set is where the value is: OpenAI's names are no fallback for it."""
    settings = settings_from_table("svc", {"url": "http://127.0.0.1:9/rag", "reply": {
        "input_tokens": "meta.in", "output_tokens": "meta.out"}}, "freshrag.toml")
    values, not_read = reply_values({"answer": "x", "usage": CHAT_USAGE}, settings.reply)
    assert (values["input_tokens"], values["output_tokens"]) == (None, None)
    assert not_read == ["usage"]


@pytest.mark.parametrize("reply, read, expected", [
    pytest.param({"answer": "x"}, {"answer"}, [], id="all-read"),
    pytest.param({"answer": "x", "sources": [1], "meta": {"a": {"b": 1}}}, {"answer"},
                 ["meta", "sources"], id="named-at-highest-level"),
    pytest.param({"usage": {"prompt_tokens": 1, "cached": {"n": 2}}}, {"usage.prompt_tokens"},
                 ["usage.cached"], id="sibling-of-a-read-path"),
    pytest.param({"usage": 7}, {"usage.prompt_tokens"}, ["usage"], id="not-an-object-on-the-path"),
    pytest.param({"result": {"text": "x"}}, {"result"}, [], id="whole-object-read"),
    pytest.param({"k" * 500: 1}, set(), ["k" * 80], id="long-name-cut"),
    pytest.param({f"f{i:03}": i for i in range(120)}, set(), [f"f{i:03}" for i in range(50)],
                 id="many-fields-kept-in-part"),
])
def test_unread_fields(reply, read, expected):
    assert unread(reply, read) == expected


def test_the_sum_beside_both_counts_read_is_read_too():
    _, not_read = reply_values({"answer": "x", "usage": CHAT_USAGE}, DEFAULT_REPLY)
    assert not_read == []
    _, not_read = reply_values({"answer": "x", "usage": {"prompt_tokens": 3, "total_tokens": 3}},
                               DEFAULT_REPLY)
    assert not_read == ["usage.total_tokens"]  # one count read: the sum says something more


def test_unread_fields_are_named_once_per_service():
    def row(system, names):
        service = {"url": "u", **({"unread": names} if names else {})}
        return {"system": system, "details": {"service": service}}

    rows = [row("svc", ["meta", "sources"]), row("svc", ["meta"]), row("svc", None),
            row("other", ["usage.cached"]), {"system": "naive", "details": {}},
            {"system": "theirs", "details": None}]
    lines = unread_lines(summaries(rows))
    assert [line.split(" (")[0] for line in lines] == [
        "svc: reply fields not read: meta, sources", "other: reply fields not read: usage.cached"]


def test_the_answer_row_keeps_what_was_not_read():
    answer = answer_of({"answer": "x", "usage": CHAT_USAGE, "trace_id": "t1",
                        "debug": {"ms": 3}})
    assert answer.details["service"]["unread"] == ["debug", "trace_id"]


def hash_of(record):
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def test_a_services_identity_is_its_settings_but_the_deadline_and_attempts():
    """The hash is of the URL, body and reply names and header names as before OpenAI's names
    were read; only the deadline left it, so raising it keeps the run resumable."""
    url = "http://127.0.0.1:8000/rag"
    documented = {"answer": "answer", "contexts": "contexts",
                  "input_tokens": "usage.input_tokens", "output_tokens": "usage.output_tokens",
                  "retrievals": "retrievals", "decision": "decision", "steps": "steps",
                  "messages": "messages"}
    expected = hash_of({"url": url, "request": {"question": "question", "id": "id"},
                        "reply": documented, "headers": []})
    sources = [resolve(f"svc={url}", SYSTEMS)] + [resolve("svc", SYSTEMS, {
        "svc": settings_from_table("svc", {"url": url, "timeout_s": timeout,
                                           "max_attempts": attempts}, "freshrag.toml")})
        for timeout, attempts in ((0.2, 1), (5, 3), (600, 20))]
    assert {source.sha256 for source in sources} == {expected}
    assert [source.record()["settings"] for source in sources] == [
        {"timeout_s": 60.0, "max_attempts": 3}, {"timeout_s": 0.2, "max_attempts": 1},
        {"timeout_s": 5.0, "max_attempts": 3}, {"timeout_s": 600.0, "max_attempts": 20}]
    other = settings_from_table("svc", {"url": url, "reply": {"answer": "text"}}, "t")
    assert resolve("svc", SYSTEMS, {"svc": other}).sha256 != expected  # a reply path is identity

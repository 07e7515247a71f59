"""A service's header values are secrets (docs/faults.md, "Secrets in service headers"): stripped
and checked when configured, never sent to another origin, scrubbed from its replies and errors;
and a stop ends the wait for a slow service within a second."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from freshrag.core.config import shown_url
from freshrag.core.samples import read_samples
from freshrag.core.types import Question, SystemContext
from freshrag.llm import deadline
from freshrag.llm.client import EndpointError
from freshrag.systems.external.http import (
    HttpConfigError,
    HttpSettings,
    HttpSystem,
    scrubbed,
    settings_from_table,
)
from tests import ROOT
from tests.support.fake_openai_server import FakeOpenAIServer

QUESTION = Question(id="q7", text="How many bridges does Town 1 have?", gold_title="Town 1")
TOKEN = "canary-7Hq2-token"
BEARER = f"Bearer {TOKEN}"


def system(server, monkeypatch, value=BEARER, path="/rag", **options) -> HttpSystem:
    monkeypatch.setenv("SVC_AUTH", value)
    settings = HttpSettings("svc", f"http://127.0.0.1:{server.port}{path}",
                            headers_env={"Authorization": "SVC_AUTH"}, **options)
    return HttpSystem(SystemContext(llm=None, articles={}), settings)


def replying(spec):
    """A service route answering every request with spec(headers)."""
    return lambda request, headers: spec(headers)


def test_a_value_is_sent_without_the_whitespace_around_it(monkeypatch):
    with FakeOpenAIServer(services={"/rag": replying(lambda h: {"json": {"answer": "Four."}})}) \
            as server:
        system(server, monkeypatch, value=f"  {BEARER} \n").answer(QUESTION)
        [(_, _, sent)] = server.service_requests
    assert sent["authorization"] == BEARER


@pytest.mark.parametrize("value, expected", [
    pytest.param(f"Bearer {TOKEN}\r\nX-Evil: 1", "control character", id="line-break"),
    pytest.param(f"Bearer\t{TOKEN}", "control character", id="tab"),
    pytest.param(f"{TOKEN}\x7f", "control character", id="delete"),
    pytest.param(f"{TOKEN}\u00e9", "outside ASCII", id="not-ascii"),
    pytest.param("   \n", "holds only whitespace", id="only-whitespace"),
])
def test_a_value_that_is_not_one_header_line_is_refused_naming_the_header(monkeypatch, value,
                                                                          expected):
    monkeypatch.setenv("SVC_AUTH", value)
    settings = HttpSettings("svc", "http://127.0.0.1:9/rag", headers_env={"X-Key": "SVC_AUTH"})
    with pytest.raises(HttpConfigError, match=expected) as caught:
        HttpSystem(SystemContext(llm=None, articles={}), settings)
    said = str(caught.value)
    assert "header X-Key comes from $SVC_AUTH" in said
    assert TOKEN not in said and (not value.strip() or value.strip() not in said)


@pytest.mark.parametrize("name", [
    pytest.param("X Key", id="space"),
    pytest.param("X-Key\n", id="line-break"),
    pytest.param("X-Key:", id="colon"),
    pytest.param("", id="empty"),
])
def test_a_header_name_that_is_not_one_is_refused(name):
    with pytest.raises(HttpConfigError, match=r"\[systems.svc\].headers: .* not a header name"):
        settings_from_table("svc", {"url": "http://h/x", "headers": {name: "SVC_AUTH"}}, "f.toml")


def test_a_redirect_to_another_origin_fails_the_pair_and_sends_nothing_there(monkeypatch):
    def evil_route(request, headers):
        return {"json": {"answer": "the other origin's answer"}}

    with FakeOpenAIServer(services={"/steal": evil_route}) as evil:
        port = evil.port
        target = f"http://127.0.0.1:{port}/steal?token={TOKEN}&x=1#frag"
        redirect = {"status": 307, "body": "", "headers": {"Location": target}}
        with FakeOpenAIServer(services={"/rag": replying(lambda h: redirect)}) as server:
            with pytest.raises(EndpointError) as caught:
                system(server, monkeypatch).answer(QUESTION)
        assert evil.service_requests == []  # neither the headers nor the question went there
    said = str(caught.value)
    assert f"redirected (HTTP 307) to another origin, http://127.0.0.1:{port}/steal:" in said
    assert TOKEN not in said and "x=1" not in said


@pytest.mark.parametrize("location", [
    pytest.param("https://127.0.0.1:{port}/rag2", id="another-scheme"),
    pytest.param("http://localhost:{port}/rag2", id="another-host"),
    pytest.param("//127.0.0.1:1/rag2", id="another-port"),
    pytest.param("http://127.0.0.1:{port}:99/rag2", id="a-port-that-is-not-one"),
])
def test_each_part_of_the_origin_counts(monkeypatch, location):
    with FakeOpenAIServer(services={"/rag2": replying(lambda h: {"json": {"answer": "no"}})}) \
            as server:
        redirect = {"status": 308, "body": "",
                    "headers": {"Location": location.format(port=server.port)}}
        server.services["/rag"] = replying(lambda h: redirect)
        with pytest.raises(EndpointError, match="to another origin|a Location that is not"):
            system(server, monkeypatch).answer(QUESTION)
        assert [path for path, _, _ in server.service_requests] == ["/rag"]


def test_a_redirect_within_the_origin_keeping_the_post_is_followed(monkeypatch):
    with FakeOpenAIServer(services={"/rag2": replying(lambda h: {"json": {"answer": "Four."}})}) \
            as server:
        server.services["/rag"] = replying(
            lambda h: {"status": 308, "body": "", "headers": {"Location": "/rag2/"}})
        assert system(server, monkeypatch).answer(QUESTION).text == "Four."
        [(_, _, first), (path, request, second)] = server.service_requests
    assert path == "/rag2" and request["question"] == QUESTION.text
    assert first["authorization"] == second["authorization"] == BEARER


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_redirect_that_would_turn_the_post_into_a_get_fails_naming_the_target(monkeypatch,
                                                                               status):
    redirect = {"status": status, "body": "", "headers": {"Location": "/login?next=/rag"}}
    with FakeOpenAIServer(services={"/rag": replying(lambda h: redirect)}) as server:
        with pytest.raises(EndpointError, match=rf"redirected \(HTTP {status}\) to "
                                                rf"http://127.0.0.1:{server.port}/login, which"):
            system(server, monkeypatch).answer(QUESTION)


def test_endless_redirects_within_the_origin_end(monkeypatch):
    loop = {"status": 307, "body": "", "headers": {"Location": "/rag"}}
    with FakeOpenAIServer(services={"/rag": replying(lambda h: loop)}) as server:
        with pytest.raises(EndpointError, match="redirected more than 5 times"):
            system(server, monkeypatch).answer(QUESTION)
        assert len(server.service_requests) == 6


@pytest.mark.parametrize("echo", [
    pytest.param(lambda h: {"status": 500, "body": f"bad auth {h['authorization']}"},
                 id="5xx-body"),
    pytest.param(lambda h: {"status": 400, "body": f"token {TOKEN} is not allowed"},
                 id="4xx-body-token-alone"),
    pytest.param(lambda h: {"status": 401, "body": h["authorization"]}, id="refusal-body"),
    pytest.param(lambda h: {"body": f"<html>{TOKEN}</html>"}, id="not-json"),
    pytest.param(lambda h: {"json": {"answer": "x", "decision": TOKEN}}, id="bad-field-value"),
    pytest.param(lambda h: {"json": {"answer": "x", "steps": [{"kind": h["authorization"]}]}},
                 id="bad-step-kind"),
    pytest.param(lambda h: {"status": 302, "body": "",
                            "headers": {"Location": f"http://evil.example/{TOKEN}/x"}},
                 id="redirect-path"),
])
def test_an_error_never_quotes_a_header_value(monkeypatch, echo):
    with FakeOpenAIServer(services={"/rag": replying(echo)}) as server:
        with pytest.raises(EndpointError) as caught:
            system(server, monkeypatch, max_attempts=1).answer(QUESTION)
    said = str(caught.value)
    assert TOKEN not in said and "Bearer" not in said


def test_a_reply_echoing_a_header_is_kept_without_it(monkeypatch):
    def echo(headers):
        auth = headers["authorization"]
        return {"json": {"answer": f"Four. (you sent {auth})",
                         "contexts": [{"title": TOKEN, "text": f"about {TOKEN}", "score": 0.5}],
                         "steps": [{"kind": "search", "query": auth,
                                    "retrieved": [{"title": f"{TOKEN} page"}]}]}}

    with FakeOpenAIServer(services={"/rag": replying(echo)}) as server:
        answer = system(server, monkeypatch).answer(QUESTION)
    assert answer.text == "Four. (you sent [key])"
    assert TOKEN not in repr(answer) and "Bearer" not in answer.details["context"]


def test_every_text_and_key_of_a_reply_is_scrubbed_at_any_depth():
    deep: list = [f"deep {TOKEN}"]
    for _ in range(50_000):  # deeper than recursion could walk
        deep = [deep]
    reply = {"answer": BEARER, TOKEN: {"n": 1, "list": [TOKEN, 2.5, None]}, "deep": deep}
    clean = scrubbed(reply, [BEARER, TOKEN])
    assert clean["answer"] == "[key]" and clean["[key]"] == {"n": 1, "list": ["[key]", 2.5, None]}
    while isinstance(deep, list) and isinstance(deep[0], list):
        deep = deep[0]
    assert deep == ["deep [key]"]


def test_a_short_value_or_word_is_no_secret_and_answers_keep_it(monkeypatch):
    monkeypatch.setenv("SVC_TENANT", "en")
    with FakeOpenAIServer(services={"/rag": replying(
            lambda h: {"json": {"answer": f"Bearer {h['x-tenant']}: when, then"}})}) as server:
        monkeypatch.setenv("SVC_AUTH", BEARER)
        settings = HttpSettings("svc", f"http://127.0.0.1:{server.port}/rag", headers_env={
            "Authorization": "SVC_AUTH", "X-Tenant": "SVC_TENANT"})
        answer = HttpSystem(SystemContext(llm=None, articles={}), settings).answer(QUESTION)
    assert answer.text == "Bearer en: when, then"


@pytest.mark.parametrize("slow", [
    pytest.param({"json": {"answer": "late"}, "delay": 30}, id="no-reply"),
    pytest.param({"json": {"answer": "late" * 100}, "drip": 0.2}, id="a-byte-at-a-time"),
    pytest.param({"status": 503, "body": "busy"}, id="retrying-5xx"),
])
def test_a_stop_ends_the_wait_for_a_slow_service_within_a_second(monkeypatch, slow):
    with FakeOpenAIServer(services={"/rag": replying(lambda h: slow)}) as server:
        svc = system(server, monkeypatch, timeout_s=60.0, max_attempts=10)
        timer = threading.Timer(0.5, deadline.STOP.set)
        started = time.monotonic()
        timer.start()
        try:
            with pytest.raises(deadline.Stopped):
                svc.answer(QUESTION)
            took = time.monotonic() - started - 0.5
        finally:
            timer.cancel()
            deadline.STOP.clear()  # process-wide: cleared for the next tests
    assert took < 1.0, f"the stop took {took:.2f} s"  # 60 s deadline, 10 attempts before


@pytest.mark.parametrize("url, shown", [
    pytest.param("http://u:p@h:8/a/b?key=1#f", "http://h:8/a/b", id="user-query-fragment"),
    pytest.param("https://[::1]:9/x", "https://[::1]:9/x", id="ipv6"),
    pytest.param("http://h", "http://h", id="bare"),
])
def test_a_shown_url_drops_what_may_carry_secrets(url, shown):
    assert shown_url(url) == shown


# ---------------------------------------------------------------- every file a run writes

CANARIES = {"header from the environment": "Bearer canary-env-Zx81",
            "second header": "canary-cfg-Qw72Lk", "API key": "sk-canary-api-Pv93"}
SEEN = "visible-marker-Rt55"  # an answer's text that must reach every file: the grep can see


def _echoing_service(evil_port):
    """A service that echoes what it was sent, one way per town."""
    def route(request, headers):
        sent = " | ".join(headers[name] for name in ("authorization", "x-api-key", "x-model-key"))
        town = int(request["question"].split("Town ")[1].split()[0])
        return [
            {"json": {"answer": f"{SEEN} you sent {sent}", sent: 1,
                      "contexts": [{"title": sent, "text": f"about {sent}", "score": 0.4}],
                      "steps": [{"kind": "search", "query": sent}]}},
            {"status": 500, "body": f"server error, headers were {sent}"},
            {"status": 400, "body": f"bad request: {sent}"},
            {"status": 307, "body": "", "headers": {"Location": (
                f"http://127.0.0.1:{evil_port}/{headers['x-api-key']}?k={headers['x-model-key']}")}},
            {"body": f"<html>login {sent}</html>"},
            {"json": {"answer": "x", "decision": sent}},
            {"json": {"answer": f"{SEEN} fine"}},
            {"json": {"answer": f"{SEEN} also fine", "retrievals": 1}},
        ][town]
    return route


def _judge_echoing_the_key(request):
    from tests.support.fake_openai_server import default_reply

    if f"Chatbot's answer: {SEEN} fine" in json.dumps(request["messages"]):
        return {"error": {"status": 400, "message": f"key {CANARIES['API key']} refused here"}}
    return default_reply(request)


def test_no_secret_reaches_any_file_a_run_and_its_report_write_nor_the_terminal(tmp_path):
    from tests.support.datasets import bridges_and_mayor, write_dataset

    q, a = write_dataset(tmp_path / "in", n=8, content=bridges_and_mayor)
    with FakeOpenAIServer(services={"/steal": replying(lambda h: {"json": {"answer": "evil"}})}) \
            as evil, FakeOpenAIServer(reply=_judge_echoing_the_key) as server:
        server.services["/rag"] = _echoing_service(evil.port)
        (tmp_path / "in" / "freshrag.toml").write_text(
            f'[systems.svc]\nurl = "http://127.0.0.1:{server.port}/rag"\nmax_attempts = 1\n'
            f'headers = {{ Authorization = "SVC_AUTH", "X-Api-Key" = "SVC_KEY", '
            f'"X-Model-Key" = "FRESHRAG_API_KEY" }}\n')
        env = {**os.environ, "FRESHRAG_BASE_URL": server.base_url,
               "FRESHRAG_API_KEY": CANARIES["API key"],
               "SVC_AUTH": f" {CANARIES['header from the environment']}\n",
               "SVC_KEY": CANARIES["second header"]}
        run_dir, report_dir = tmp_path / "out" / "run", tmp_path / "out" / "report"
        said = [_freshrag(env, "run", "--questions", q, "--articles", a, "--out", run_dir,
                          "--systems", "svc", "--no-probe", "--config",
                          tmp_path / "in" / "freshrag.toml"),
                _freshrag(env, "report", run_dir, "--format", "json", "--out", report_dir,
                          "--html", report_dir / "report.html"),
                _freshrag(env, "export", run_dir, "--format", "jsonl", "--out",
                          report_dir / "export.jsonl")]
        assert evil.service_requests == []
    rows = read_samples(run_dir / "samples.jsonl")
    assert sorted(row["status"] for row in rows) == ["failed"] * 6 + ["ok"] * 2
    written = {path: path.read_bytes() for path in (tmp_path / "out").rglob("*") if path.is_file()}
    assert {".llm-cache.sqlite", "samples.jsonl", "manifest.json", "report.html",
            "summary.json", "analysis.json", "export.jsonl"} <= {path.name for path in written}
    for name in ("samples.jsonl", "report.html", "export.jsonl"):  # the files holding answers
        assert any(SEEN.encode() in data for path, data in written.items() if path.name == name)
    leaks = [(where, str(path)) for where, canary in CANARIES.items()
             for part in (canary, canary.split()[-1])
             for path, data in [*written.items(), *(("terminal", text.encode()) for text in said)]
             if part.encode() in data or json.dumps(part).encode() in data]
    assert leaks == []


def _freshrag(env, *arguments) -> str:
    done = subprocess.run([sys.executable, "-m", "freshrag", *map(str, arguments)], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout + done.stderr

"""`freshrag run --otlp-endpoint URL` (harness/reporting/otel_live.py,
docs/export.md#live-to-an-otlp-endpoint): a run's traces reach a real receiver, Arize Phoenix on
loopback, as they are written to a traces file (the same trace ids, spans, tokens and scores,
read back through Phoenix's own client), and Phoenix's span export of them imports back as the
run's answers; the headers of OTEL_EXPORTER_OTLP_HEADERS are sent and written to no file; an
endpoint that refuses, fails or hangs leaves the run whole, its failure said once and counted,
within a bounded wait."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from freshrag.cli.main import main  # noqa: E402
from freshrag.core.types import SystemContext  # noqa: E402
from freshrag.reporting import otel_live  # noqa: E402
from freshrag.reporting.loading import load_runs  # noqa: E402
from freshrag.systems.external.answers_file import factory  # noqa: E402
from freshrag.systems.external.traces_file import load_traces  # noqa: E402
from tests.support.agent_script import searches_then_answers  # noqa: E402
from tests.support.datasets import write_dataset  # noqa: E402
from tests.support.fake_openai_server import FakeOpenAIServer  # noqa: E402
from tests.support.fakes import use_endpoint  # noqa: E402
from tests.support.otlp import attrs, requests_in, spans_of  # noqa: E402

HEADER = "x-api-key"
SECRET = "otlp-header-secret-5e1f"  # in the environment only: never in a file


def freshrag(*args: Any) -> int:
    return main([str(arg) for arg in args])


def run_sending(root: Path, endpoint: str, monkeypatch, services=None, systems="naive,react"):
    """A run of `systems` on the fake server (3 questions), its traces sent to `endpoint`."""
    with FakeOpenAIServer(reply=searches_then_answers(2), services=services) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-live")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"{HEADER}={SECRET}")
        write_dataset(root / "data", 3)
        started = time.monotonic()
        code = freshrag("run", "--dataset", root / "data", "--systems", systems, "--out",
                        root / "run", "--no-probe", "--concurrency", "1", "--max-steps", "5",
                        "--otlp-endpoint", endpoint.replace("{fake}", server.base_url[:-3]))
        return code, time.monotonic() - started, server.service_requests


def no_file_holds_the_secret(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def phoenix_spans(base: str, traces: set[str], count: int) -> list[dict[str, Any]]:
    """The spans of `traces` Phoenix holds, once it holds `count` (it ingests in the background)."""
    from phoenix.client import Client

    client, deadline = Client(base_url=base), time.monotonic() + 120
    while True:
        found = [span for span in client.spans.get_spans(project_identifier="default",
                                                         limit=100_000)
                 if span["context"]["trace_id"] in traces]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(1)


def test_a_runs_traces_reach_phoenix_as_a_traces_file_has_them(tmp_path, monkeypatch, phoenix,
                                                              capsys):
    code, _, _ = run_sending(tmp_path, phoenix, monkeypatch)
    assert code == 0
    said = capsys.readouterr().err
    assert "traces: 6 sent to " in said and "not sent" not in said
    assert freshrag("export", tmp_path / "run", "--format", "otel", "--openinference",
                    "--out", tmp_path / "traces.jsonl") == 0
    written = [span for request in requests_in(tmp_path / "traces.jsonl")
               for span in spans_of(request)]
    traces = {span.trace_id.hex() for span in written}
    got = phoenix_spans(phoenix, traces, len(written))
    assert len(traces) == 6
    # the same spans: by trace, name and parent
    assert Counter((s["context"]["trace_id"], s["name"], s["parent_id"]) for s in got) == \
        Counter((s.trace_id.hex(), s.name, s.parent_span_id.hex() or None) for s in written)

    def tokens(spans, attributes):
        spent: Counter = Counter()
        for span in spans:
            found = attributes(span)
            if found.get("gen_ai.operation.name") == "chat":
                spent[found["freshrag.role"], "in"] += found["gen_ai.usage.input_tokens"]
                spent[found["freshrag.role"], "out"] += found["gen_ai.usage.output_tokens"]
        return spent
    assert tokens(got, lambda s: s["attributes"]) == tokens(written, attrs) != Counter()

    def scores(events):
        return sorted((e["gen_ai.evaluation.name"], e.get("gen_ai.evaluation.score.value"))
                      for e in events)
    assert scores(e.get("attributes", {}) for s in got for e in s["events"]) == \
        scores(attrs(e) for s in written for e in s.events) != []
    no_file_holds_the_secret(tmp_path)

    # Phoenix's span export of the run, one system's: the run's answers, steps and tokens again
    export = tmp_path / "phoenix.json"
    react = [s for s in got if s["context"]["trace_id"] in {
        x["context"]["trace_id"] for x in got if x["name"] == "invoke_agent react"}]
    export.write_text(json.dumps(react))
    rows = {row["question_id"]: row for row in load_runs([tmp_path / "run"])
            if row["system"] == "react"}
    from freshrag.core.dataset import load_dataset_dir

    questions = load_dataset_dir(tmp_path / "data").questions
    traced = load_traces(export, questions, "react-again")
    assert sorted(traced.by_question) == sorted(rows)
    for question in questions:
        answer = factory(traced)(SystemContext(llm=None, articles={})).answer(question)
        row = rows[question.id]
        assert answer.text == row["answer"]
        assert [(s.kind, s.query) for s in answer.steps] == \
            [(s["kind"], s["query"]) for s in row["steps"]]
        assert {role: (u.input, u.output) for role, u in answer.usage_by_role().items()} == \
            {role: (u["input"], u["output"]) for role, u in row["usage"].items() if role != "judge"}


@pytest.mark.parametrize("reply", [
    pytest.param({"status": 503, "json": {"error": "down"}}, id="fails"),
    pytest.param({"status": 401, "json": {"error": "bad key"}}, id="refuses"),
    pytest.param({"status": 200, "body": b"x", "length": 100}, id="cuts-its-reply-short"),
    pytest.param({"delay": 60, "json": {}}, id="hangs"),
])
def test_an_endpoint_that_fails_or_hangs_leaves_the_run_whole(tmp_path, monkeypatch, capsys,
                                                              reply):
    monkeypatch.setattr(otel_live, "TIMEOUT_S", 2.0)
    code, took, requests = run_sending(tmp_path, "{fake}", monkeypatch,
                                       services={"/v1/traces": lambda body, headers: reply},
                                       systems="naive")
    assert code == 0
    rows = load_runs([tmp_path / "run"])
    assert len(rows) == 3 and all(row["status"] == "ok" for row in rows)
    said = capsys.readouterr().err
    assert said.count("did not take the run's traces") == 1, said
    assert "traces: 0 sent to http://127.0.0.1:" in said and "3 not sent" in said, said
    assert took < 30  # one bounded wait, not one per trace
    assert requests and all(headers.get(HEADER) == SECRET for _, _, headers in requests)
    no_file_holds_the_secret(tmp_path)


def test_evaluate_sends_the_traces_too(tmp_path, monkeypatch, capsys):
    """The library's run (freshrag.evaluate) with `otlp_endpoint=`: an endpoint that takes them."""
    from freshrag import evaluate

    taken = {"status": 200, "body": b"", "content_type": "application/x-protobuf"}
    with FakeOpenAIServer(services={"/v1/traces": lambda body, headers: taken}) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-live")
        write_dataset(tmp_path / "data", 3)
        evaluate(tmp_path / "data", "naive", out=tmp_path / "run", probe=None, concurrency=1,
                 otlp_endpoint=server.base_url[:-3])
        assert [path for path, _, _ in server.service_requests][:1] == ["/v1/traces"]
    assert "traces: 3 sent to http://127.0.0.1:" in capsys.readouterr().err


def test_an_endpoint_nobody_listens_on_leaves_the_run_whole(tmp_path, monkeypatch, capsys):
    from tests.support.phoenix import free_port

    monkeypatch.setattr(otel_live, "TIMEOUT_S", 2.0)
    code, took, _ = run_sending(tmp_path, f"http://127.0.0.1:{free_port()}", monkeypatch,
                                systems="naive")
    assert code == 0 and took < 30
    said = capsys.readouterr().err
    assert said.count("did not take the run's traces") == 1 and "3 not sent" in said, said


@pytest.mark.parametrize("endpoint, problem", [
    pytest.param("localhost:4318", "is not a URL", id="no-scheme"),
    pytest.param("ftp://h/v1/traces", "is not a URL", id="not-http"),
])
def test_a_bad_endpoint_is_refused_before_the_run(tmp_path, capsys, endpoint, problem):
    with pytest.raises(SystemExit) as refused:
        freshrag("run", "--otlp-endpoint", endpoint, "--out", tmp_path / "run")
    assert refused.value.code == 2 and problem in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_disabled_sdk_is_refused_before_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    code, _, _ = run_sending(tmp_path, "http://127.0.0.1:9/v1/traces", monkeypatch)
    assert code == 2 and "OTEL_SDK_DISABLED=true" in capsys.readouterr().err
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_the_endpoint_gains_the_traces_path_once():
    assert otel_live.traces_url("http://h:4318") == "http://h:4318/v1/traces"
    assert otel_live.traces_url("http://h:4318/") == "http://h:4318/v1/traces"
    assert otel_live.traces_url("https://h/otel/v1/traces") == "https://h/otel/v1/traces"

"""`freshrag export --format otel` (docs/export.md#opentelemetry-traces): each line of the file
parsed back by protobuf's own json_format into opentelemetry-proto's `ExportTraceServiceRequest`
(the schema check: an unknown field or a wrong type fails it), and checked against the rows it
came from: one trace per answered pair, the spans' parent links a tree under the pair's
`invoke_agent` span, a span per step, the tokens of each role equal to the row's usage, the
searches' documents, every grade and score an evaluation event with its reason, the failed pairs
left out and counted, the same bytes for the same run, and text that is no valid UTF-8 made safe.

The run is made once for the module on the fake server: `naive` (one search, then the answer)
and `react` scripted to search twice and answer (tests/support/agent_script.py)."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)

from freshrag.cli.main import main  # noqa: E402
from freshrag.reporting import export, otel  # noqa: E402
from freshrag.reporting.loading import load_runs  # noqa: E402
from tests.support.agent_runs import agents_run, scripted_endpoint  # noqa: E402
from tests.support.otlp import attrs, requests_in, spans_of  # noqa: E402
from tests.support.runs import sample as row_by_hand  # noqa: E402
from tests.support.runs import write_run  # noqa: E402

SYSTEMS = ("naive", "react")
NS = 1_000_000_000


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Any:
    with scripted_endpoint("sk-otel"):
        return agents_run(tmp_path_factory.mktemp("otel"), SYSTEMS)


def freshrag(*args: Any) -> int:
    return main([str(arg) for arg in args])


def tree(spans: list[Any]) -> tuple[Any, dict[bytes, list[Any]]]:
    """The one root span and each span's children, in start order; fails unless the parent
    links form one tree over every span of one trace."""
    assert len({span.trace_id for span in spans}) == 1
    roots = [span for span in spans if not span.parent_span_id]
    assert len(roots) == 1
    ids = {span.span_id for span in spans}
    assert len(ids) == len(spans)
    children: dict[bytes, list[Any]] = defaultdict(list)
    for span in spans:
        if span.parent_span_id:
            assert span.parent_span_id in ids
            children[span.parent_span_id].append(span)
    for kids in children.values():
        kids.sort(key=lambda span: span.start_time_unix_nano)
    reached, stack = 0, [roots[0]]
    while stack:  # every span reached from the root: no cycle, nothing apart
        span = stack.pop()
        reached += 1
        stack += children[span.span_id]
    assert reached == len(spans)
    return roots[0], children


def exported(run_dir: Path, out: Path, *extra: Any) -> list[ExportTraceServiceRequest]:
    assert freshrag("export", run_dir, "--format", "otel", "--out", out, *extra) == 0
    return requests_in(out)


# --- a real run -------------------------------------------------------------------------------

def test_each_answered_pair_is_one_trace_of_its_steps(run, tmp_path, capsys):
    requests = exported(run, tmp_path / "traces.jsonl")
    assert "6 OTLP traces (2 systems)" in capsys.readouterr().out
    rows = {(row["system"], row["question_id"]): row for row in load_runs([run])}
    assert len(requests) == len(rows) == 6
    assert len({spans_of(request)[0].trace_id for request in requests}) == 6
    for request in requests:
        root, children = tree(spans_of(request))
        agent = attrs(root)
        row = rows[agent["gen_ai.agent.name"], agent["freshrag.question_id"]]
        assert root.name == f"invoke_agent {row['system']}"
        assert agent["gen_ai.operation.name"] == "invoke_agent"
        assert json.loads(agent["gen_ai.output.messages"])[0]["parts"][0]["content"] == \
            row["answer"]
        steps = [s for s in children[root.span_id] if attrs(s).get("freshrag.step.kind")]
        assert [attrs(s)["freshrag.step.kind"] for s in steps] == \
            [step["kind"] for step in row["steps"]]
        searches = [s for s in steps if s.name == "execute_tool search"]
        for span, step in zip(searches, [s for s in row["steps"] if s["kind"] == "search"]):
            assert json.loads(attrs(span)["gen_ai.tool.call.arguments"]) == {
                "query": step["query"]}
            (retrieval,) = [c for c in children[span.span_id] if c.name == "retrieval"]
            assert attrs(retrieval)["gen_ai.retrieval.query.text"] == step["query"]
            assert json.loads(attrs(retrieval)["gen_ai.retrieval.documents"]) == [
                {"id": f"{c['title']}#{c['index']}", "score": c["score"]}
                for c in step["retrieved"]] != []
        # the pair's span spans the pair: it ends when the row was written, its latency before
        assert root.end_time_unix_nano == otel._finished_ns(row, [])
        assert root.end_time_unix_nano - root.start_time_unix_nano == round(row["latency_s"] * NS)
        assert all(root.start_time_unix_nano <= s.start_time_unix_nano <= s.end_time_unix_nano
                   <= root.end_time_unix_nano for s in spans_of(request))


def test_the_tokens_of_each_role_are_the_rows_usage(run, tmp_path):
    rows = {(row["system"], row["question_id"]): row for row in load_runs([run])}
    for request in exported(run, tmp_path / "traces.jsonl"):
        spans = spans_of(request)
        root, _ = tree(spans)
        row = rows[attrs(root)["gen_ai.agent.name"], attrs(root)["freshrag.question_id"]]
        spent: dict[str, dict[str, int]] = defaultdict(lambda: {"input": 0, "output": 0})
        chats = [attrs(span) for span in spans if attrs(span).get("gen_ai.operation.name")
                 == "chat"]
        for chat in chats:
            assert chat["gen_ai.request.model"] and chat["gen_ai.provider.name"] == "openai"
            spent[chat["freshrag.role"]]["input"] += chat["gen_ai.usage.input_tokens"]
            spent[chat["freshrag.role"]]["output"] += chat["gen_ai.usage.output_tokens"]
        assert len(chats) == len(row["calls"])
        assert dict(spent) == {role: {"input": u["input"], "output": u["output"]}
                               for role, u in row["usage"].items()}
        system = [u for role, u in row["usage"].items() if role != "judge"]
        assert attrs(root)["gen_ai.usage.input_tokens"] == sum(u["input"] for u in system) > 0


def test_every_grade_is_an_evaluation_event_with_its_reason(run, tmp_path):
    rows = {(row["system"], row["question_id"]): row for row in load_runs([run])}
    for request in exported(run, tmp_path / "traces.jsonl"):
        root, _ = tree(spans_of(request))
        row = rows[attrs(root)["gen_ai.agent.name"], attrs(root)["freshrag.question_id"]]
        events = [(event.name, attrs(event)) for event in root.events]
        assert [(name, e["gen_ai.evaluation.name"], e["gen_ai.evaluation.score.value"])
                for name, e in events] == [
            ("gen_ai.evaluation.result", "truthfulness", row["grade"]["truthfulness"]),
            ("gen_ai.evaluation.result", "relevance", row["grade"]["relevance"])]
        assert all(e.get("gen_ai.evaluation.explanation") == row["grade"].get("reason")
                   and e["freshrag.scorer"] == "judge" for _, e in events)


def test_the_same_run_exports_the_same_bytes(run, tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    exported(run, first)
    exported(run, second)
    assert first.read_bytes() == second.read_bytes()


# --- rows made by hand ------------------------------------------------------------------------

def test_unscored_answers_and_each_scorer_are_events_and_failed_pairs_are_left_out(
        tmp_path, capsys):
    unscored = row_by_hand("q2", "naive", truth=None)
    scored = {**row_by_hand("q1", "naive"), "grade": {
        "truthfulness": 5, "relevance": 4, "unscored_reason": None, "raw": [],
        "reason": "states the span"}}
    run_dir = write_run(tmp_path / "hand", [scored, unscored,
                                            row_by_hand("q3", "naive", status="failed")])
    requests = exported(run_dir, tmp_path / "t.jsonl")
    assert "2 OTLP traces (1 system; 1 failed pair left out" in capsys.readouterr().out
    events = {attrs(tree(spans_of(r))[0])["freshrag.question_id"]:
              [attrs(e) for e in tree(spans_of(r))[0].events] for r in requests}
    assert set(events) == {"q1", "q2"}
    assert [(e["gen_ai.evaluation.score.value"], e["gen_ai.evaluation.explanation"])
            for e in events["q1"]] == [(5.0, "states the span"), (4.0, "states the span")]
    assert [(e["gen_ai.evaluation.name"], e["gen_ai.evaluation.score.label"],
             e["gen_ai.evaluation.explanation"]) for e in events["q2"]] == [
        ("truthfulness", "unscored", "no tool call"), ("relevance", "unscored", "no tool call")]
    assert all("gen_ai.evaluation.score.value" not in e for e in events["q2"])


def test_each_scorers_metrics_are_events_and_a_scorer_without_them_says_why():
    row = {**row_by_hand("q1", "naive", judge=None), "run": "r", "grade": None, "scores": {
        "faithfulness": {"status": "scored", "metrics": {"faithfulness": 0.75},
                         "reason": "3 of 4 statements"},
        "claims": {"status": "scored", "metrics": {"claims_recall": 0.5,
                                                   "claims_precision": 1.0}, "reason": None},
        "context_relevance": {"status": "not_applicable", "metrics": {},
                              "reason": "nothing was retrieved"}}}
    assert [{k: v for k, v in e.items() if v is not None} for e in otel.evaluations(row)] == [
        {"gen_ai.evaluation.name": "claims.claims_precision", "freshrag.scorer": "claims",
         "gen_ai.evaluation.score.value": 1.0},
        {"gen_ai.evaluation.name": "claims.claims_recall", "freshrag.scorer": "claims",
         "gen_ai.evaluation.score.value": 0.5},
        {"gen_ai.evaluation.name": "context_relevance", "freshrag.scorer": "context_relevance",
         "gen_ai.evaluation.score.label": "not_applicable",
         "gen_ai.evaluation.explanation": "nothing was retrieved"},
        {"gen_ai.evaluation.name": "faithfulness", "freshrag.scorer": "faithfulness",
         "gen_ai.evaluation.score.value": 0.75,
         "gen_ai.evaluation.explanation": "3 of 4 statements"}]


def test_a_step_of_no_call_or_several_is_a_span_holding_its_calls(tmp_path):
    row = row_by_hand("q1", "agent", decision="decider")
    row["calls"] = [{"role": "decision", "model": "decider", "latency_s": 0.5,
                     "usage": {"input": 7, "output": 1}},
                    {"role": "answer", "model": "model-a", "latency_s": 1.0,
                     "usage": {"input": 100, "output": 10}},
                    {"role": "answer", "model": "model-a", "latency_s": 2.0,
                     "usage": {"input": 100, "output": 10}}, *row["calls"][2:]]
    row["steps"] = [{"kind": "decide", "text": "retrieve", "calls": 0},
                    {"kind": "read", "title": "Gold q1", "calls": 0},
                    {"kind": "answer", "text": "an answer", "calls": 3}]
    (request,) = exported(write_run(tmp_path / "steps", [row]), tmp_path / "t.jsonl")
    root, children = tree(spans_of(request))
    decide, read, answer, judge = children[root.span_id]
    assert (decide.name, decide.start_time_unix_nano) == ("decide", decide.end_time_unix_nano)
    assert (read.name, json.loads(attrs(read)["gen_ai.tool.call.arguments"])) == (
        "execute_tool read", {"title": "Gold q1"})
    assert answer.name == "answer" and [c.name for c in children[answer.span_id]] == [
        "chat decider", "chat model-a", "chat model-a"]
    assert answer.end_time_unix_nano - answer.start_time_unix_nano == round(3.5 * NS)
    assert judge.name == "chat judge-1" and attrs(judge)["freshrag.role"] == "judge"


def test_text_that_is_not_valid_utf8_is_made_safe(tmp_path):
    """The readers already make a lone surrogate U+FFFD; rows given to the exporter directly
    are made safe the same way (protobuf refuses such text), other text kept as it is."""
    row = {**row_by_hand("q1", "naive"), "run": "r", "question": "Zürich \ud800 ok",
           "answer": "日本 \udfff"}
    row["steps"] = [{"kind": "search", "query": "Zürich \ud800", "calls": 0,
                     "retrieved": [{"title": "Zürich \udc80", "index": 2, "score": 0.5}]}]
    (line,) = otel.trace_records([row])  # type: ignore[list-item]
    (request,) = requests_in(_written(tmp_path / "t.jsonl", line))
    root, children = tree(spans_of(request))
    assert json.loads(attrs(root)["gen_ai.input.messages"])[0]["parts"][0]["content"] == \
        "Zürich \ufffd ok"
    (search,) = [s for s in children[root.span_id] if s.name == "execute_tool search"]
    assert attrs(search)["gen_ai.tool.call.arguments"] == '{"query": "Zürich \ufffd"}'
    (retrieval,) = children[search.span_id]
    assert json.loads(attrs(retrieval)["gen_ai.retrieval.documents"]) == [
        {"id": "Zürich \ufffd#2", "score": 0.5}]
    assert "日本" in (tmp_path / "t.jsonl").read_text(encoding="utf-8")


def _written(path: Path, record: dict[str, Any]) -> Path:
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def test_out_dash_writes_the_traces_alone_to_standard_output(tmp_path, capsys):
    run_dir = write_run(tmp_path / "r", [row_by_hand("q1", "naive")])
    exported(run_dir, tmp_path / "t.jsonl")
    capsys.readouterr()
    assert freshrag("export", run_dir, "--format", "otel", "--out", "-") == 0
    said = capsys.readouterr()
    assert said.out == (tmp_path / "t.jsonl").read_text(encoding="utf-8")
    assert said.err.startswith("standard output: 1 OTLP trace (")


def test_without_the_traces_extra_the_format_is_refused_naming_it(monkeypatch):
    monkeypatch.delitem(sys.modules, "freshrag.reporting.otel")
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if not installed
    with pytest.raises(export.ExportError, match=r"pip install 'freshrag\[traces\]'"):
        export.records([row_by_hand("q1", "naive")], "otel")  # type: ignore[list-item]


def test_the_sdk_turned_off_by_its_variable_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    with pytest.raises(export.ExportError, match="OTEL_SDK_DISABLED=true"):
        export.records([row_by_hand("q1", "naive")], "otel")  # type: ignore[list-item]


# --- OpenInference ----------------------------------------------------------------------------

OI_KIND = {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL",
           "retrieval": "RETRIEVER", None: "CHAIN"}


def test_openinference_attributes_stand_beside_the_genai_ones(run, tmp_path):
    plain = exported(run, tmp_path / "plain.jsonl")
    both = exported(run, tmp_path / "both.jsonl", "--openinference")
    rows = {(row["system"], row["question_id"]): row for row in load_runs([run])}
    for request, bare in zip(both, plain):
        spans = spans_of(request)
        assert [s.span_id for s in spans] == [s.span_id for s in spans_of(bare)]
        for span, without in zip(spans, spans_of(bare)):
            found = attrs(span)
            assert {k: v for k, v in found.items() if k in attrs(without)} == attrs(without)
            assert found["openinference.span.kind"] == OI_KIND[found.get("gen_ai.operation.name")]
            if found["openinference.span.kind"] == "LLM":
                assert (found["llm.model_name"], found["llm.token_count.prompt"],
                        found["llm.token_count.completion"]) == (
                    found["gen_ai.request.model"], found["gen_ai.usage.input_tokens"],
                    found["gen_ai.usage.output_tokens"])
            if found["openinference.span.kind"] == "RETRIEVER":
                documents = json.loads(found["gen_ai.retrieval.documents"])
                assert [(found[f"retrieval.documents.{i}.document.id"],
                         found[f"retrieval.documents.{i}.document.score"])
                        for i in range(len(documents))] == [
                    (d["id"], d["score"]) for d in documents]
            if found["openinference.span.kind"] == "TOOL":
                assert found["tool.name"] == found["gen_ai.tool.name"]
        root, _ = tree(spans)
        row = rows[attrs(root)["agent.name"], attrs(root)["freshrag.question_id"]]
        assert (attrs(root)["input.value"], attrs(root)["output.value"]) == (
            row["question"], row["answer"])


def test_openinference_is_for_the_traces_only(tmp_path, capsys):
    run_dir = write_run(tmp_path / "r", [row_by_hand("q1", "naive")])
    assert freshrag("export", run_dir, "--format", "jsonl", "--openinference", "--out",
                    tmp_path / "x.jsonl") == 2
    assert "--openinference is for --format otel, not jsonl" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()


def test_a_scorers_scores_in_scores_jsonl_reach_the_trace(tmp_path):
    from freshrag.core.runfiles import SCORES
    from freshrag.scoring.store import answer_sha256

    row = row_by_hand("q1", "naive")
    run_dir = write_run(tmp_path / "scored", [row])
    score = {"dataset": row["dataset"], "question_id": "q1", "system": "naive",
             "answer_sha256": answer_sha256(row["answer"]), "scorer": "faithfulness",
             "repeat": 0, "status": "scored", "metrics": {"faithfulness": 0.5},
             "reason": "1 of 2 statements", "usage": {}}
    (run_dir / SCORES).write_text(json.dumps(score) + "\n", encoding="utf-8")
    (request,) = exported(run_dir, tmp_path / "t.jsonl")
    events = [attrs(event) for event in tree(spans_of(request))[0].events]
    assert [(e["gen_ai.evaluation.name"], e["freshrag.scorer"], e["gen_ai.evaluation.score.value"],
             e.get("gen_ai.evaluation.explanation")) for e in events] == [
        ("truthfulness", "judge", 4.0, None), ("relevance", "judge", 4.0, None),
        ("faithfulness", "faithfulness", 0.5, "1 of 2 statements")]

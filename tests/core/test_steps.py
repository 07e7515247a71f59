"""An answer's trajectory as a row holds it (harness/core/steps.py, docs/run-format.md#steps):
a repeated search marked where the row is made, a user's steps written as given, a malformed
`steps` refused by the readers naming the field, and a light read keeping the steps."""

import json

import pytest

from freshrag.core.light_steps import whole_steps
from freshrag.core.row_check import sample_problem
from freshrag.core.samples import read_samples, read_summaries, sample_row
from freshrag.core.steps import step_records
from freshrag.core.types import LLMResponse, Question, RetrievedChunk, Step, SystemAnswer, Usage

QUESTION = Question("q1", "Which bridge has nine spans?", "Velmora")
CHUNK = RetrievedChunk("Velmora", 2, "Title: Velmora\nNine spans.", 0.8123456789)


def call(role: str, usage: Usage = Usage(7, 2), latency: float = 0.25) -> LLMResponse:
    return LLMResponse(role, "m", "text", None, None, usage, latency, False, [])


def test_a_search_repeating_an_earlier_query_of_the_answer_is_marked():
    steps = [Step("search", query="velmora"), Step("reason", (call("answer"),), text="hm"),
             Step("search", query="velmora spans"), Step("search", query="velmora"),
             Step("search", query="velmora spans"), Step("answer", (call("answer"),), text="9")]
    assert [r["repeated"] for r in step_records(steps)] == [False, False, False, True, True, False]


def test_a_users_steps_are_written_with_their_calls_tokens_and_latency():
    calls = (call("decision", Usage(5, 1), 0.5), call("answer", Usage(30, 4), 1.25))
    answer = SystemAnswer("Nine.", calls=list(calls), retrievals=1, steps=[
        Step("search", calls[:1], query="velmora bridge", retrieved=(CHUNK,)),
        Step("answer", calls[1:], text="Nine.")])
    row = json.loads(json.dumps(sample_row("A_f", QUESTION, "mine", answer, None, list(calls), 2.0)))
    assert row["steps"] == [
        {"kind": "search", "query": "velmora bridge",
         "retrieved": [{"title": "Velmora", "index": 2, "score": 0.812346}], "title": None,
         "text": None, "repeated": False, "calls": 1,
         "usage": {"decision": {"input": 5, "output": 1, "estimated": False}}, "latency_s": 0.5},
        {"kind": "answer", "query": None, "retrieved": [], "title": None, "text": "Nine.",
         "repeated": False, "calls": 1,
         "usage": {"answer": {"input": 30, "output": 4, "estimated": False}}, "latency_s": 1.25}]
    assert sample_problem(row) is None


def test_an_answer_without_steps_and_a_failed_pair_write_none():
    assert sample_row("A_f", QUESTION, "x", SystemAnswer("a"), None, [], 1.0)["steps"] == []
    assert sample_row("A_f", QUESTION, "x", None, None, [], 1.0, error="boom")["steps"] == []


def test_a_step_of_an_unknown_kind_is_refused_when_made():
    with pytest.raises(ValueError, match="a step's kind must be one of decide, search"):
        Step("jump")


def _row(**fields) -> dict:
    row = json.loads(json.dumps(sample_row("A_f", QUESTION, "naive", SystemAnswer("a"), None,
                                           [], 1.0)))
    return {**row, **fields}


def test_a_row_written_before_steps_existed_is_read():
    row = _row()
    del row["steps"]
    assert sample_problem(row) is None


@pytest.mark.parametrize("steps, message", [
    pytest.param("search", "field 'steps' must be a list", id="not-a-list"),
    pytest.param(["search"], "steps[0] must be an object whose kind is one of", id="not-object"),
    pytest.param([{"kind": "answer"}, {"kind": "jump"}], "steps[1] must be an object whose kind",
                 id="unknown-kind"),
    pytest.param([{"query": "x"}], "steps[0] must be an object whose kind", id="no-kind"),
    pytest.param([{"kind": "search", "query": 3}], "steps[0].query must be text or null",
                 id="query-number"),
    pytest.param([{"kind": "search", "retrieved": [{"title": "T"}]}],
                 "steps[0].retrieved must be a list of", id="chunk-without-index"),
    pytest.param([{"kind": "search", "retrieved": {"title": "T"}}],
                 "steps[0].retrieved must be a list", id="retrieved-object"),
    pytest.param([{"kind": "search", "repeated": "yes"}], "steps[0].repeated must be true or false",
                 id="repeated-text"),
    pytest.param([{"kind": "answer", "calls": True}], "steps[0].calls must be a whole number",
                 id="calls-boolean"),
    pytest.param([{"kind": "answer", "usage": {"answer": {"input": -1, "output": 0}}}],
                 "steps[0]: usage of 'answer'", id="usage-negative"),
])
def test_a_malformed_steps_field_is_refused_naming_it(steps, message):
    problem = sample_problem(_row(steps=steps))
    assert problem is not None and message in problem


def test_a_light_read_keeps_the_steps_without_chunk_text(tmp_path):
    chunk = {"title": "Velmora", "index": 2, "score": 0.8, "text": "Nine spans."}
    steps = [{"kind": "search", "query": "q", "retrieved": [chunk]}, {"kind": "answer", "text": "a"}]
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(_row(steps=steps)) + "\n")
    [made] = read_summaries(path)  # what the tables read; the rest read again
    assert made.steps == [{"kind": "search", "retrieved": [{"title": "Velmora"}]},
                          {"kind": "answer"}]
    assert list(whole_steps([made.steps])) == [[{"kind": "search", "query": "q", "retrieved": [
        {"title": "Velmora", "index": 2, "score": 0.8}]}, {"kind": "answer", "text": "a"}]]
    assert read_samples(path)[0]["steps"] == steps

"""Traces made elsewhere as a system (systems/external/traces_file.py, read by
systems/external/spans_read.py): OTLP/JSON in the GenAI conventions' attributes or OpenInference's,
and Phoenix's span exports, each trace replayed as the answer to its question with its steps and
tokens; every trace left out (no question, several, a cycle, no answer) and every span or
attribute that cannot be used counted and named, never a traceback; a file of a million spans
read in bounded memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freshrag.core.types import Question, SystemContext, Usage  # noqa: E402
from freshrag.systems import SYSTEMS  # noqa: E402
from freshrag.systems.external.answers_file import AnswersFileError, factory  # noqa: E402
from freshrag.systems.external.plugins import PluginError, resolve  # noqa: E402
from freshrag.systems.external.spans_read import TracesFileError  # noqa: E402
from freshrag.systems.external.traces_file import load_traces  # noqa: E402
from tests.fuzz.support import budget  # noqa: E402

QUESTIONS = [Question(id=f"q{i}", text=f"How many bridges does Town {i} have?",
                      gold_title=f"Town {i}") for i in range(1, 4)]
T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def value(item):
    if isinstance(item, bool):
        return {"boolValue": item}
    if isinstance(item, int):
        return {"intValue": str(item)}
    if isinstance(item, float):
        return {"doubleValue": item}
    if isinstance(item, list):
        return {"arrayValue": {"values": [value(x) for x in item]}}
    return {"stringValue": item}


def span(trace, ident, parent, name, start, end, **attributes):
    """An OTLP/JSON span; start and end in milliseconds after T0 (end None: not ended)."""
    found = {"traceId": f"{trace:032x}", "spanId": f"{ident:016x}", "name": name,
             "kind": 1, "startTimeUnixNano": str(T0 + start * MS),
             "endTimeUnixNano": "0" if end is None else str(T0 + end * MS),
             "attributes": [{"key": key.replace("__", "."), "value": value(item)}
                            for key, item in attributes.items()]}
    if parent:
        found["parentSpanId"] = f"{parent:016x}"
    return found


def request(*spans):
    return {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": "theirs"}, "spans": list(spans)}]}]}


def messages(role, text):
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def agent(trace, question, answer, start=0, end=100, **attributes):
    return span(trace, 1, None, "invoke_agent mine", start, end, gen_ai__operation__name="invoke_agent",
                gen_ai__input__messages=messages("user", question),
                gen_ai__output__messages=messages("assistant", answer), **attributes)


def chat(trace, ident, parent, start, end, tokens=(10, 2), **attributes):
    return span(trace, ident, parent, "chat gpt-x", start, end, gen_ai__operation__name="chat",
                gen_ai__request__model="gpt-x", gen_ai__usage__input_tokens=tokens[0],
                gen_ai__usage__output_tokens=tokens[1], **attributes)


def genai_trace(trace, question, answer="Five."):
    """An agent of another tool: a model call choosing a search, the search and what it found,
    then the model call that answers."""
    return [agent(trace, question, answer),
            chat(trace, 2, 1, 0, 10, (100, 5)),
            span(trace, 3, 1, "execute_tool search", 10, 20, gen_ai__operation__name="execute_tool",
                 gen_ai__tool__name="search",
                 gen_ai__tool__call__arguments=json.dumps({"query": "Town bridges"})),
            span(trace, 4, 3, "retrieval", 12, 18, gen_ai__operation__name="retrieval",
                 gen_ai__retrieval__query__text="Town bridges",
                 gen_ai__retrieval__documents=json.dumps([{"id": "Town 2#0", "score": 0.9},
                                                          {"id": "Town 1", "score": 0.4}])),
            chat(trace, 5, 1, 20, 50, (300, 9), gen_ai__output__messages=messages("assistant",
                                                                                  answer))]


def write(path, *requests):
    path.write_text("".join(json.dumps(item) + "\n" for item in requests), encoding="utf-8")
    return path


def replay(traces, question):
    return factory(traces)(SystemContext(llm=None, articles={})).answer(question)


def test_a_genai_trace_replays_its_answer_steps_and_tokens(tmp_path):
    path = write(tmp_path / "traces.json", request(*genai_trace(7, "how many bridges does  town 2 HAVE?")))
    traces = load_traces(path, QUESTIONS, "mine")
    assert list(traces.by_question) == ["q2"] and traces.unanswered == ["q1", "q3"]
    answer = replay(traces, QUESTIONS[1])
    assert answer.text == "Five." and answer.retrievals == 1
    assert [step.kind for step in answer.steps] == ["reason", "search", "answer"]
    search = answer.steps[1]
    assert search.query == "Town bridges"
    assert [(c.title, c.index, c.score) for c in search.retrieved] == [("Town 2", 0, 0.9),
                                                                       ("Town 1", 1, 0.4)]
    assert answer.usage_by_role() == {"answer": Usage(400, 14)}
    assert [call.latency_s for call in answer.calls] == [0.01, 0.03]
    assert answer.latency_s == 0.1 and answer.details["unknown"] == ["decision"]
    assert "1 trace matched" in traces.summary() and "1 by question text" in traces.summary()


def test_openinference_and_phoenix_spans_read_alike(tmp_path):
    """The same agent as OpenInference's attributes in OTLP, and as Phoenix's span objects
    (nested attributes, ISO times, span_kind), one a line and as a list."""
    oi = [span(9, 1, None, "agent", 0, 100, openinference__span__kind="AGENT",
               input__value=QUESTIONS[0].text, output__value="Four.",
               metadata=json.dumps({"question_id": "q1"})),
          span(9, 2, 1, "llm", 0, 10, openinference__span__kind="LLM", llm__model_name="m",
               llm__token_count__prompt=50, llm__token_count__completion=4),
          span(9, 3, 1, "retriever", 10, 20, openinference__span__kind="RETRIEVER",
               input__value="bridges", **{"retrieval.documents.0.document.id": "Town 1#2",
                                          "retrieval.documents.0.document.score": 0.7})]
    write(tmp_path / "oi.jsonl", request(*oi))

    def phoenix(ident, parent, kind, attributes, start, end):
        return {"name": kind.lower(), "context": {"trace_id": "ab" * 16, "span_id": f"{ident:016x}"},
                "parent_id": parent and f"{parent:016x}", "span_kind": kind,
                "start_time": f"2024-05-01T12:00:{start:02d}+00:00",
                "end_time": f"2024-05-01T12:00:{end:02d}+00:00", "status_code": "OK",
                "attributes": attributes, "events": []}
    spans = [phoenix(1, None, "AGENT", {"input": {"value": QUESTIONS[0].text},
                                        "output": {"value": "Four."},
                                        "metadata": {"question_id": "q1"}}, 0, 9),
             phoenix(2, 1, "LLM", {"llm": {"model_name": "m", "token_count": {
                 "prompt": 50, "completion": 4}}}, 0, 1),
             phoenix(3, 1, "RETRIEVER", {"input": {"value": "bridges"}, "retrieval": {
                 "documents": [{"document": {"id": "Town 1#2", "score": 0.7}}]}}, 1, 2)]
    (tmp_path / "phoenix.jsonl").write_text("".join(json.dumps(s) + "\n" for s in spans))
    (tmp_path / "phoenix.json").write_text(json.dumps(spans))
    for name in ("oi.jsonl", "phoenix.jsonl", "phoenix.json"):
        traces = load_traces(tmp_path / name, QUESTIONS, "theirs")
        answer = replay(traces, QUESTIONS[0])
        assert traces.rules["id"] == 1, name
        assert answer.text == "Four." and answer.usage_by_role() == {"answer": Usage(50, 4)}
        assert [(s.kind, s.query, [(c.title, c.index) for c in s.retrieved])
                for s in answer.steps] == [("reason", None, []),
                                           ("search", "bridges", [("Town 1", 2)])], name


def test_traces_left_out_are_counted_and_named(tmp_path):
    questions = [Question(id=f"q{i}", text=f"How many bridges does Town {i} have?",
                          gold_title=f"Town {i}") for i in range(1, 6)]
    cycle = [agent(4, questions[2].text, "Six."), span(4, 2, 3, "a", 0, 1), span(4, 3, 2, "b", 0, 1)]
    unanswered = agent(8, questions[3].text, "x")
    unanswered["attributes"] = unanswered["attributes"][:2]  # asks, and gives no output
    path = write(tmp_path / "traces.json", request(
        *genai_trace(1, questions[0].text),
        *genai_trace(2, "What is the capital of Mars?"),        # no question of the dataset
        *genai_trace(3, questions[1].text), *genai_trace(5, questions[1].text),  # one question twice
        *cycle, span(6, 1, None, "job", 0, 1), unanswered))      # a cycle, asks nothing, no answer
    traces = load_traces(path, questions, "mine")
    assert list(traces.by_question) == ["q1"] and traces.unanswered == ["q2", "q3", "q4", "q5"]
    said = traces.summary()
    for kind, named in [("1 trace matching no question", f"trace {2:032x}"),
                        ("1 question answered by several traces", f"q2 (traces {3:032x}"),
                        ("1 trace with a cycle in their parent ids", f"trace {4:032x}"),
                        ("1 trace that ask no question", f"trace {6:032x}"),
                        ("1 trace without an answer", f"trace {8:032x}")]:
        assert kind in said and named in said, (kind, said)


def test_a_question_two_dataset_questions_share_matches_several(tmp_path):
    twins = [*QUESTIONS, Question(id="q9", text=QUESTIONS[0].text, gold_title="Town 9")]
    path = write(tmp_path / "traces.json", request(*genai_trace(1, QUESTIONS[0].text),
                                                   *genai_trace(2, QUESTIONS[1].text)))
    traces = load_traces(path, twins, "mine")
    assert list(traces.by_question) == ["q2"]
    assert f"1 trace matching several questions: trace {1:032x}" in traces.summary()


def test_bad_spans_and_attributes_are_counted_never_raised(tmp_path):
    spans = genai_trace(1, QUESTIONS[0].text)
    spans[1] = chat(1, 2, 1, 0, None, ("many", 5))                # no end; tokens as text
    spans[2]["attributes"].append({"key": "x", "value": {"intValue": "twelve"}})
    spans[2]["attributes"].append({"key": "y", "value": {"stringValue": 3}})
    spans[2]["attributes"].append({"key": "z"})
    spans[4]["attributes"][2] = {"key": "gen_ai.usage.input_tokens", "value": {"doubleValue": -1.5}}
    odd = [{"spanId": "00", "name": "no trace"}, "not a span"]
    path = write(tmp_path / "traces.json", request(*spans, *odd))
    traces = load_traces(path, QUESTIONS, "mine")
    answer = replay(traces, QUESTIONS[0])
    # a token count it cannot read: the answer's tokens are unknown, never 0
    assert answer.calls == [] and answer.details["unknown"][:2] == ["input_tokens", "output_tokens"]
    said, where = traces.summary(), f"trace {1:032x} span {3:016x}"
    for text in ("1 span without an end: trace", f"3 attributes of no OTLP value type: {where} x",
                 f"{where} y", "1 span without a trace or span id", "1 item that are no span",
                 f"2 attributes of the wrong type: trace {1:032x} span {2:016x} "
                 f"gen_ai.usage.input_tokens"):
        assert text in said, (text, said)


@pytest.mark.parametrize("content, said", [
    pytest.param("", "holds no spans", id="empty"),
    pytest.param('{"resourceSpans": [{"scopeSpans": [{"spans": [', "not JSON past byte", id="torn"),
    pytest.param('{"answer": "x"}', "holds no spans", id="an-answers-row"),
    pytest.param("\xff\xfe", "not JSON", id="not-utf8"),
])
def test_a_file_that_is_no_traces_is_refused_in_one_line(tmp_path, content, said):
    path = tmp_path / "traces.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(TracesFileError, match=said):
        load_traces(path, QUESTIONS, "mine")
    with pytest.raises(PluginError, match=said):
        resolve(f"mine={path}", SYSTEMS, questions=QUESTIONS)


def test_a_file_whose_every_trace_is_left_out_is_refused(tmp_path):
    path = write(tmp_path / "traces.json", request(*genai_trace(1, "Unknown?")))
    with pytest.raises(AnswersFileError, match="no trace that answers.*matching no question"):
        load_traces(path, QUESTIONS, "mine")


def test_systems_resolve_a_traces_file_by_its_suffix_or_its_first_line(tmp_path):
    for name in ("t.json", "t.jsonl"):
        path = write(tmp_path / name, request(*genai_trace(1, QUESTIONS[0].text)))
        source = resolve(f"mine={path}", SYSTEMS, questions=QUESTIONS)
        assert source.origin == "traces file" and source.name == "mine"
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_text(' { "resourceSpans" : ' + json.dumps(request(*genai_trace(
        1, QUESTIONS[0].text))["resourceSpans"]) + "}\n")
    assert resolve(f"mine={spaced}", SYSTEMS, questions=QUESTIONS).origin == "traces file"
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"id": "q1", "answer": "x"}) + "\n")
    assert resolve(f"mine={answers}", SYSTEMS, questions=QUESTIONS).origin == "answers file"


MILLION = """
import json, resource, sys
from pathlib import Path
from freshrag.core.types import Question
from freshrag.systems.external.traces_file import load_traces

path = Path(sys.argv[1])
with path.open("w") as out:  # 1,000 requests of 1,000 spans: 1,000 traces asking nothing
    for trace in range(1000):
        spans = ",".join(
            '{"traceId":"%032x","spanId":"%016x","parentSpanId":"%016x","name":"step",'
            '"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"n",'
            '"value":{"intValue":"%d"}}]}' % (trace + 10, i + 2, 1, i) for i in range(1000))
        out.write('{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}\\n' % spans)
    out.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "%032x" % 1, "spanId": "%016x" % 1, "name": "agent",
         "startTimeUnixNano": "1", "endTimeUnixNano": "2", "attributes": [
             {"key": "input.value", "value": {"stringValue": "Q?"}},
             {"key": "output.value", "value": {"stringValue": "A."}}]}]}]}]}) + "\\n")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
traces = load_traces(path, [Question("q1", "Q?", "T")], "big")
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"answered": list(traces.by_question), "grew_kib": grew,
                  "size": path.stat().st_size, "summary": traces.summary()}))
"""


def test_a_million_spans_are_streamed_in_bounded_memory(tmp_path):
    """A file of 1,000,001 spans (about 190 MB) is read twice, a span at a time: the process
    grows by far less than the file (json.load of it would take over 1 GB)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(MILLION), tmp_path / "big.json"],
                          capture_output=True, text=True, timeout=600, check=True)
    found = json.loads(done.stdout)
    assert found["answered"] == ["q1"] and found["size"] > 150_000_000
    assert found["grew_kib"] < 100_000, found
    assert "1000 traces that ask no question" in found["summary"]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
KEYS = st.sampled_from(["gen_ai.operation.name", "gen_ai.usage.input_tokens",
                        "gen_ai.input.messages", "gen_ai.output.messages",
                        "gen_ai.retrieval.documents", "gen_ai.tool.call.arguments",
                        "freshrag.step.kind", "freshrag.role", "openinference.span.kind",
                        "input.value", "retrieval.documents.0.document.id", "x"])


@settings(max_examples=budget(80), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(
           ["traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano", "endTimeUnixNano",
            "attributes", "value"]), KEYS, JSON), max_size=6))
def test_any_value_anywhere_in_a_trace_is_counted_never_raised(tmp_path, changes):
    """Any JSON value put in any field of a trace's spans, or as any attribute's value: the
    import answers, or refuses in one line naming the file; no other exception."""
    spans = genai_trace(1, QUESTIONS[0].text)
    for place, field, key, value in changes:
        if field == "value":  # an attribute whose value is any JSON, wrapped as OTLP's or not
            if isinstance(spans[place].get("attributes"), list):
                spans[place]["attributes"] += [{"key": key, "value": value},
                                               {"key": key, "value": {"stringValue": value}}]
        else:
            spans[place][field] = value
    path = write(tmp_path / "fuzzed.json", request(*spans))
    try:
        traces = load_traces(path, QUESTIONS, "mine")
    except (TracesFileError, AnswersFileError) as err:
        assert str(path) in str(err)
    else:
        assert traces.summary()
        for question in QUESTIONS:
            if question.id in traces.by_question:
                replay(traces, question)


def test_spans_and_values_nested_past_reason_are_counted(tmp_path):
    # a value nested past any convention's, and past Python's recursion (written as text: json
    # itself would not write it)
    deep = '{"arrayValue":{"values":[' * 5000 + '{"stringValue":"x"}' + ']}}' * 5000
    holder = json.dumps(request({**span(1, 9, 1, "deep", 0, 1), "attributes": [
        {"key": "d", "value": "DEEP"}]})).replace('"DEEP"', deep)
    chain = [span(2, i, i - 1, "step", 0, 1) for i in range(2, 400)]  # each inside the last
    path = write(tmp_path / "traces.json", request(
        *genai_trace(1, QUESTIONS[0].text), agent(2, QUESTIONS[1].text, "x"), *chain))
    with path.open("a") as out:
        out.write(holder + "\n")
    traces = load_traces(path, QUESTIONS, "mine")
    assert list(traces.by_question) == ["q1"]
    said = traces.summary()
    assert f"1 trace nested deeper than 200 spans: trace {2:032x}" in said, said
    assert f"1 attribute of no OTLP value type: trace {1:032x} span {9:016x} d" in said, said

"""What a system returns is checked before anything is written
(docs/faults.md#what-a-system-returns): a wrong kind in any field fails that pair, naming the
system and the field, without asking the judge; a BaseException other than a stop fails the
pair; every row written is one the readers read back. A property test generates wrong returns
and reads back every row written."""

import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freshrag.cli.main import main
from freshrag.core.dataset import Dataset
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.row_check import sample_problem
from freshrag.core.samples import read_samples
from freshrag.core.types import (
    Article,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    Usage,
)
from freshrag.llm.client import EndpointUnreachable
from freshrag.llm.deadline import Stopped
from freshrag.run.plan import CallRecorder, answer_and_grade
from tests.support.datasets import write_dataset
from tests.support.fakes import ScriptedLLM, ToolReply

ARTICLES = {"Orlen Weir": Article("Orlen Weir", "The Orlen weir was rebuilt in 2024 of oak.")}
QUESTION = Question("w1", "What was the Orlen weir rebuilt of?", "Orlen Weir")
DATASET = Dataset("D", [QUESTION], ARTICLES, {"questions": Path("q.jsonl")})
GRADE = ToolReply("submit_grade", '{"truthfulness": 5, "relevance": 5}')


def call(**changes):
    fields = dict(role="answer", model="mine-1", text="Oak.", tool_name=None,
                  tool_arguments=None, usage=Usage(12, 3), latency_s=0.2, cache_hit=False,
                  messages=[{"role": "user", "content": "?"}])
    return LLMResponse(**{**fields, **changes})


class Returns:
    """A plugged-in system that returns what it is given, or raises it."""

    def __init__(self, returned):
        self.returned = returned

    def answer(self, question):
        if isinstance(self.returned, BaseException):
            raise self.returned
        return self.returned


def asked(returned, script=(GRADE,)):
    """The pair's row, and the fake model (to see which calls were made)."""
    llm = ScriptedLLM(list(script))
    return answer_and_grade(DATASET, QUESTION, "mine", Returns(returned), CallRecorder(llm)), llm


def nested(levels):
    value: object = "deep"
    for _ in range(levels):
        value = [value]
    return value


class Opaque:
    def __repr__(self):
        return "<Opaque>"


WRONG = [
    # not a SystemAnswer at all
    pytest.param("Oak.", "a str, not a SystemAnswer", id="text-alone"),
    pytest.param({"text": "Oak."}, "a dict, not a SystemAnswer", id="a-dict"),
    pytest.param(None, "a NoneType, not a SystemAnswer", id="none"),
    # text that is not text
    pytest.param(SystemAnswer(7), "text 7, not text", id="text-a-number"),
    pytest.param(SystemAnswer(b"Oak."), "text b'Oak.', not text", id="text-bytes"),
    pytest.param(SystemAnswer(None), "text None, not text", id="text-none"),
    # a count that is not a count
    pytest.param(SystemAnswer("Oak.", retrievals="3"), "retrievals '3', not a whole number",
                 id="retrievals-text"),
    pytest.param(SystemAnswer("Oak.", retrievals=-1), "retrievals -1, not a count",
                 id="retrievals-negative"),
    pytest.param(SystemAnswer("Oak.", retrievals=True), "retrievals True", id="retrievals-bool"),
    pytest.param(SystemAnswer("Oak.", retrievals=2.5), "retrievals 2.5", id="retrievals-float"),
    # details not an object, or a decision not one of the allowed values
    pytest.param(SystemAnswer("Oak.", details=["retrieve"]), "details ['retrieve'], not an object",
                 id="details-a-list"),
    pytest.param(SystemAnswer("Oak.", details={"decision": "maybe"}),
                 "details['decision'] 'maybe', not one of retrieve, no-retrieve", id="decision-word"),
    pytest.param(SystemAnswer("Oak.", details={"decision": True}), "details['decision'] True",
                 id="decision-bool"),
    # one word for an answer without retrieval: the router's old `no-retrieval` is no alias
    pytest.param(SystemAnswer("Oak.", details={"decision": "no-retrieval"}),
                 "details['decision'] 'no-retrieval', not one of retrieve, no-retrieve, none, "
                 "one-retrieval, multi-step", id="decision-no-retrieval"),
    # details JSON cannot hold
    pytest.param(SystemAnswer("Oak.", details={"seen": {"a", "b"}}),
                 "details['seen'] is a set, which JSON cannot hold", id="details-set"),
    pytest.param(SystemAnswer("Oak.", details={"raw": b"\x00"}),
                 "details['raw'] is a bytes", id="details-bytes"),
    pytest.param(SystemAnswer("Oak.", details={"p": math.nan}), "details['p'] is nan",
                 id="details-nan"),
    pytest.param(SystemAnswer("Oak.", details={"scores": [1.0, -math.inf]}),
                 "details['scores'][1] is -inf", id="details-infinity-in-a-list"),
    pytest.param(SystemAnswer("Oak.", details={"doc": Opaque()}),
                 "details['doc'] is a Opaque", id="details-object"),
    pytest.param(SystemAnswer("Oak.", details={3: "three"}), "details has the key 3, not text",
                 id="details-key-a-number"),
    pytest.param(SystemAnswer("Oak.", details={"tree": nested(150)}),
                 "deeper than 100 levels", id="details-nested-deep"),
    pytest.param(SystemAnswer("Oak.", details={"n": 10 ** 4400}), "over 4,300 digits",
                 id="details-huge-integer"),
    pytest.param(SystemAnswer("Oak.", details={"retrieved": ["Orlen Weir"]}),
                 "details.retrieved must be null or a list", id="details-retrieved-bare"),
    pytest.param(SystemAnswer("Oak.", details={"unknown": 5}),
                 "details.unknown must be null or a list of field names", id="details-unknown-a-number"),
    pytest.param(SystemAnswer("Oak.", details={"unknown": [{"a": 1}]}),
                 "details.unknown must be null or a list", id="details-unknown-objects"),
    pytest.param(SystemAnswer("Oak.", details={"confidence": {"level": 3}}),
                 "details.confidence must be a number or null", id="details-sweep-score-object"),
    # latency, calls, stopped
    pytest.param(SystemAnswer("Oak.", latency_s="fast"), "latency_s 'fast'", id="latency-text"),
    pytest.param(SystemAnswer("Oak.", latency_s=-0.5), "latency_s -0.5, not seconds from 0",
                 id="latency-negative"),
    pytest.param(SystemAnswer("Oak.", latency_s=math.nan), "latency_s nan", id="latency-nan"),
    pytest.param(SystemAnswer("Oak.", calls="none"), "calls 'none', not a list", id="calls-text"),
    pytest.param(SystemAnswer("Oak.", calls=[{"role": "answer"}]),
                 "calls[0] a dict, not an LLMResponse", id="calls-dicts"),
    pytest.param(SystemAnswer("Oak.", calls=[call(usage=Usage("12", 3))]),
                 "calls[0].usage", id="call-usage-text"),
    pytest.param(SystemAnswer("Oak.", calls=[call(usage={"input": 1})]),
                 "calls[0].usage", id="call-usage-a-dict"),
    pytest.param(SystemAnswer("Oak.", calls=[call(latency_s=None)]), "calls[0].latency_s None",
                 id="call-latency-none"),
    pytest.param(SystemAnswer("Oak.", calls=[call(messages={1, 2})]),
                 "row['calls'][0]['messages'] is a set", id="call-messages-a-set"),
    pytest.param(SystemAnswer("Oak.", calls=[call(role=7)]), "row['usage'] has the key 7",
                 id="call-role-a-number"),
    pytest.param(SystemAnswer("Oak.", calls=[call(model=5)]), "calls must be a list of objects",
                 id="call-model-a-number"),
    pytest.param(SystemAnswer(10 ** 5000), "text a int, not text", id="text-a-huge-integer"),
    pytest.param(SystemAnswer("Oak.", retrievals=10 ** 5000), "row['retrievals'] is a whole number "
                 "of over 4,300 digits", id="retrievals-huge"),
    pytest.param(SystemAnswer("Oak.", stopped="tired"), "stopped 'tired'", id="stopped-word"),
    pytest.param(SystemAnswer("Oak.", steps=[Step("answer", (call(usage=Usage(-1, 0)),))]),
                 "steps[0].calls[0].usage", id="step-call-usage"),
    pytest.param(SystemAnswer("Oak.", steps=[Step("search", retrieved=(
        RetrievedChunk("Orlen Weir", 0, "The weir.", "high"),))]),
                 "what no row holds: TypeError", id="step-chunk-score-text"),
]


@pytest.mark.parametrize("returned, said", WRONG)
def test_a_wrong_return_fails_its_pair_naming_system_and_field(tmp_path, returned, said):
    row, llm = asked(returned)
    assert row["status"] == "failed" and row["answer"] is None, row
    assert row["error"].startswith("system 'mine' answered with "), row["error"]
    assert said in row["error"], row["error"]
    assert llm.requests == []  # the judge was not asked about what is not kept
    assert row["calls"] == [] and row["details"] == {} and row["steps"] == []
    written = write_and_read(tmp_path, [row])
    assert written == [row]


def write_and_read(tmp_path, rows):
    path = tmp_path / "samples.jsonl"
    writer = JsonlWriter(path)
    for row in rows:
        writer.write(row)
    writer.close()
    return read_samples(path)


@pytest.mark.parametrize("raised, name", [
    pytest.param(SystemExit(0), "SystemExit", id="system-exit-0"),
    pytest.param(SystemExit("bye"), "SystemExit", id="system-exit-message"),
    pytest.param(GeneratorExit(), "GeneratorExit", id="generator-exit"),
    pytest.param(type("Abort", (BaseException,), {})("own"), "Abort", id="own-base-exception"),
    pytest.param(RuntimeError("boom"), "RuntimeError", id="an-exception"),
    pytest.param(type("Unsayable", (Exception,), {"__str__": lambda self: 1 / 0})(),
                 "Unsayable: (its message cannot be read: str() raised ZeroDivisionError)",
                 id="its-str-raises"),
])
def test_a_base_exception_from_the_systems_code_fails_only_its_pair(raised, name):
    row, llm = asked(raised)
    assert row["status"] == "failed" and row["error"].startswith(f"system 'mine' raised {name}")
    assert llm.requests == [] and sample_problem(dict(row)) is None


@pytest.mark.parametrize("raised", [
    pytest.param(KeyboardInterrupt(), id="ctrl-c"),
    pytest.param(Stopped("SIGTERM"), id="stop-signal"),
    pytest.param(EndpointUnreachable("endpoint gone"), id="endpoint-gone"),
])
def test_a_stop_still_ends_the_run(raised):
    with pytest.raises(type(raised)):
        asked(raised)


def test_what_json_writes_as_a_list_is_kept_and_the_pair_graded(tmp_path):
    answer = SystemAnswer("Oak.", retrievals=None, latency_s=1,
                          details={"decision": "no-retrieve", "span": (3, 4), "notes": None})
    row, llm = asked(answer)
    assert row["status"] == "ok" and row["grade"]["truthfulness"] == 5
    assert [request["role"] for request in llm.requests] == ["judge"]
    (read,) = write_and_read(tmp_path, [row])
    assert read["details"]["span"] == [3, 4] and read["retrievals"] is None


def test_a_routers_route_is_an_allowed_decision():
    row, _ = asked(SystemAnswer("Oak.", details={"decision": "multi-step"}))
    assert row["status"] == "ok"


# ---------------------------------------------------------------- generated wrong returns

ANYTHING = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    | st.binary(max_size=4) | st.builds(Opaque) | st.builds(pow, st.just(10), st.just(5000)),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.frozensets(st.integers(), max_size=2)
    | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=3),
    max_leaves=12)
FIELDS = ("text", "calls", "retrievals", "details", "latency_s", "steps", "stopped")


@st.composite
def returns(draw):
    """A SystemAnswer with one field (or a value in its details) of any kind, or no answer."""
    if draw(st.booleans()) and draw(st.booleans()):
        return draw(ANYTHING)
    answer = SystemAnswer("Oak.", details={"decision": "retrieve"})
    field = draw(st.sampled_from(FIELDS + ("a detail",)))
    if field == "a detail":
        answer.details[draw(st.text(max_size=6))] = draw(ANYTHING)
    else:
        setattr(answer, field, draw(ANYTHING))
    return answer


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(returned=st.lists(returns(), min_size=1, max_size=4))
def test_every_row_written_of_any_return_is_read_back(tmp_path, capsys, returned):
    rows = []
    for i, value in enumerate(returned):
        llm = ScriptedLLM([GRADE])
        question = Question(f"w{i}", QUESTION.text, "Orlen Weir")
        rows.append(answer_and_grade(DATASET, question, "mine", Returns(value), CallRecorder(llm)))
    (tmp_path / "samples.jsonl").unlink(missing_ok=True)
    read = write_and_read(tmp_path, rows)
    assert "skipped" not in capsys.readouterr().err
    assert [row["question_id"] for row in read] == [f"w{i}" for i in range(len(returned))]
    for row in rows:
        assert row["status"] == "ok" or row["error"].startswith("system 'mine' ")


# ---------------------------------------------------------------- end to end, through `run`

BROKEN = '''
from freshrag import SystemAnswer


class Broken:
    """Answers Town 0 by ending the interpreter, Town 1 with a dict, Town 2 with a set."""

    def __init__(self, context):
        self.context = context

    def answer(self, question):
        if "Town 0" in question.text:
            raise SystemExit(0)
        if "Town 1" in question.text:
            return {"text": "Four bridges."}
        return SystemAnswer("Five bridges.", details={"seen": {"Town 2"}})
'''


def test_a_run_with_a_broken_plugin_finishes_and_every_row_is_read(tmp_path, fake_server, capsys):
    server = fake_server()
    questions, articles = write_dataset(tmp_path / "data")
    plugin = tmp_path / "broken.py"
    plugin.write_text(BROKEN, encoding="utf-8")
    run_dir = tmp_path / "run"
    command = ["run", "--questions", str(questions), "--articles", str(articles), "--out",
               str(run_dir), "--systems", f"naive,mine={plugin}:Broken", "--no-probe",
               "--concurrency", "2"]
    assert main(command) == 1  # pairs failed: exit 1, never 0 half-way
    rows = read_samples(run_dir / "samples.jsonl")
    errors = sorted(row["error"] for row in rows if row["status"] == "failed")
    assert len(rows) == 6 and errors == [
        "system 'mine' answered with a dict, not a SystemAnswer",
        "system 'mine' answered with details['seen'] is a set, which JSON cannot hold",
        "system 'mine' raised SystemExit: 0"]
    assert all(row["status"] == "ok" for row in rows if row["system"] == "naive")
    capsys.readouterr()
    assert main(["report", str(run_dir), "--out", str(tmp_path / "report")]) == 0
    assert "warning" not in capsys.readouterr().err
    assert server.calls > 0


def test_a_plugin_whose_path_is_not_utf8_ends_in_one_line_naming_it(tmp_path, fake_server,
                                                                    capsys):
    fake_server()
    questions, articles = write_dataset(tmp_path / "data")
    plugin = tmp_path / os.fsdecode(b"mine\xff.py")  # a Latin-1 name, as os.fsdecode gives it
    plugin.write_text(BROKEN, encoding="utf-8")
    assert main(["run", "--questions", str(questions), "--articles", str(articles), "--out",
                 str(tmp_path / "run"), "--systems", f"mine={plugin}:Broken", "--no-probe"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "mine\\xff.py:Broken': not UTF-8 text" in err
    assert not (tmp_path / "run" / "manifest.json").exists()

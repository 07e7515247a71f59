"""Every built-in strategy's trajectory (docs/run-format.md#steps) against the scripted fake model
and a fake index, for a retrieving and a non-retrieving decision: the kinds in order, what each
search asked and found, each step's tokens its calls', and all steps' tokens the row's."""

import json
import math
from dataclasses import replace

import pytest

from freshrag.core.row_check import sample_problem
from freshrag.core.samples import sample_row
from freshrag.core.types import Grade, LLMResponse, SystemContext, Usage
from freshrag.systems import SYSTEMS
from tests.support.fakes import LogprobReply, ScriptedLLM, ToolReply
from tests.support.systems import ARTICLES, CHUNKS, QUESTION, USAGE, run_system

RETRIEVE = ToolReply("retrieve_information", '{"retrieve": true}')
NO_RETRIEVE = ToolReply("retrieve_information", '{"retrieve": false}')
PASSAGE = "The Velmora bridge is a bridge with nine spans."
DATED = {"knowledge_cutoff": "2021-09-30", "today": "2026-11-22"}


def likely(p_yes):
    """A confidence reply whose first token gives P(yes) = p_yes."""
    top = [{"token": "yes", "logprob": math.log(p_yes)},
           {"token": "no", "logprob": math.log(1 - p_yes)}]
    return LogprobReply("yes", [{"token": "yes", "logprob": math.log(p_yes), "top": top}])


def rate(value):
    return ToolReply("rate_confidence", f'{{"confidence": {value}}}')


# (system, script, context, steps as (kind, its calls per role, its text or query))
SEARCH = ("search", {}, QUESTION.text)
CASES = [
    pytest.param("baseline", ["Nine."], {}, [("answer", {"answer": 1}, "Nine.")], id="baseline"),
    pytest.param("oracle", ["Nine."], {},
                 [("read", {}, None), ("answer", {"answer": 1}, "Nine.")], id="oracle"),
    pytest.param("naive", ["Nine."], {}, [SEARCH, ("answer", {"answer": 1}, "Nine.")],
                 id="naive"),
    *[pytest.param(name, script, context, steps, id=f"{name}-{case}")
      for name, context in (("boolean", {}), ("dated-boolean", DATED))
      for case, script, steps in (
          ("retrieve", [RETRIEVE, "Nine."], [("decide", {"decision": 1}, "retrieve"), SEARCH,
                                             ("answer", {"answer": 1}, "Nine.")]),
          ("no-retrieve", [NO_RETRIEVE, "Eight."], [("decide", {"decision": 1}, "no-retrieve"),
                                                    ("answer", {"answer": 1}, "Eight.")]),
          ("answered-by-decision", ["Seven."], [("decide", {"decision": 1}, "none"),
                                                ("answer", {}, "Seven.")]))],
    pytest.param("advanced", ["Eight.", ToolReply("more_information", '{"retrieve": true}'),
                              "Nine."], {},
                 [("answer", {"decision": 1}, "Eight."), ("decide", {"decision": 1}, "retrieve"),
                  SEARCH, ("answer", {"answer": 1}, "Nine.")], id="advanced-retrieve"),
    pytest.param("advanced", ["Eight.", ToolReply("more_information", '{"retrieve": false}')], {},
                 [("answer", {"decision": 1}, "Eight."),
                  ("decide", {"decision": 1}, "no-retrieve")], id="advanced-no-retrieve"),
    pytest.param("self-check", ["Eight.", rate(2), "Nine."], {},
                 [("answer", {"decision": 1}, "Eight."), ("decide", {"decision": 1}, "retrieve"),
                  SEARCH, ("answer", {"answer": 1}, "Nine.")], id="self-check-retrieve"),
    pytest.param("self-check", ["Eight.", rate(5)], {},
                 [("answer", {"decision": 1}, "Eight."),
                  ("decide", {"decision": 1}, "no-retrieve")], id="self-check-no-retrieve"),
    pytest.param("confidence", [likely(0.9), "Nine."], {},
                 [("decide", {"decision": 1}, "retrieve"), SEARCH,
                  ("answer", {"answer": 1}, "Nine.")], id="confidence-retrieve"),
    pytest.param("confidence", [likely(0.1), "Eight."], {},
                 [("decide", {"decision": 1}, "no-retrieve"),
                  ("answer", {"answer": 1}, "Eight.")], id="confidence-no-retrieve"),
    pytest.param("hyde", [PASSAGE, "Nine."], {},
                 [("reason", {"answer": 1}, PASSAGE),
                  ("search", {}, f"{QUESTION.text}\n{PASSAGE}"),
                  ("answer", {"answer": 1}, "Nine.")], id="hyde"),
    # the agents (docs/methods.md#agents): react's search holds the call that chose its query
    pytest.param("react", [ToolReply("search", '{"query": "Velmora spans"}'), "Nine."], {},
                 [("search", {"answer": 1}, "Velmora spans"), ("answer", {"answer": 1}, "Nine.")],
                 id="react"),
    pytest.param("iterative", [ToolReply("reason_step", json.dumps(
        {"thought": PASSAGE, "search_again": False})), "Nine."], {},
                 [SEARCH, ("reason", {"answer": 1}, PASSAGE), ("answer", {"answer": 1}, "Nine.")],
                 id="iterative"),
    pytest.param("decompose", [ToolReply("sub_questions", '{"sub_questions": ["How many?"]}'),
                               "Nine.", "Nine."], {},
                 [("reason", {"decision": 1}, "How many?"), ("search", {}, "How many?"),
                  ("reason", {"answer": 1}, "Nine."), ("answer", {"answer": 1}, "Nine.")],
                 id="decompose"),
    pytest.param("router", [ToolReply("route_question",
                                      '{"retrieve": true, "multi_step": false}'), "Nine."], {},
                 [("decide", {"decision": 1}, "one-retrieval"), SEARCH,
                  ("answer", {"answer": 1}, "Nine.")], id="router"),
]


def judge_call() -> LLMResponse:
    return LLMResponse("judge", "m", None, "submit_grade", "{}", Usage(100, 9), 0.5, False, [])


@pytest.mark.parametrize("name, script, context, expected", CASES)
def test_every_strategy_records_its_steps(name, script, context, expected):
    answer, _, queries = run_system(name, list(script), **context)
    assert [(s.kind, s.query if s.kind == "search" else s.text) for s in answer.steps] == [
        (kind, said) for kind, _, said in expected]
    # the steps are the answer: its calls, its retrievals, its text
    assert [c for s in answer.steps for c in s.calls] == answer.calls
    assert answer.retrievals == len(queries) == sum(s.kind == "search" for s in answer.steps)
    assert answer.text == next(s.text for s in reversed(answer.steps) if s.kind == "answer")
    for step in answer.steps:
        if step.kind == "search":
            assert [c.title for c in step.retrieved] == [c.title for c in CHUNKS]
        if step.kind == "read":
            assert step.title == QUESTION.gold_title

    row = json.loads(json.dumps(sample_row("A_f", QUESTION, name, answer, Grade(4, 4),
                                           [*answer.calls, judge_call()], 1.0)))
    assert sample_problem(row) is None
    usage = {"input": USAGE.input, "output": USAGE.output, "estimated": False}
    assert [step["usage"] for step in row["steps"]] == [
        {role: {**usage, "input": usage["input"] * n, "output": usage["output"] * n}
         for role, n in calls.items()} for _, calls, _ in expected]
    assert [step["calls"] for step in row["steps"]] == [sum(c.values()) for _, c, _ in expected]
    # all the steps' tokens are the row's system tokens: a call belongs to one step only
    summed: dict[str, list[int]] = {}
    for step in row["steps"]:
        for role, counts in step["usage"].items():
            summed.setdefault(role, [0, 0])
            summed[role] = [summed[role][0] + counts["input"], summed[role][1] + counts["output"]]
    assert summed == {role: [u["input"], u["output"]] for role, u in row["usage"].items()
                      if role != "judge"}
    searches = [step for step in row["steps"] if step["kind"] == "search"]
    assert all(s["retrieved"] == [{"title": c.title, "index": c.index, "score": c.score}
                                  for c in CHUNKS] and s["repeated"] is False for s in searches)


def test_the_oracle_reads_nothing_for_a_general_query():
    general = replace(QUESTION, gold_title=None, kind="general")
    answer = SYSTEMS["oracle"](SystemContext(ScriptedLLM(["Hello."]), ARTICLES)).answer(general)
    assert [s.kind for s in answer.steps] == ["answer"]

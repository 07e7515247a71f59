"""The trajectory figures (harness/reporting/trajectory.py, docs/reports.md#trajectories) on
hand-made trajectories whose values are known by construction: searches and their quantiles,
evidence of any and of all gold articles, the steps that found the first and the last gold
article, wasted steps, repeats, stops, tokens and dollars per correct answer and correct answers
per search; nulls, never 0, for rows without steps; the summary's and the printed report's new
columns.

The rows are made as the runner makes them (core/samples.py sample_row) from Steps made here."""

from __future__ import annotations

from typing import Any

import pytest

from freshrag.core.samples import sample_row
from freshrag.core.types import (
    Grade,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    Usage,
)
from freshrag.reporting import analysis, report, sections, summary_table, trajectory
from freshrag.reporting.answers import Answers
from tests.support.rows import summaries

PRICES = {"m": (1.0, 2.0)}  # dollars per million tokens in, out


def call(tokens: tuple[int, int], model: str = "m", role: str = "answer") -> LLMResponse:
    return LLMResponse(role=role, model=model, text="x", tool_name=None, tool_arguments=None,
                       usage=Usage(*tokens), latency_s=0.1, cache_hit=False, messages=[])


def search(query: str, *titles: str, tokens: tuple[int, int] = (100, 10)) -> Step:
    return Step("search", (call(tokens),), query=query, retrieved=tuple(
        RetrievedChunk(title, i, "text", 1.0 - i / 10) for i, title in enumerate(titles)))


def answer(tokens: tuple[int, int] = (200, 20)) -> Step:
    return Step("answer", (call(tokens),), text="the answer")


def row(qid: str, system: str, steps: list[Step], truth: int | None = 5,
        gold: tuple[str, ...] = ("A",), stopped: str | None = None,
        model: str = "m") -> dict[str, Any]:
    """`system`'s answer to `qid`, whose gold set is `gold` (two or more: a multi-article
    question), graded `truth` (None: unscored); the calls are the steps' and a judge's."""
    calls = [c for step in steps for c in step.calls]
    if model != "m":
        calls = [call((c.usage.input, c.usage.output), model) for c in calls]
    multi = len(gold) > 1
    question = Question(qid, f"question {qid}?", gold[0] if gold else None,
                        gold_titles=gold if multi else (), hops=len(gold) if multi else None,
                        multihop="bridge" if multi else None)
    answered = SystemAnswer("the answer", calls=calls, steps=steps, stopped=stopped,
                            retrievals=sum(s.kind == "search" for s in steps))
    grade = Grade(truth, truth) if truth else Grade(None, None, "no tool call")
    return dict(sample_row("D", question, system, answered, grade,
                           [*calls, call((900, 9), "judge-model", "judge")], 1.0))


def agent_rows() -> list[dict[str, Any]]:
    """Five answers of `agent`, each built so that its figures are plain:
    q1 (gold A, B): search [X], search [A, X], search [A] (the query again), search [B], reason,
       answer: first gold at step 2, the set complete at step 4, then a reason step (wasted 1;
       the answer is not waste); 4 searches, 1 repeated; correct (5).
    q2 (gold A): search [A], search [Y], answer: first = last = 1, wasted 1 (the second search);
       correct (4).
    q3 (gold A, B): search [A], search [Z], answer, stopped at max_steps: first 1, last never
       (B missing), wasted null; any 1, all 0; wrong (2).
    q4 (gold A): answer at once: no search: evidence 0, gold steps null; wrong (1).
    q5 (gold A): search [Q], answer, unscored: never counted correct nor wrong."""
    return [
        row("q1", "agent", [search("x", "X"), search("a", "A", "X"), search("a", "A"),
                            search("b", "B"), Step("reason", text="both found"), answer()],
            gold=("A", "B")),
        row("q2", "agent", [search("a", "A"), search("y", "Y"), answer()], truth=4),
        row("q3", "agent", [search("a", "A"), search("z", "Z"), answer()], truth=2,
            gold=("A", "B"), stopped="max_steps"),
        row("q4", "agent", [answer()], truth=1),
        row("q5", "agent", [search("q", "Q"), answer()], truth=None),
    ]


def figures(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f["question_id"]: f for f in trajectory.answer_figures(summaries(rows), PRICES)}


@pytest.mark.parametrize("qid, expected", [
    pytest.param("q1", {"searches": 4, "repeated": 1, "first_gold_step": 2, "last_gold_step": 4,
                        "wasted_steps": 1, "evidence_any": 1.0, "evidence_all": 1.0,
                        "correct": True, "hops": 2}, id="two-gold-found-at-2-and-4"),
    pytest.param("q2", {"searches": 2, "repeated": 0, "first_gold_step": 1, "last_gold_step": 1,
                        "wasted_steps": 1, "evidence_any": 1.0, "evidence_all": 1.0,
                        "correct": True, "hops": 1}, id="one-gold-then-a-wasted-search"),
    pytest.param("q3", {"searches": 2, "first_gold_step": 1, "last_gold_step": None,
                        "wasted_steps": None, "evidence_any": 1.0, "evidence_all": 0.0,
                        "stopped": "max_steps", "correct": False, "hops": 2},
                 id="stopped-with-one-of-two"),
    pytest.param("q4", {"searches": 0, "repeated": 0, "first_gold_step": None,
                        "last_gold_step": None, "wasted_steps": None, "evidence_any": 0.0,
                        "evidence_all": 0.0, "correct": False}, id="no-search"),
    pytest.param("q5", {"searches": 1, "evidence_any": 0.0, "correct": None}, id="unscored"),
])
def test_each_answers_figures_are_those_of_its_construction(qid, expected):
    found = figures(agent_rows())[qid]
    assert {name: found[name] for name in expected} == expected


def test_tokens_and_dollars_per_answer():
    q1 = figures(agent_rows())["q1"]
    # four searches of 100 + 10, an answer of 200 + 20; the reason step made no call
    assert q1["tokens"] == 4 * 110 + 220
    assert q1["cost_usd"] == pytest.approx((4 * 100 + 200) * 1e-6 + (4 * 10 + 20) * 2e-6)


def test_the_identity_table_means_quantiles_and_per_correct():
    table = trajectory.analyse(Answers(summaries(agent_rows())), PRICES)["trajectory"]
    assert len(table) == 1
    agent = table[0]
    # searches 4, 2, 2, 0, 1: sorted 0 1 2 2 4
    assert agent["searches"] == pytest.approx(9 / 5)
    assert (agent["searches_p50"], agent["searches_p90"], agent["searches_max"]) == (2, 4, 4)
    assert agent["searches_histogram"] == [1, 1, 2, 0, 1]
    assert agent["repeated"] == pytest.approx(1 / 5)
    # evidence over the five: any 1, 1, 1, 0, 0; all 1, 1, 0, 0, 0
    assert (agent["evidence_any"], agent["evidence_all"]) == (0.6, 0.4)
    # first gold 2, 1, 1; last 4, 1; wasted 1, 1
    assert agent["first_gold_step"] == pytest.approx(4 / 3, abs=1e-4)
    assert (agent["last_gold_step"], agent["wasted_steps"]) == (2.5, 1.0)
    assert (agent["stopped"], agent["correct"]) == (1, 2)
    # tokens of all five answered pairs over the 2 correct: q1 660, q2 2 x 110 + 220, q3 the
    # same, q4 220, q5 110 + 220
    tokens = 660 + 440 + 440 + 220 + 330
    assert agent["tokens_per_correct"] == pytest.approx(tokens / 2, abs=0.1)
    dollars = sum((i * 1 + o * 2) * 1e-6 for i, o in [(600, 60), (400, 40), (400, 40),
                                                      (200, 20), (300, 30)])
    assert agent["cost_per_correct"] == pytest.approx(dollars / 2)
    assert agent["correct_per_search"] == pytest.approx(2 / 9, abs=1e-4)


def test_unknown_prices_give_null_dollars_never_zero():
    unpriced = [row("q1", "agent", [search("a", "A"), answer()], model="nobody-priced-this")]
    assert trajectory.answer_figures(summaries(unpriced), PRICES)[0]["cost_usd"] is None
    assert trajectory.per_correct(summaries(unpriced), PRICES)["cost_per_correct"] is None
    assert trajectory.per_correct(summaries(unpriced), None)["cost_per_correct"] is None
    assert trajectory.per_correct(summaries(unpriced), PRICES)["tokens_per_correct"] == 330.0


def test_no_correct_answer_gives_null_per_correct():
    wrong = [row("q1", "agent", [search("a", "A"), answer()], truth=2)]
    found = trajectory.per_correct(summaries(wrong), PRICES)
    assert (found["correct"], found["tokens_per_correct"], found["cost_per_correct"]) == (
        0, None, None)
    assert found["correct_per_search"] == 0.0


def test_rows_without_steps_give_null_step_figures_never_zero():
    old = {key: value for key, value in row("q1", "old", [search("a", "A"), answer()]).items()
           if key not in ("steps", "stopped")}
    given_none = row("q2", "service", [])  # a system outside freshrag that reported no steps
    found = figures([old, given_none])
    for qid in ("q1", "q2"):
        assert all(found[qid][name] is None for name in trajectory.STEP_FIGURES), qid
    # neither says what it retrieved (no details.retrieved): no evidence either
    assert (found["q1"]["evidence_any"], found["q2"]["evidence_any"]) == (None, None)
    assert trajectory.analyse(Answers(summaries([old, given_none])), PRICES) == {
        "trajectory": [], "trajectory_by_answer": []}
    assert trajectory.per_correct(summaries([old]), PRICES)["correct_per_search"] is None


def test_a_row_without_steps_that_names_its_chunks_has_evidence_from_them():
    old = row("q1", "old", [search("a", "A"), answer()])
    old.pop("steps")
    old["details"] = {"retrieved": [{"title": "X", "index": 0, "score": 0.9},
                                    {"title": "A", "index": 0, "score": 0.5}]}
    found = figures([old])["q1"]
    assert (found["evidence_any"], found["evidence_all"], found["searches"]) == (1.0, 1.0, None)


def test_a_general_query_has_no_evidence_and_no_gold_steps():
    general = row("q1", "agent", [search("a", "A"), answer()], gold=())
    found = figures([general])["q1"]
    assert (found["evidence_any"], found["first_gold_step"], found["hops"]) == (None, None, 0)
    assert found["searches"] == 1


def test_the_summary_carries_per_correct_columns():
    rows = agent_rows()
    summary = summary_table.summarise(summaries(rows), PRICES)
    agent = summary[0]
    assert agent["tokens_per_correct"] == pytest.approx((660 + 440 + 440 + 220 + 330) / 2,
                                                        abs=0.1)
    assert agent["cost_per_correct"] is not None and agent["correct_per_search"] == pytest.approx(
        2 / 9, abs=1e-4)
    assert summary_table.summarise(summaries(rows))[0]["cost_per_correct"] is None  # no prices: unknown
    assert {"tokens_per_correct", "cost_per_correct", "correct_per_search"} <= set(summary_table.COLUMNS)
    # the whole table, every column: summary.md and the CSV
    csv_head = report.render(summary, "csv").splitlines()[0].split(",")
    assert csv_head[-4:] == ["tokens_per_correct", "cost_per_correct", "correct_per_search",
                             "models"]


def test_the_analysis_holds_the_table_and_every_answer_with_steps():
    rows = agent_rows() + [row("q1", "old", [answer()])]
    rows[-1].pop("steps")
    done = analysis.analyse(summaries(rows), PRICES)
    assert [entry["system"] for entry in done["trajectory"]] == ["agent"]
    assert sorted(f["question_id"] for f in done["trajectory_by_answer"]) == [
        "q1", "q2", "q3", "q4", "q5"]
    printed = sections.render_analysis(done)
    assert "### Trajectories" in printed and "| evidence_any |" in printed

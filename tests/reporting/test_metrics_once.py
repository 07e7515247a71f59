"""A report evaluates each answer's retrieval metrics once (harness/reporting/retrieval_metrics.py
row_metrics, shared through the report's Answers, harness/reporting/answers.py): the retrieval
table and the trajectory figures read the same evaluation, and give
what each gave from an evaluation of its own."""

from __future__ import annotations

from typing import Any

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
from freshrag.reporting import analysis, retrieval_metrics, trajectory
from tests.support.rows import summaries

CALL = LLMResponse("answer", "m", "x", None, None, Usage(100, 10), 0.1, False, [])


def search(query: str, *titles: str) -> Step:
    return Step("search", (CALL,), query=query, retrieved=tuple(
        RetrievedChunk(title, i, "text", 1.0 - i / 10) for i, title in enumerate(titles)))


def answer() -> Step:
    return Step("answer", (CALL,), text="the answer")


def row(qid: str, system: str, steps: list[Step], truth: int = 5,
        gold: tuple[str, ...] = ("A",)) -> dict[str, Any]:
    multi = len(gold) > 1
    question = Question(qid, f"question {qid}?", gold[0] if gold else None,
                        gold_titles=gold if multi else (), hops=len(gold) if multi else None)
    answered = SystemAnswer("the answer", calls=[CALL] * len(steps), steps=steps,
                            retrievals=sum(s.kind == "search" for s in steps))
    return dict(sample_row("D", question, system, answered, Grade(truth, truth),
                           [CALL] * len(steps), 1.0))


def rows() -> list[dict]:
    made = []
    for system in ("react", "naive"):
        made += [row("q1", system, [search("a", "X", "A"), search("b", "B"), answer()],
                     gold=("A", "B")),
                 row("q2", system, [search("c", "Y"), answer()], truth=2),
                 row("q3", system, [answer()], gold=())]
    for made_row in made:  # the chunks it saw: its first search's
        steps = made_row["steps"]
        if steps[0]["kind"] == "search":
            made_row["details"] = {"decision": None, "retrieved": steps[0]["retrieved"]}
    return made


def test_each_identity_is_evaluated_once_per_report(monkeypatch):
    evaluations = []
    evaluate = retrieval_metrics.answer_metrics
    monkeypatch.setattr(retrieval_metrics, "answer_metrics",
                        lambda answers: evaluations.append(len(answers)) or evaluate(answers))
    made = rows()
    found = analysis.analyse(summaries(made))
    assert evaluations == [2, 2]  # react's and naive's answers with a gold set, once each
    assert [r["recall_all_traj"] for r in found["retrieval"]] == [0.5, 0.5]
    assert [f["evidence_all"] for f in found["trajectory_by_answer"]] == [1.0, 0.0, None] * 2


def test_the_shared_evaluation_gives_what_a_separate_one_gives():
    made = rows()
    per_row = retrieval_metrics.row_metrics(summaries(made[:3]))
    alone = retrieval_metrics.answer_metrics(
        [(retrieval_metrics.gold_set(r), retrieval_metrics.retrieved_titles(r) or [],
          retrieval_metrics.trajectory_titles(r)) for r in summaries(made[:2])])
    assert per_row == [*alone, None]
    assert trajectory.evidence(per_row) == [(1.0, 1.0), (0.0, 0.0), None]


def test_answers_evaluated_in_batches_give_what_one_evaluation_gives(monkeypatch):
    answers = [(["A", "B"], ["X", "A"], ["X", "A", "Y", "B"]), (["A"], ["A"], ["A"]),
               (["C"], [], ["D", "D", "C"]), (["A"], ["B", "A", "A", "C", "D"], ["B"])]
    whole = retrieval_metrics.answer_metrics(answers)
    monkeypatch.setattr(retrieval_metrics, "BATCH", 1)
    assert retrieval_metrics.answer_metrics(answers) == whole
    assert [m["recall_all_traj"] for m in whole] == [1.0, 1.0, 1.0, 0.0]
    assert [m["hit@1"] for m in whole] == [0.0, 1.0, 0.0, 0.0]


def test_answers_of_one_relevance_pattern_are_evaluated_once(monkeypatch):
    # other titles, the same ranks for the gold articles: trec_eval reads the same ranking
    answers = [(["A", "B"], ["X", "A", "A"], ["X", "A", "A", "Y", "B"]),
               (["C", "D"], ["Z", "C", "C"], ["Z", "C", "C", "W", "D"]),
               (["E"], ["E", "F"], ["E", "F"])]
    evaluated = []
    evaluate = retrieval_metrics._evaluate
    monkeypatch.setattr(retrieval_metrics, "_evaluate", lambda made, measures: evaluated.append(
        len(made)) or evaluate(made, measures))
    first, second, third = retrieval_metrics.answer_metrics(answers)
    assert evaluated == [2, 1]  # two patterns at k, one trajectory (the third searched once)
    assert first == second and first["mrr"] == 0.5 and first["recall_all_traj"] == 1.0
    assert first["recall_all@k"] == 0.0 and third["hit@1"] == 1.0

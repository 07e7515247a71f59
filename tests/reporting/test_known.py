"""Decisions against what the model knew, for every question set: a question is known where the
comparable baseline's closed-book answer was right (the judge's correct answer, or a changed
fact's staleness verdict `current`), and every comparable decider is judged against that need;
a report without a baseline or a decider has no such table and says what it needs; runs of
other models are not paired."""

from __future__ import annotations

import html

import pytest

from freshrag.core.samples import answer_tokens
from freshrag.reporting import known
from freshrag.reporting.analysis import analyse
from freshrag.reporting.answers import Answers
from freshrag.reporting.empty import needs_lines
from freshrag.reporting.render.html import render_html
from freshrag.reporting.sections import nothing_to_show, render_analysis
from freshrag.reporting.table import TABLES, tables
from tests.support.rows import analysis_row, summaries, summary

N = 10
KNOWN = {0, 1, 2, 3}  # the questions the baseline answers right (truthfulness 5; others 2)


def stale_score(status: str, verdict: str | None = None) -> dict:
    return {"staleness": {"scorer": "staleness", "status": status, "metrics": {},
                          "details": {"verdict": verdict} if verdict else {}}}


@pytest.mark.parametrize("truth, correct_at, expected", [
    pytest.param(5, 4, True, id="correct"),
    pytest.param(4, 4, True, id="at-the-threshold"),
    pytest.param(3, 4, False, id="below-it"),
    pytest.param(4, 5, False, id="a-stricter-threshold"),
    pytest.param(None, 4, None, id="unscored-labels-nothing"),
])
def test_a_question_is_known_where_the_judge_found_the_answer_correct(truth, correct_at,
                                                                      expected):
    assert known.knew(summary(analysis_row("q", "baseline", truth=truth)), correct_at) \
        is expected


def test_a_failed_answer_labels_nothing():
    row = {**analysis_row("q", "baseline"), "status": "failed", "grade": None}
    assert known.knew(summary(row)) is None


@pytest.mark.parametrize("score, truth, expected", [
    pytest.param(stale_score("scored", "current"), 1, True, id="current-though-judged-wrong"),
    pytest.param(stale_score("scored", "stale"), 5, False, id="stale-though-judged-right"),
    pytest.param(stale_score("scored", "abstained"), 5, False, id="abstained"),
    pytest.param(stale_score("unscored"), 5, None, id="no-verdict-labels-nothing"),
    pytest.param(stale_score("not_applicable"), 5, True, id="not-a-changed-fact: the judge"),
])
def test_a_changed_fact_is_known_by_its_staleness_verdict(score, truth, expected):
    row = {**analysis_row("q", "baseline", truth=truth), "scores": score}
    assert known.knew(summary(row)) is expected


def baseline(models=None):
    rows = [analysis_row(f"q{n}", "baseline", truth=5 if n in KNOWN else 2) for n in range(N)]
    return [{**row, "models": models} if models else row for row in rows]


def decider(retrieves, system="boolean", models=None):
    """`system`'s rows, retrieving for the questions `retrieves` says, tokens per question."""
    rows = [analysis_row(f"q{n}", system, retrieved=["Gold"] if retrieves(n) else None,
                         tokens=(100 + 10 * n, n)) for n in range(N)]
    return [{**row, "models": models} if models else row for row in rows]


def test_a_decider_retrieving_only_for_what_the_model_did_not_know_is_perfect():
    [row] = known.known_decisions(Answers(summaries(baseline() + decider(
        lambda n: n not in KNOWN))))
    assert (row["system"], row["questions"], row["known"], row["retrieved"]) == (
        "boolean", N, len(KNOWN), N - len(KNOWN))
    assert row["precision"][0] == 1 and row["recall"][0] == 1
    assert row["wasted_tokens"] == 0
    assert row["stale_unretrieved"] is None  # no staleness verdicts


def test_a_decider_that_always_retrieves_wastes_the_known_questions_tokens():
    always = summaries(decider(lambda n: True))
    [row] = known.known_decisions(Answers(summaries(baseline()) + always))
    expected = sum(sum(answer_tokens(a)) for a in always if int(a.question_id[1:]) in KNOWN)
    assert expected and row["wasted_tokens"] == expected
    assert row["precision"][0] == round((N - len(KNOWN)) / N, 4) and row["recall"][0] == 1


def test_without_a_baseline_or_a_decider_there_is_no_table_and_it_says_what_it_needs():
    for rows in (decider(lambda n: True), baseline() + decider(lambda n: True, "naive")):
        made = analyse(summaries(rows))
        assert made["known_decisions"] == []
        assert "decisions against what the model knew" in nothing_to_show(made, tables())
        assert "decisions against what the model knew: needs a baseline and a system that " \
               "decides" in " ".join(needs_lines(made, tables()).split())


def test_runs_of_other_models_are_not_paired():
    rows = baseline({"answer": "m1", "judge": "j"}) \
        + decider(lambda n: True, models={"answer": "m2", "judge": "j"})
    assert known.known_decisions(Answers(summaries(rows))) == []
    rows += decider(lambda n: True, "self-check", models={"answer": "m1", "judge": "j"})
    assert [row["system"] for row in known.known_decisions(Answers(summaries(rows)))] == [
        "self-check"]


def test_the_report_prints_and_shows_the_table_with_its_note():
    made = analyse(summaries(baseline() + decider(lambda n: n % 2 == 0)), correct_at=3)
    note = TABLES["known_decisions"].note_in(made)
    assert "truthfulness >= 3" in note
    printed = render_analysis(made)
    assert "### Retrieval decisions against what the model knew" in printed
    assert "| wasted_tokens |" in printed and note in printed
    page = render_html([], [], made, [])
    assert 'id="analysis-known_decisions"' in page and html.escape(note) in page

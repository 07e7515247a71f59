"""Statistics that know their n (docs/reports.md#how-sure-the-numbers-are): paired comparisons
too small (below outcomes.MIN_PAIRED questions) or too even (no variance) to test print why
instead of an interval and a p-value, alike in the printed report, its markdown and the HTML
page; the first screen says when n is too small. Numbers keep their digits
(docs/reports.md#numbers-as-shown): costs and per-correct figures as many as tell neighbouring
systems apart, every figure with thousands separators."""

from __future__ import annotations

import pytest

from freshrag.reporting import analysis, outcomes, savings
from freshrag.reporting.answers import Answers
from freshrag.reporting.render import html
from freshrag.reporting.render.terminal import format_value
from freshrag.reporting.report import markdown_table, render
from freshrag.reporting.summary_table import summarise
from tests.support.rows import analysis_row as row
from tests.support.rows import summaries

PAIRED = ("a", "b", "questions", "mean_difference", "interval", "p_value", "p_holm")


def two_systems(questions: int, spread: bool = True) -> list[dict]:
    """`baseline` scoring 2 everywhere, `naive` 10, or (`spread`) 10 and 8 by turns."""
    rows = [row(f"q{i}", "baseline", truth=1, rel=1) for i in range(questions)]
    return rows + [row(f"q{i}", "naive", truth=5, rel=5 if i % 2 or not spread else 3,
                       retrieved=["Gold"]) for i in range(questions)]


@pytest.mark.parametrize(("questions", "spread", "why"), [
    pytest.param(2, True, "n = 2, below 10", id="two-questions"),
    pytest.param(9, True, "n = 9, below 10", id="one-below-the-minimum"),
    pytest.param(12, False, "no variance", id="every-difference-the-same"),
])
def test_a_comparison_too_small_or_too_even_gives_no_test_and_says_why(questions, spread, why):
    (pair,) = analysis.paired_comparisons(Answers(summaries(two_systems(questions, spread))))
    assert pair["untested"] == why
    assert pair["interval"] is pair["p_value"] is pair["p_holm"] is pair["mdd"] is None
    assert pair["mean_difference"] is not None  # the difference itself is still shown
    printed = markdown_table([pair], PAIRED).splitlines()[-1]
    assert printed.count(why) == 2 and "< 0.001" not in printed
    assert html._table("paired", [pair], PAIRED).count(why) == 2


def test_enough_varied_questions_are_tested():
    (pair,) = analysis.paired_comparisons(Answers(summaries(two_systems(outcomes.MIN_PAIRED))))
    assert "untested" not in pair and pair["p_value"] < 0.01
    assert pair["interval"][1] < 0 and pair["mdd"] > 0


def test_the_router_tables_and_the_wording_tests_know_their_n():
    assert savings.paired_test([1.0, 2.0], 0)["untested"] == "n = 2, below 10"
    assert savings.paired_test([1.0] * 20, 0)["untested"] == "no variance"
    assert savings.paired_test([1.0, 2.0] * 5, 0)["p_value"] is not None


@pytest.mark.parametrize(("questions", "said"), [(2, True), (outcomes.MIN_PAIRED, False)])
def test_the_first_screen_says_when_n_is_too_small_to_test(questions, said):
    rows = two_systems(questions)
    first_screen = render(summarise(summaries(rows)), "markdown")
    assert ("fewer than 10 scored answers for 2 of 2 systems" in first_screen) is said
    assert f"| {questions} |" in first_screen  # n per system


# --------------------------------------------------------------------------- digits


COSTS = {"naive": 0.00371, "react": 0.0058, "iterative": 0.0082, "decompose": 0.0089}


def test_neighbouring_costs_keep_the_digits_that_tell_them_apart():
    shown = {name: format_value(cost, "cost_usd") for name, cost in COSTS.items()}
    assert shown == {"naive": "0.00371", "react": "0.0058", "iterative": "0.0082",
                     "decompose": "0.0089"}
    assert format_value([0.0058, 0.0041, 0.0072], "cost_per_question") == \
        "0.0058 [0.0041, 0.0072]"
    assert format_value(0.5, "cost_per_correct") == "0.50"
    assert format_value(0.456, "score") == "0.46"  # other columns keep 2 decimals


def test_large_figures_have_thousands_separators():
    assert format_value(1121.7, "tokens_per_correct") == "1,121.70"
    assert format_value([12345.678, 1000.0, 99999.5], "input_tokens") == \
        "12,345.68 [1,000.00, 99,999.50]"


def test_markdown_and_html_show_costs_alike():
    table = [{"system": name, "cost_usd": cost, "tokens_per_correct": 1121.7}
             for name, cost in COSTS.items()]
    printed = markdown_table(table, ("system", "cost_usd", "tokens_per_correct"))
    page = html._table("cost", table, ("system", "cost_usd", "tokens_per_correct"))
    for cost in ("0.00371", "0.0058", "0.0082", "0.0089", "1,121.70"):
        assert cost in printed and cost in page
    assert "0.01 " not in printed and ">0.01<" not in page

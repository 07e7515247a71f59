"""Holm's adjustment over a table of paired comparisons and the minimum detectable difference
(harness/core/stats.py; docs/human-labels.md#many-comparisons), against statsmodels and against
the definitions worked out by hand."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

from freshrag.core.stats import holm, min_detectable_difference, with_holm
from freshrag.reporting import analysis, groups
from freshrag.reporting.answers import Answers
from tests.support.rows import summaries

# A fixed table of nine comparisons, as a report of several systems shows them
TABLE = [0.001, 0.04, 0.03, 0.2, 0.0001, 0.012, 0.5, 0.049, 0.013]


def holm_by_hand(p_values: list[float]) -> list[float]:
    """Holm's definition: sort ascending; the i-th smallest (from 0) is multiplied by m - i, the
    running maximum keeps the order, and nothing exceeds 1."""
    m = len(p_values)
    order = sorted(range(m), key=p_values.__getitem__)
    adjusted, running = [0.0] * m, 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def test_holm_is_statsmodels_and_the_definition_on_a_fixed_table():
    expected = multipletests(TABLE, method="holm")[1]
    assert holm(TABLE) == pytest.approx([round(float(p), 4) for p in expected], abs=0)
    assert holm(TABLE) == pytest.approx(holm_by_hand(TABLE), abs=5e-5)
    # worked out on paper: 0.0001 * 9, then 0.001 * 8, 0.012 * 7, 0.013 * 6 ...
    assert holm(TABLE)[4] == 0.0009 and holm(TABLE)[0] == 0.008
    assert holm(TABLE)[5] == 0.084 and holm(TABLE)[8] == 0.084  # the running maximum


@pytest.mark.parametrize("p_values, expected", [
    pytest.param([], [], id="no-comparison"),
    pytest.param([None, None], [None, None], id="none-tested"),
    pytest.param([0.02], [0.02], id="one-test-is-its-own-family"),
    # the untested row is no member of the family: two tests, not three
    pytest.param([0.01, None, 0.04], [0.02, None, 0.04], id="untested-left-out"),
    pytest.param([0.6, 0.7], [1.0, 1.0], id="capped-at-one"),
])
def test_holm_edges(p_values, expected):
    assert holm(p_values) == expected


def test_with_holm_adds_the_adjusted_value_to_each_row_and_keeps_the_rest():
    table = [{"a": "x", "p_value": 0.01}, {"a": "y", "p_value": None}, {"a": "z", "p_value": 0.03}]
    assert with_holm(table) == [{"a": "x", "p_value": 0.01, "p_holm": 0.02},
                                {"a": "y", "p_value": None, "p_holm": None},
                                {"a": "z", "p_value": 0.03, "p_holm": 0.03}]


def power_of_paired_t(difference: float, sd: float, n: int, alpha: float = 0.05) -> float:
    """The two-sided paired t-test's power, from the noncentral t distribution (scipy)."""
    critical = scipy_stats.t.ppf(1 - alpha / 2, n - 1)
    shift = difference / sd * math.sqrt(n)
    return float(scipy_stats.nct.sf(critical, n - 1, shift) + scipy_stats.nct.cdf(-critical, n - 1, shift))


@pytest.mark.parametrize("differences", [
    pytest.param([0, 1, -1, 2, 0, 1, 3, -2, 0, 1] * 3, id="30-grades"),
    pytest.param([float(i % 7) - 3 for i in range(400)], id="400-answers"),
    pytest.param([1, 2, 4], id="three"),
    # counts where statsmodels' root finder falls back to fsolve (an array, a negative root)
    pytest.param([float(i % 5) - 2 for i in range(73)], id="73-answers-fsolve"),
    pytest.param([float(i % 3) for i in range(876)], id="876-answers-fsolve"),
])
def test_the_minimum_detectable_difference_is_found_80_percent_of_the_time(differences):
    found = min_detectable_difference(differences)
    sd = statistics.stdev(differences)
    assert found is not None
    assert power_of_paired_t(found, sd, len(differences)) == pytest.approx(0.8, abs=2e-4)
    assert power_of_paired_t(found * 0.8, sd, len(differences)) < 0.75  # smaller: missed more


@pytest.mark.parametrize("differences, expected", [
    pytest.param([], None, id="none"),
    pytest.param([2.0], None, id="one-difference-has-no-spread"),
    pytest.param([1, 1, 1], 0.0, id="no-spread"),
])
def test_the_minimum_detectable_difference_edges(differences, expected):
    assert min_detectable_difference(differences) == expected


def test_more_questions_detect_smaller_differences():
    spread = [-2, -1, 0, 1, 2]
    few, many = (min_detectable_difference(spread * k) for k in (4, 40))
    assert few is not None and many is not None and many < few / 2


def sample_row(question, system, truth, rel=3):
    return {"dataset": "A_f", "question_id": question, "question": "?", "gold_title": "G",
            "system": system, "status": "ok", "answer": "a", "retrievals": 0,
            "usage": {"answer": {"input": 10, "output": 1, "estimated": False}},
            "grade": {"truthfulness": truth, "relevance": rel, "unscored_reason": None,
                      "raw": []}, "calls": [], "details": {}}


def test_every_paired_comparison_carries_holm_over_its_table_and_its_mdd():
    rows = [sample_row(f"q{i}", system, 1 + (i * shift) % 5)
            for system, shift in (("baseline", 1), ("naive", 2), ("react", 3), ("same", 1))
            for i in range(30)]
    table = analysis.paired_comparisons(Answers(summaries(rows)))
    assert len(table) == 6  # four systems: every two
    # baseline and same answer alike: no variance, so no test, and no place in Holm's family
    tested = [row for row in table if not row.get("untested")]
    assert [(row["a"], row["b"]) for row in table if row not in tested] == [("baseline", "same")]
    assert [row["p_holm"] for row in tested] == holm([row["p_value"] for row in tested])
    by = {(r["system"], r["question_id"]): r["grade"]["truthfulness"] for r in rows}
    for row in table:
        first, second = row["a"], row["b"]
        diffs = [by[first, f"q{i}"] - by[second, f"q{i}"] for i in range(30)]
        assert row["mdd"] == (min_detectable_difference(diffs) if row in tested else None)


def test_the_wording_tests_carry_their_mdd_and_holm_over_the_wording_table():
    pairs = [(True, False)] * 6 + [(True, True)] * 4 + [(False, True)] * 1
    test = groups.paired_test("length", "short", "long", pairs)
    assert test["mdd"] == min_detectable_difference([1] * 6 + [0] * 4 + [-1])
    rows = []
    for system in ("naive", "react"):
        for g in range(8):
            for criterion, right in (("short", g % 3 != 0), ("long", g % 2 == 0)):
                row = sample_row(f"{g}-{criterion}", system, 1)
                rows.append({**row, "group": f"g{g}", "criterion": criterion,
                             "reference": "1999", "answer": "1999" if right else "no"})
    wording = groups.analyse_groups(summaries(rows))["wording"]
    assert len(wording) == 2
    assert [row["p_holm"] for row in wording] == holm([row["p_value"] for row in wording])

"""The one mean, the one bootstrap and the one kappa every table uses."""

from __future__ import annotations

import random
import statistics

import pytest

from freshrag.core import stats
from freshrag.core.stats import cohen_kappa, mean

LABELS = ["fact_single", "summary", "reasoning"]


@pytest.mark.parametrize("values, places, expected", [
    pytest.param([], None, None, id="no-values"),
    pytest.param([], 4, None, id="no-values-rounded"),
    pytest.param([1, 2, 2], None, 5 / 3, id="exact"),
    pytest.param([1, 2, 2], 4, 1.6667, id="as-tables-show-it"),
    # summed left to right: math.fsum would give 0.1 here, and every table would shift
    pytest.param([0.1] * 10, None, 0.09999999999999999, id="left-to-right"),
    pytest.param([True, False, False, False], 4, 0.25, id="a-share-of-flags"),
])
def test_mean(values, places, expected):
    assert mean(values, places) == expected


@pytest.mark.parametrize("a, b, expected", [
    pytest.param(["summary", "reasoning"], ["summary", "reasoning"], 1.0, id="agree"),
    # observed 3/4 agreement; chance: (2/4)(1/4) + (2/4)(3/4) = 1/2
    pytest.param(["summary", "summary", "reasoning", "reasoning"],
                 ["summary", "reasoning", "reasoning", "reasoning"],
                 (3 / 4 - 1 / 2) / (1 - 1 / 2), id="by-hand"),
    pytest.param(["summary", "summary"], ["summary", "summary"], None, id="one-label-both-sides"),
    pytest.param([], [], None, id="no-items"),
])
def test_cohen_kappa_unweighted(a, b, expected):
    kappa = cohen_kappa(a, b, LABELS)
    assert kappa == (None if expected is None else pytest.approx(expected, abs=1e-12))


# The bootstrap of a mean or a sum is drawn with numpy (counts per distinct value, or indices);
# any other statistic resamples in Python. Both estimate the same percentiles, so on the same
# data they agree to within the resampling noise (about 0.01 here), whichever draw numpy takes.
GRADES = random.Random(5).choices(range(1, 6), k=400)
TOKENS = random.Random(6).choices(range(100, 3001), k=400)


@pytest.mark.parametrize("values", [GRADES, TOKENS], ids=["few-distinct", "many-distinct"])
@pytest.mark.parametrize("count_cost", [stats.COUNT_COST, 10**9, 0], ids=["as-is", "indices",
                                                                         "counts"])
def test_numpy_bootstrap_of_the_mean_agrees_with_the_python_one(values, count_cost,
                                                                  monkeypatch):
    monkeypatch.setattr(stats, "COUNT_COST", count_cost)
    fast = stats.bootstrap_interval(values, stats.mean)
    slow = stats.bootstrap_interval(values, lambda v: sum(v) / len(v))  # the Python path
    spread = statistics.pstdev(values) / len(values) ** 0.5
    assert fast[0] < statistics.mean(values) < fast[1]
    assert fast[0] == pytest.approx(slow[0], abs=0.3 * spread)
    assert fast[1] == pytest.approx(slow[1], abs=0.3 * spread)


def test_numpy_bootstrap_of_a_sum_of_counts_is_counts_and_repeatable():
    low, high = stats.bootstrap_interval(TOKENS, sum, seed=2)
    assert type(low) is int and type(high) is int
    assert low < sum(TOKENS) < high
    assert stats.bootstrap_interval(TOKENS, sum, seed=2) == (low, high)
    assert stats.bootstrap_interval(TOKENS, sum, seed=3) != (low, high)
    assert stats.bootstrap_interval([7, 7, 7], sum) == (21, 21)

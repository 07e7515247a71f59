"""The one mean and the one kappa every table uses."""

from __future__ import annotations

import pytest

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

"""Prediction-powered inference of a mean (harness/core/ppi.py): its coverage in a seeded
simulation with a judge biased by a known amount, where the judge's own interval misses; the
estimate worked out by hand; lambda at its limits; and the labels a team needs for a width."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from freshrag.core.ppi import labels_needed, power_tuning, ppi_mean
from freshrag.core.stats import bootstrap_interval, mean

GRADES = np.arange(1, 6)
SHARES = np.array([0.1, 0.15, 0.2, 0.25, 0.3])  # how people grade: mean 3.5
TRUE_MEAN = float((GRADES * SHARES).sum())
BIAS = 1  # the judge grades one point above the person, give or take one, within 1..5


def people(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice(GRADES, size=n, p=SHARES)


def biased_judge(rng: np.random.Generator, human: np.ndarray) -> np.ndarray:
    return np.clip(human + BIAS + rng.choice([-1, 0, 0, 1], size=len(human)), 1, 5)


def test_the_ppi_interval_covers_the_people_mean_95_percent_of_the_time_where_the_judge_misses():
    # 2,000 repetitions: the coverage's standard error is 0.5%, so 95% +- 2 is a real check
    rng = np.random.default_rng(20231)
    repetitions, labelled, judged = 2000, 300, 3000
    covered, judge_covered, widths = 0, 0, []
    for repetition in range(repetitions):
        human, unlabelled = people(rng, labelled), people(rng, judged)
        judge, judge_only = biased_judge(rng, human), biased_judge(rng, unlabelled)
        found = ppi_mean(human, judge, judge_only)
        assert found is not None
        covered += found.low <= TRUE_MEAN <= found.high
        widths.append(found.high - found.low)
        if repetition < 200:  # the judge alone, as the report's intervals give it
            grades = [float(g) for g in np.concatenate([judge, judge_only])]
            low, high = bootstrap_interval(grades, mean, seed=repetition)
            judge_covered += low <= TRUE_MEAN <= high
    assert 0.93 <= covered / repetitions <= 0.97
    assert judge_covered / 200 < 0.05  # biased by +0.8 after clipping: never near the truth
    # and the judge's grades made it narrower than people's 300 grades alone would be
    alone = 2 * 1.959964 * math.sqrt(float((SHARES * (GRADES - TRUE_MEAN) ** 2).sum()) / labelled)
    assert statistics.mean(widths) < 0.8 * alone


def test_the_estimate_by_hand_with_lambda_one():
    human, judge, judge_only = [3, 4, 5], [4, 5, 5], [5, 4, 4, 5]
    found = ppi_mean(human, judge, judge_only, lam=1.0)
    assert found is not None
    rectifier = [-1, -1, 0]  # person minus judge on the labelled answers
    assert found.mean == pytest.approx(4.5 + statistics.mean(rectifier))
    variance = statistics.variance(rectifier) / 3 + statistics.variance(judge_only) / 4
    assert found.high - found.mean == pytest.approx(1.959964 * math.sqrt(variance), rel=1e-6)
    assert (found.lam, found.labelled, found.unlabelled) == (1.0, 3, 4)


def test_nothing_judged_only_is_the_people_mean_with_its_normal_interval():
    human = [1, 2, 2, 3, 5, 4]
    found = ppi_mean(human, [5] * 6, [])
    assert found is not None and found.lam == 0.0
    assert found.mean == pytest.approx(statistics.mean(human))
    half = 1.959964 * statistics.stdev(human) / math.sqrt(6)
    assert (found.low, found.high) == pytest.approx((found.mean - half, found.mean + half))


def test_lambda_follows_how_much_the_judge_tells():
    rng = np.random.default_rng(7)
    human, rest = people(rng, 400), people(rng, 4000)
    assert power_tuning(human, human, rest) == pytest.approx(1 / (1 + 400 / 4000), abs=0.05)
    noise, noise_rest = people(rng, 400), people(rng, 4000)  # a judge that knows nothing
    assert power_tuning(human, noise, noise_rest) < 0.15
    assert power_tuning(human, [3] * 400, [3] * 4000) == 0.0  # one grade for all: no spread
    perfect = ppi_mean(human, human, rest)
    alone = ppi_mean(human, human, [])
    assert perfect is not None and alone is not None
    assert perfect.high - perfect.low < 0.5 * (alone.high - alone.low)


@pytest.mark.parametrize("human, judge, judge_only", [
    pytest.param([], [], [4, 5], id="no-labels"),
    pytest.param([4], [5], [4, 5], id="one-label-no-variance"),
])
def test_too_few_labels_give_no_interval(human, judge, judge_only):
    assert ppi_mean(human, judge, judge_only) is None


def test_grades_of_different_answers_are_refused():
    with pytest.raises(ValueError, match="2 people's grades for 3 judge's grades"):
        ppi_mean([1, 2], [1, 2, 3], [4])


@pytest.mark.parametrize("half_width, correlation", [
    pytest.param(0.2, 0.0, id="a-judge-that-tells-nothing"),
    pytest.param(0.15, 0.7, id="a-typical-judge"),
    pytest.param(0.1, 0.9, id="a-good-judge"),
])
def test_labels_needed_gives_the_width_asked_for(half_width, correlation):
    spread, judged = 1.3, 5000
    n = labels_needed(half_width, spread, correlation, judged)
    z = 1.959964

    def width(count: int) -> float:
        return z * spread * math.sqrt((1 - correlation ** 2 * judged / (judged + count)) / count)

    assert width(n) <= half_width < width(n - 1)
    # and the interval of a judge with that correlation, made from n labels, is that wide
    rng = np.random.default_rng(3)
    halves = []
    for _ in range(200):
        shared = rng.normal(size=n + judged)
        human = shared[:n] * spread
        judge = correlation * shared + math.sqrt(1 - correlation ** 2) * rng.normal(size=n + judged)
        found = ppi_mean(human, judge[:n], judge[n:])
        assert found is not None
        halves.append((found.high - found.low) / 2)
    assert statistics.mean(halves) == pytest.approx(half_width, rel=0.08)

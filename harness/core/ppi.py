"""Prediction-powered inference of a mean (docs/human-labels.md#intervals-that-use-the-labels):
Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference" (Science,
2023), with the power tuning of PPI++ (Angelopoulos, Duchi and Zrnic, 2023).

n answers carry a person's grade Y and the judge's grade f; N others carry the judge's only. The
estimate of the mean grade people would give is

    lambda * mean(f over the N) + mean(Y - lambda * f over the n),

unbiased for any lambda and any judge, however biased: the labelled answers measure the judge's
error and take it off. Its variance is lambda^2 Var(f) / N + Var(Y - lambda f) / n; the 95%
interval is the normal one around it (the CLT interval of the papers). lambda = 1 is PPI, 0 the
people's mean alone; PPI++ takes the lambda that minimises the variance,
Cov(Y, f) / ((1 + n/N) Var(f)), estimated from the data and clipped to [0, 1], so that a judge
that tells nothing costs nothing. Written over numpy because the `ppi-python` package needs numba
and gdown, which freshrag avoids (docs/design.md#scoring-and-statistics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

CONFIDENCE = 0.95


@dataclass(frozen=True)
class PPIMean:
    """A prediction-powered mean with its interval, the lambda used, and the sample sizes."""

    mean: float
    low: float
    high: float
    lam: float
    labelled: int
    unlabelled: int


def power_tuning(human: Sequence[float], judge: Sequence[float],
                 judge_only: Sequence[float]) -> float:
    """PPI++'s lambda for a mean: Cov(Y, f) over the labelled answers divided by (1 + n/N) times
    Var(f) over all of the judge's grades, clipped to [0, 1]; 0 when the judge's grades do not
    vary or no answer is judged only (nothing to borrow)."""
    import numpy as np  # at use: `freshrag --help` loads no numpy

    n, big_n = len(human), len(judge_only)
    every = np.concatenate([np.asarray(judge, float), np.asarray(judge_only, float)])
    spread = float(every.var(ddof=1)) if len(every) > 1 else 0.0
    if big_n == 0 or n < 2 or spread == 0:
        return 0.0
    covariance = float(np.cov(np.asarray(human, float), np.asarray(judge, float))[0, 1])
    return min(1.0, max(0.0, covariance / ((1 + n / big_n) * spread)))


def ppi_mean(human: Sequence[float], judge: Sequence[float], judge_only: Sequence[float],
             confidence: float = CONFIDENCE, lam: float | None = None) -> PPIMean | None:
    """The prediction-powered mean of the people's grades and its `confidence` interval:
    `human` and `judge` are the grades of the same labelled answers, in one order; `judge_only`
    the judge's grades of the answers nobody labelled. `lam` None: PPI++'s (`power_tuning`).
    None with fewer than 2 labelled answers (no variance to estimate)."""
    import numpy as np  # at use: `freshrag --help` loads no numpy

    if len(human) != len(judge):
        raise ValueError(f"{len(human)} people's grades for {len(judge)} judge's grades")
    if len(human) < 2:
        return None
    y, f, rest = (np.asarray(values, float) for values in (human, judge, judge_only))
    if not len(rest):  # nothing judged only: the people's mean alone
        lam = 0.0
    elif lam is None:
        lam = power_tuning(human, judge, judge_only)
    rectifier = y - lam * f
    estimate = float(rectifier.mean()) + (lam * float(rest.mean()) if len(rest) else 0.0)
    variance = float(rectifier.var(ddof=1)) / len(y)
    if len(rest) > 1:
        variance += lam ** 2 * float(rest.var(ddof=1)) / len(rest)
    half = NormalDist().inv_cdf((1 + confidence) / 2) * math.sqrt(variance)
    return PPIMean(estimate, estimate - half, estimate + half, lam, len(y), len(rest))


def labels_needed(half_width: float, spread: float, correlation: float, judged: int,
                  confidence: float = CONFIDENCE) -> int:
    """The fewest labelled answers for an interval of +- `half_width`, where people's grades
    have standard deviation `spread`, the judge's grades correlate with theirs at `correlation`
    and `judged` answers carry the judge's grade only. At PPI++'s best lambda the variance is
    spread^2 / n * (1 - correlation^2 * N / (N + n)) (the module's formula, minimised)."""
    z = NormalDist().inv_cdf((1 + confidence) / 2)

    def width(n: int) -> float:
        return z * spread * math.sqrt((1 - correlation ** 2 * judged / (judged + n)) / n)

    low, high = 2, 2
    while width(high) > half_width:  # the width falls as n grows: double, then bisect
        low, high = high, high * 2
    while low < high:
        middle = (low + high) // 2
        low, high = (middle + 1, high) if width(middle) > half_width else (low, middle)
    return high

"""Where a series of scores ordered by month falls, and how sure that is (docs/cutoff.md#method).

The model is a step: one level of closed-book quality before a month, a lower one from that month
on. The fitted month is the one that minimises the squared error of the two levels (with the
total sum of squares fixed, the one that maximises the between-level sum of squares,
n1 * n2 / n * (mean1 - mean2) ** 2), among the months with questions that leave at least
`min_side` questions on each side and make the level before higher than the level after.

Two resamplings answer two different questions:
- is there a fall at all? A permutation test: scores shuffled across the questions (so no month
  means anything) and refitted; the share of shuffles whose best step is as large as the one
  observed is the p-value. Because every shuffle searches every month too, the search itself is
  accounted for: a flat series finds some step, but no larger than shuffles do.
- where is it? A bootstrap: questions resampled within their months (each month keeps its
  count) and refitted; the 2.5th and 97.5th percentiles of the fitted months are the interval.

Both see only each month's sum and count of scores, so a resample costs a few numpy operations
per month, not one per question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from freshrag.core.wording import counted

MIN_SIDE = 3  # questions each side of a step: fewer, and one question can make a step
PERMUTATIONS = 1000
BOOTSTRAP_SAMPLES = 2000
SIGNIFICANCE = 0.05
CONFIDENCE = 0.95
BLOCK = 200  # shuffles drawn at once (200 x n scores), which bounds the memory


@dataclass(frozen=True)
class Fall:
    """The fitted step, or why there is none (`month` None and `reason` said)."""

    month: int | None  # index of the first month of the lower level
    reason: str | None = None
    before: float | None = None  # mean score before `month`
    after: float | None = None  # mean score from `month` on
    p_value: float | None = None
    interval: tuple[int, int] | None = None  # indices of months, as `month`
    bootstrap_share: float | None = None  # the resamples in which a fall was found


def fit_fall(months: Sequence[int], scores: Sequence[float], names: Sequence[str],
             seed: int = 0, min_side: int = MIN_SIDE, permutations: int = PERMUTATIONS,
             samples: int = BOOTSTRAP_SAMPLES) -> Fall:
    """The step of `scores` (one per question, `months` its month's index into `names`, the
    months' names that messages use)."""
    n_months = len(names)
    month_of = np.asarray(months, dtype=np.int64)
    values = np.asarray(scores, dtype=np.float64)
    counts = np.bincount(month_of, minlength=n_months).astype(np.float64)
    if len(values) < 2 * min_side or np.count_nonzero(counts) < 2:
        return Fall(None, f"too few questions to fit a fall: {len(values)} in "
                          f"{counted(int(np.count_nonzero(counts)), 'month')}; it needs at least {min_side} "
                          f"on each side of a month")
    sums = np.bincount(month_of, weights=values, minlength=n_months)
    best, strength = best_steps(sums[None, :], counts, min_side)
    if best[0] < 0:
        return Fall(None, "no fall: no month has higher closed-book quality before it than "
                          "from it on")
    month = int(best[0])
    before, after = _levels(sums, counts, month)
    rng = np.random.default_rng(seed)
    p_value = _permutation_p(values[np.argsort(month_of, kind="stable")], counts,
                             float(strength[0]), min_side, permutations, rng)
    if p_value >= SIGNIFICANCE:
        return Fall(None, f"no fall: the best step ({before:.2f} before "
                          f"{names[month]}, {after:.2f} from it on) is no larger than scores "
                          f"shuffled across months give (p = {p_value:.3f})",
                    before=before, after=after, p_value=p_value)
    interval, share = _bootstrap_interval(month_of, values, counts, min_side, samples, rng)
    return Fall(month, None, before, after, p_value, interval, share)


def best_steps(sums: np.ndarray, counts: np.ndarray, min_side: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """For each row of per-month `sums` (rows: resamples; the months' `counts` shared): the
    index of the best falling step's first lower month (-1 for none) and its between-level sum
    of squares (0 for none)."""
    total_n = counts.sum()
    n_before = np.cumsum(counts)[:-1]  # questions before month k+1, k = 0..M-2
    s_before = np.cumsum(sums, axis=1)[:, :-1]
    s_total = sums.sum(axis=1, keepdims=True)
    n_after = total_n - n_before
    allowed = (n_before >= min_side) & (n_after >= min_side) & (counts[1:] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_before = s_before / n_before
        mean_after = (s_total - s_before) / n_after
        between = n_before * n_after / total_n * (mean_before - mean_after) ** 2
    between = np.where(allowed & (mean_before > mean_after), between, -np.inf)
    if between.shape[1] == 0:
        return np.full(len(sums), -1), np.zeros(len(sums))
    index = np.argmax(between, axis=1)
    value = between[np.arange(len(sums)), index]
    found = np.isfinite(value)
    return np.where(found, index + 1, -1), np.where(found, value, 0.0)


def _levels(sums: np.ndarray, counts: np.ndarray, month: int) -> tuple[float, float]:
    before = sums[:month].sum() / counts[:month].sum()
    after = sums[month:].sum() / counts[month:].sum()
    return round(float(before), 4), round(float(after), 4)


def _permutation_p(ordered: np.ndarray, counts: np.ndarray, observed: float, min_side: int,
                   permutations: int, rng: np.random.Generator) -> float:
    """The share of shuffles (the observed order counted as one) whose best step is at least
    as large as `observed`; `ordered` holds the scores sorted by month."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    present = counts > 0
    as_large = 0
    for start in range(0, permutations, BLOCK):
        rows = min(BLOCK, permutations - start)
        shuffled = rng.permuted(np.tile(ordered, (rows, 1)), axis=1)
        sums = np.zeros((rows, len(counts)))
        # reduceat needs the start of each month that has questions, in order
        sums[:, present] = np.add.reduceat(shuffled, starts[present], axis=1)
        _, strength = best_steps(sums, counts, min_side)
        as_large += int(np.count_nonzero(strength >= observed * (1 - 1e-9)))
    return round((1 + as_large) / (1 + permutations), 4)


def _bootstrap_interval(month_of: np.ndarray, values: np.ndarray, counts: np.ndarray,
                        min_side: int, samples: int, rng: np.random.Generator
                        ) -> tuple[tuple[int, int] | None, float]:
    """The percentile interval of the fitted month over resamples within months, and the share
    of resamples in which a fall was found at all."""
    sums = np.zeros((samples, len(counts)))
    for month in np.flatnonzero(counts):
        # a resample of a month's n scores is a multinomial draw of each distinct score's count
        distinct, seen = np.unique(values[month_of == month], return_counts=True)
        n = int(seen.sum())
        sums[:, month] = rng.multinomial(n, seen / n, size=samples) @ distinct
    best, _ = best_steps(sums, counts, min_side)
    fitted = np.sort(best[best >= 0])
    share = round(len(fitted) / samples, 4)
    if not len(fitted):
        return None, share
    tail = (1 - CONFIDENCE) / 2
    low = fitted[int(tail * len(fitted))]
    high = fitted[min(len(fitted) - 1, int((1 - tail) * len(fitted)))]
    return (int(low), int(high)), share

"""The statistics every table shares (docs/methods.md#statistics): the mean, the percentile
bootstrap (for the analysis of runs and the judge probes alike), Cohen's kappa, which is
scikit-learn's, and for every table of paired comparisons the Holm-adjusted p-values over its rows
and each comparison's minimum detectable difference (docs/human-labels.md#many-comparisons), which
are statsmodels'.

The bootstrap of a mean or a sum, the report's commonest intervals, is drawn with numpy: a
resample of n values from n is a draw of how many times each distinct value comes up (a
multinomial over the distinct values with their shares), so a grade's 2,000 resamples of 100,000
answers cost 2,000 x 5 counts, not 200 million Python calls. Values with many distinct numbers
(token counts) are resampled by index, in blocks that bound the memory. Any other statistic
resamples in Python, as before.
"""

from __future__ import annotations

import math
import random
import statistics
import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    import numpy as np

BOOTSTRAP_SAMPLES = 2000
CONFIDENCE = 0.95


def mean(values: Sequence[float], places: int | None = None) -> float | None:
    """The arithmetic mean, None for no values; rounded to `places` decimals if given (the
    tables show 4). Summed left to right, not with math.fsum, so every figure stays as it was."""
    if not values:
        return None
    value = sum(values) / len(values)
    return value if places is None else round(value, places)


def bootstrap_interval(values: Sequence[Any],
                       statistic: Callable[[Sequence[Any]], float | None],
                       samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval (95%) of `statistic` over `values`; `mean` and `sum` (this
    module's mean, the built-in sum) over numbers are resampled with numpy (the module's note).
    A statistic that is None only for no values, as `mean`, is never given none here."""
    n = len(values)
    if n == 0:
        raise ValueError("bootstrap of no values")
    if statistic in (mean, sum, statistics.mean) and _all_numbers(values):
        sums = _resampled_sums(values, samples, seed)
        sums.sort()
        drawn = sums if statistic is sum else sums / n
        whole = statistic is sum and all(isinstance(v, int) for v in values)
        stats = (drawn.astype("int64") if whole else drawn).tolist()  # a sum of counts stays a count
    else:
        rng = random.Random(seed)
        stats = sorted(_defined(statistic(rng.choices(values, k=n))) for _ in range(samples))
    tail = (1 - CONFIDENCE) / 2
    return (round(stats[int(tail * samples)], 4),
            round(stats[min(samples - 1, int((1 - tail) * samples))], 4))


# A count per distinct value costs about 25 times an index per value (numpy 2.4, measured): the
# cheaper of the two draws is taken.
COUNT_COST = 25
BLOCK_VALUES = 4_000_000  # indices drawn at once (32 MB)


def _defined(value: float | None) -> float:
    if value is None:  # a resample has n > 0 values: a statistic such as `mean` is defined
        raise ValueError("the statistic gave no value for a resample")
    return value


def _all_numbers(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _resampled_sums(values: Sequence[float], samples: int, seed: int) -> np.ndarray:
    """The sums of `samples` resamples (n from n, with replacement) of `values`."""
    import numpy as np  # at use: `freshrag --help` loads this module, not numpy

    rng = np.random.default_rng(seed)
    data = np.asarray(values, dtype=np.float64)
    distinct, counts = np.unique(data, return_counts=True)
    if len(distinct) * COUNT_COST <= len(data):
        return rng.multinomial(len(data), counts / len(data), size=samples) @ distinct
    sums = np.empty(samples)
    block = max(1, BLOCK_VALUES // len(data))
    for start in range(0, samples, block):
        rows = min(block, samples - start)
        sums[start:start + rows] = data[rng.integers(0, len(data), (rows, len(data)))].sum(axis=1)
    return sums


def cohen_kappa(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any],
                weights: str | None = None) -> float | None:
    """Cohen's kappa of two ratings of the same items over `labels` (scikit-learn's
    `cohen_kappa_score`; `weights` None, "linear" or "quadratic", by the labels' positions).
    None where it is undefined: no items, or chance alone predicting full agreement (both
    sides give every item one and the same label)."""
    if not a:
        return None
    from sklearn.exceptions import UndefinedMetricWarning  # at use: importing it takes a second
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():  # undefined is returned as None, not warned about
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 in releases before the warning
        value = float(cohen_kappa_score(list(a), list(b), labels=list(labels), weights=weights))
    return None if math.isnan(value) else value


POWER = 0.8  # the minimum detectable difference: found 80% of the time ...
ALPHA = 0.05  # ... by a two-sided test at 5%


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment over the p-values given (statsmodels' `multipletests`,
    method "holm"); None (no test made) stays None and is no member of the family."""
    tested = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if not tested:
        return adjusted
    from statsmodels.stats.multitest import multipletests  # at use: it imports scipy

    corrected = multipletests([p_values[i] for i in tested], method="holm")[1]
    for i, value in zip(tested, corrected):
        adjusted[i] = round(float(value), 4)
    return adjusted


def with_holm(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a table of paired comparisons, each with `p_holm` after its `p_value`: that
    p-value adjusted by Holm over every comparison the table shows (`holm`)."""
    adjusted = holm([row.get("p_value") for row in table])
    shown = []
    for row, p in zip(table, adjusted):
        placed: dict[str, Any] = {}
        for key, value in row.items():
            placed[key] = value
            if key == "p_value":  # beside it, so that a reader of the JSON sees both
                placed["p_holm"] = p
        shown.append(placed)
    return shown


def min_detectable_difference(differences: Sequence[float], power: float = POWER,
                              alpha: float = ALPHA) -> float | None:
    """The smallest mean difference a paired t-test on this many differences, with their
    standard deviation, finds with probability `power` at two-sided level `alpha`: statsmodels'
    `TTestPower.solve_power` for the effect size (in standard deviations), times the sample's
    standard deviation. None for fewer than 2 differences; 0.0 when they do not vary."""
    if len(differences) < 2:
        return None
    spread = statistics.stdev(differences)
    if spread == 0:
        return 0.0
    from statsmodels.stats.power import TTestPower  # at use: it imports scipy

    effect = TTestPower().solve_power(effect_size=None, nobs=len(differences), alpha=alpha,
                                      power=power, alternative="two-sided")
    # Where its bracketing root finder fails (73 or 876 differences, say), statsmodels falls back
    # to fsolve, which answers with a one-element array and may find the negative root: a
    # two-sided test's power is the same for -d as for d.
    import numpy as np

    return round(abs(float(np.asarray(effect).reshape(-1)[0])) * spread, 4)

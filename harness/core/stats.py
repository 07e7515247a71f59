"""The statistics every table shares (docs/methods.md#statistics): the mean, the percentile
bootstrap (for the analysis of runs and the judge probes alike) and Cohen's kappa, which is
scikit-learn's.
"""

from __future__ import annotations

import math
import random
import warnings
from typing import Any, Callable, Sequence

BOOTSTRAP_SAMPLES = 2000
CONFIDENCE = 0.95


def mean(values: Sequence[float], places: int | None = None) -> float | None:
    """The arithmetic mean, None for no values; rounded to `places` decimals if given (the
    tables show 4). Summed left to right, not with math.fsum, so every figure stays as it was."""
    if not values:
        return None
    value = sum(values) / len(values)
    return value if places is None else round(value, places)


def bootstrap_interval(values: Sequence[Any], statistic: Callable[[Sequence[Any]], float],
                       samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval (95%) of `statistic` over `values`."""
    rng = random.Random(seed)
    n = len(values)
    if n == 0:
        raise ValueError("bootstrap of no values")
    stats = sorted(statistic(rng.choices(values, k=n)) for _ in range(samples))
    tail = (1 - CONFIDENCE) / 2
    return (round(stats[int(tail * samples)], 4),
            round(stats[min(samples - 1, int((1 - tail) * samples))], 4))


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

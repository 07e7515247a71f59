"""Statistics shared by the analysis of runs and the judge probes: one bootstrap for both."""

from __future__ import annotations

import random
from typing import Callable, Sequence

BOOTSTRAP_SAMPLES = 2000
CONFIDENCE = 0.95


def bootstrap_interval(values: Sequence[float], statistic: Callable[[Sequence[float]], float],
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

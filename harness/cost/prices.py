"""The price table: what a model's tokens cost, in US dollars per million tokens (input, output),
for the dry run, the budget of --max-cost and the reports (docs/costs.md#prices).

The built-in table holds list prices of a few well-known models at the time of writing; a
`[prices]` table in `freshrag.toml` adds models or overrides them:

    [prices]
    "gpt-4o-mini" = { input = 0.15, output = 0.60 }
    "my-local-model" = { input = 0, output = 0 }

A model with no price is unpriced, never free.
"""

from __future__ import annotations

import math
from pathlib import Path

from freshrag.core.config import LOCAL_MODEL, ConfigError, config_table

KNOWN_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4-0613": (30.0, 60.0),  # the paper's model
    "gpt-4-turbo": (10.0, 30.0),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "gpt-3.5-turbo-0125": (0.5, 1.5),
    LOCAL_MODEL: (0.0, 0.0),  # the embedded llama.cpp model: your own electricity
}


def price_table(config_file: Path | None) -> dict[str, tuple[float, float]]:
    """The built-in table with the config file's `[prices]` on top."""
    table = dict(KNOWN_PRICES)
    for model, entry in config_table(config_file, "prices").items():
        where = f"{config_file}: [prices] {model!r}"
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            raise ConfigError(f"{where}: expected {{ input = USD per 1M, output = USD per 1M }}")
        values = (entry["input"], entry["output"])
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                   and math.isfinite(v) for v in values):
            raise ConfigError(f"{where}: prices must be numbers >= 0, got {values}")
        table[model] = (float(values[0]), float(values[1]))
    return table

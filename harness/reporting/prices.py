"""What tokens cost, per model, so that a report can set quality against money.

Prices are US dollars per million tokens, (input, output). The built-in table holds list prices
of a few well-known models at the time of writing; a `[prices]` table in `freshrag.toml` adds
models or overrides them:

    [prices]
    "gpt-4o-mini" = { input = 0.15, output = 0.60 }
    "my-local-model" = { input = 0, output = 0 }

A model with no price is reported as unpriced, never as free. A call answered by the OpenAI
Batch API (`freshrag run --batch`; its call record says `"batch": true`) is priced at the batch
rate, `BATCH_DISCOUNT` of the list price; a call without the field (a live call, or a row
written before it existed) at the list price.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from freshrag.core.config import LOCAL_MODEL, ConfigError, config_table
from freshrag.cost.budget import BATCH_DISCOUNT
from freshrag.reporting.identity import role_models

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


def row_cost(row: dict[str, Any], prices: dict[str, tuple[float, float]]) -> float | None:
    """Dollars the system spent on this answer (every role but the judge), its batch calls at
    the batch rate; None if a role's model has no price."""
    models = role_models(row)
    total = 0.0
    for role, usage in row["usage"].items():
        if role == "judge" or not (usage["input"] or usage["output"]):
            continue
        price = prices.get(models.get(role, ""))
        if price is None:
            return None
        total += _dollars(usage, price)
    # `usage` sums every call of a role at list price; take the discount off the batch ones
    for call in batch_calls(row):
        price = prices.get(call.get("model") or models.get(call["role"], ""))
        if price is not None:  # None only for a role that spent nothing: priced above or not
            total -= (1 - BATCH_DISCOUNT) * _dollars(call["usage"], price)
    return total


def batch_calls(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The calls of a row's system (the judge's excluded, as in `row_cost`) that a batch
    answered."""
    return [call for call in row.get("calls") or []
            if call.get("batch") and call.get("role") != "judge"]


def batch_note(rows: list[dict[str, Any]]) -> list[str]:
    """What the analysis notes say about batch prices (nothing when no call was a batch's)."""
    answered = [row for row in rows if row["status"] == "ok"]
    batched = sum(len(batch_calls(row)) for row in answered)
    if not batched:
        return []
    system_calls = sum(1 for row in answered for call in row.get("calls") or []
                       if call.get("role") != "judge")
    return [f"dollars: {batched:,} of {system_calls:,} system calls (judge excluded) were "
            f"answered by the Batch API and are priced at {BATCH_DISCOUNT:.0%} of the list price "
            f"(cost table: batch_calls; the savings and mixes tables likewise)"]


def _dollars(usage: dict[str, Any], price: tuple[float, float]) -> float:
    return (usage["input"] * price[0] + usage["output"] * price[1]) / 1e6

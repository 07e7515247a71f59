"""What tokens cost, per model, so that a report can set quality against money.

Prices are US dollars per million tokens, (input, output), from the price table of
harness/cost/prices.py (the built-in list prices with `[prices]` of `freshrag.toml` on top).
A model with no price is reported as unpriced, never as free. A call answered by the OpenAI
Batch API (`freshrag run --batch`; its call record says `"batch": true`) is priced at the batch
rate, `BATCH_DISCOUNT` of the list price; a call without the field (a live call, or a row
written before it existed) at the list price.
"""

from __future__ import annotations

from freshrag.core.records import CallRecord, SampleRow, UsageRecord
from freshrag.core.summary import Calls
from freshrag.cost.budget import BATCH_DISCOUNT
from freshrag.cost.prices import KNOWN_PRICES as KNOWN_PRICES
from freshrag.cost.prices import price_table as price_table
from freshrag.reporting.identity import role_models


def row_cost(row: SampleRow, prices: dict[str, tuple[float, float]]) -> float | None:
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


def batch_calls(row: SampleRow) -> list[CallRecord]:
    """The calls of a row's system (the judge's excluded, as in `row_cost`) that a batch
    answered."""
    calls = row.get("calls") or []
    if isinstance(calls, Calls):  # a light row's, which knows them (core/light.py)
        return list(calls.batched)
    return [call for call in calls if call.get("batch") and call.get("role") != "judge"]


def batch_note(rows: list[SampleRow]) -> list[str]:
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


def _dollars(usage: UsageRecord, price: tuple[float, float]) -> float:
    return (usage["input"] * price[0] + usage["output"] * price[1]) / 1e6

"""What tokens cost, per model, so that a report can set quality against money.

Prices are US dollars per million tokens, (input, output), from the price table of
harness/cost/prices.py (the built-in list prices with `[prices]` of `freshrag.toml` on top).
A model with no price is reported as unpriced, never as free. A call answered by the OpenAI
Batch API (`freshrag run --batch`; its call record says `"batch": true`) is priced at the batch
rate, `BATCH_DISCOUNT` of the list price; a call without the field (a live call, or a row
written before it existed) at the list price.
"""

from __future__ import annotations

from freshrag.core.summary import AnswerSummary, Usage
from freshrag.cost.budget import BATCH_DISCOUNT
from freshrag.cost.prices import KNOWN_PRICES as KNOWN_PRICES
from freshrag.cost.prices import price_table as price_table


def row_cost(answer: AnswerSummary, prices: dict[str, tuple[float, float]]) -> float | None:
    """Dollars the system spent on this answer (every role but the judge), its batch calls at
    the batch rate; None if a role's model has no price."""
    models = answer.models
    total = 0.0
    for role, usage in answer.usage.items():
        if role == "judge" or not (usage.input or usage.output):
            continue
        price = prices.get(models.get(role, ""))
        if price is None:
            return None
        total += _dollars(usage, price)
    # `usage` sums every call of a role at list price; take the discount off the batch ones
    # (the system's: the judge's are left out, as above)
    for call in answer.calls.batched:
        price = prices.get(call.model or models.get(call.role, ""))
        if price is not None and isinstance(call.usage, Usage):  # None only for a role that
            total -= (1 - BATCH_DISCOUNT) * _dollars(call.usage, price)  # spent nothing
    return total


def batch_note(answers: list[AnswerSummary]) -> list[str]:
    """What the analysis notes say about batch prices (nothing when no call was a batch's)."""
    answered = [answer for answer in answers if answer.status == "ok"]
    batched = sum(len(answer.calls.batched) for answer in answered)
    if not batched:
        return []
    system_calls = sum(1 for answer in answered for call in answer.calls if call.role != "judge")
    return [f"dollars: {batched:,} of {system_calls:,} system calls (judge excluded) were "
            f"answered by the Batch API and are priced at {BATCH_DISCOUNT:.0%} of the list price "
            f"(cost table: batch_calls; the savings and mixes tables likewise)"]


def _dollars(usage: Usage, price: tuple[float, float]) -> float:
    return (usage.input * price[0] + usage.output * price[1]) / 1e6

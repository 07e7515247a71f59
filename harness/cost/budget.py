"""`--max-cost USD`: a budget that refuses a call once the dollars spent plus the estimate of the
calls in flight would pass the cap.

It sits in `LLMClient` as its call gate, so every call a run makes (systems, judge, probes) is
covered, and a reply from the cache, which costs nothing, never reaches it. A call is estimated
before it is sent at its input tokens (tiktoken over the request) plus its `max_tokens` (512 when
unbounded): an upper bound, so the cap holds while calls overlap; after the call its reported
usage is what counts as spent. A refused call raises `BudgetExceeded`, which stops the run like an
unreachable endpoint: finished pairs are kept, the manifest says `capped`, and running the same
command without the cap (or with a higher one) finishes the rest. Prices: reporting/prices.py.
docs/costs.md#budget; docs/methods.md#retrieval-need-and-deciders (count model calls, and what
they cost).
"""

from __future__ import annotations

import threading
from typing import Any

from freshrag.core.config import ConfigError, LLMSettings
from freshrag.core.errors import FreshragError
from freshrag.llm.tokens import count_messages

UNBOUNDED_OUTPUT = 512  # output tokens assumed for a request that sets no max_tokens
# The OpenAI Batch API bills half the list price: the one figure the dry run, the budget under
# --batch and the reports (calls recorded `batch`) all price batch calls with.
BATCH_DISCOUNT = 0.5


class BudgetExceeded(FreshragError, RuntimeError):
    """The next call would pass the cap; nothing more is sent."""


class Budget:
    """Dollars spent and reserved under a cap, shared by every worker thread."""

    def __init__(self, max_cost: float, prices: dict[str, tuple[float, float]],
                 settings: LLMSettings, roles: tuple[str, ...], discount: float = 1.0):
        self.max_cost = max_cost
        self.discount = discount
        self.prices = {}
        for role in roles:
            model = settings.role(role).model
            if model not in prices:
                raise ConfigError(f"--max-cost needs the price of the {role} role's model "
                                  f"{model!r}: add it under [prices] in freshrag.toml, e.g. "
                                  f'"{model}" = {{ input = 0.15, output = 0.60 }}')
            self.prices[role] = prices[model]
        self.spent = 0.0
        self.in_flight = 0.0
        self.calls = 0
        self.refused = 0
        self._lock = threading.Lock()

    def cost(self, role: str, input_tokens: int, output_tokens: int) -> float:
        price_in, price_out = self.prices[role]
        return self.discount * (input_tokens * price_in + output_tokens * price_out) / 1e6

    def estimate(self, role: str, request: dict[str, Any]) -> float:
        input_tokens = count_messages(request["messages"], request["model"], request.get("tools"))
        return self.cost(role, input_tokens, request.get("max_tokens") or UNBOUNDED_OUTPUT)

    def reserve(self, role: str, request: dict[str, Any]) -> tuple[str, float]:
        if role not in self.prices:  # a role the run was not expected to use: still capped
            raise BudgetExceeded(f"the {role} role has no price; --max-cost cannot cover it")
        estimate = self.estimate(role, request)
        with self._lock:
            if self.spent + self.in_flight + estimate > self.max_cost:
                self.refused += 1
                raise BudgetExceeded(
                    f"--max-cost ${self.max_cost:,.4f} reached: ${self.spent:,.4f} spent, "
                    f"${self.in_flight:,.4f} in flight, the next {role} call estimated at "
                    f"${estimate:,.4f}")
            self.in_flight += estimate
        return role, estimate

    def settle(self, ticket: tuple[str, float], value: dict[str, Any] | None) -> None:
        role, estimate = ticket
        with self._lock:
            self.in_flight -= estimate
            if value is not None:
                self.calls += 1
                self.spent += self.cost(role, value["usage"]["input"], value["usage"]["output"])

    def record(self) -> dict[str, Any]:
        """What the manifest keeps about the budget."""
        return {"max_cost": self.max_cost, "spent": round(self.spent, 6), "calls": self.calls,
                "capped": self.refused > 0}

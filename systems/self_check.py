"""Self-check decider (docs/methods.md#retrieval-need-and-deciders: self-rated confidence decides
as well as elaborate pipelines): the `decision` model answers first without retrieval, then rates
its own answer from 1 to 5 through one forced call. Below `THRESHOLD` it retrieves and the answer
role answers again with the chunks; otherwise the first answer stands.

A rating that is not one whole number in 1..5 is decision `none` (raw reply kept) and the first
answer stands, as the advanced agent does with an unusable decision. Every row records the
rating, so the report sweeps the threshold over finished calls without a new one.
"""

from __future__ import annotations

from typing import Any

from freshrag.core.types import (
    CallShape,
    Declarations,
    LLMResponse,
    Question,
    SystemAnswer,
    SystemContext,
)
from freshrag.llm.toolcall import ReplyError, tool_arguments
from freshrag.systems.prompts import SELF_CHECK_QUESTION, SELF_CHECK_TOOL
from freshrag.systems.rag import answer_then_ask, answered, decided, from_steps, search_and_answer

THRESHOLD = 4  # retrieve when the rating is below this (1..3); the report sweeps the others
TOOL_NAME = SELF_CHECK_TOOL["function"]["name"]


def parse_rating(response: LLMResponse) -> int | None:
    """The rating 1..5 of a `rate_confidence` call, None for anything else."""
    try:
        value = tool_arguments(response, TOOL_NAME).get("confidence")
    except ReplyError:
        return None
    # bool is an int in Python; `true` is not a rating
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        return None
    return int(value) if 1 <= value <= 5 else None


class SelfCheck(Declarations):
    kind = "decides"  # decides per question whether to retrieve
    uses_index = True
    # the answer role only when the rating retrieves
    call_shape = CallShape({"decision": (2, 2), "answer": (0, 1)})

    def __init__(self, context: SystemContext):
        self.context = context

    def answer(self, question: Question) -> SystemAnswer:
        first, rated = answer_then_ask(self.context.llm, question, SELF_CHECK_QUESTION,
                                       SELF_CHECK_TOOL)
        rating = parse_rating(rated)
        label = "none" if rating is None else ("retrieve" if rating < THRESHOLD else "no-retrieve")
        details: dict[str, Any] = {"decision": label,
                                   "decision_raw": rated.tool_arguments or rated.text,
                                   "confidence": rating, "threshold": THRESHOLD,
                                   "first_answer": first.text}
        # as the advanced agent: the first answer, then the rating's decision
        steps = [answered(first), decided(label, rated)]
        if label != "retrieve":
            return from_steps(steps, details)
        more, retrieved = search_and_answer(self.context, question, question.text)
        return from_steps(steps + more, {**details, **retrieved})

"""Confidence decider (docs/methods.md#retrieval-need-and-deciders: token probabilities decide as
well as elaborate pipelines): the `decision` model is asked whether the question needs documents,
answering yes or no, and the probability it gives "yes" as its first token, from the endpoint's
`logprobs`, is the probability of retrieving. At or above `THRESHOLD` it retrieves and the answer
role answers with the chunks; below, the answer role answers alone.

An endpoint that returns no log-probabilities (or none for "yes" or "no" among the first token's
alternatives) leaves the probability unavailable, with the reason: the decision is `none` and the
question is answered without retrieval, as for a boolean agent that made no usable call. Nothing
is guessed from the reply's text. Every row records the probability, so the report sweeps the
threshold over finished calls without a new one (harness/reporting/decisions.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from freshrag.core.answering import ANSWER_MAX_TOKENS
from freshrag.core.types import (
    CallShape,
    Declarations,
    LLMResponse,
    Question,
    SystemAnswer,
    SystemContext,
)
from freshrag.systems.prompts import (
    NEED_MAX_TOKENS,
    NEED_PROMPT,
    NEED_QUESTION,
    NEED_TOP_LOGPROBS,
    answer_messages,
)
from freshrag.systems.rag import answered, decided, from_steps, search_and_answer

THRESHOLD = 0.5  # retrieve when P(yes) is at least this; the report sweeps the others
YES, NO = "yes", "no"


@dataclass(frozen=True)
class Probability:
    """P(retrieve) from a reply's first token, or None with the reason it is unavailable."""

    value: float | None
    reason: str | None = None


def retrieve_probability(response: LLMResponse) -> Probability:
    """P(yes) / (P(yes) + P(no)) over the first token's alternatives ("Yes", " yes" and "YES"
    are one answer); the chosen token counts too, should the endpoint leave it out of its list."""
    if not response.logprobs:
        return Probability(None, "the endpoint returned no logprobs")
    first = response.logprobs[0]
    candidates = {entry["token"]: entry["logprob"] for entry in first.get("top") or []}
    candidates.setdefault(first["token"], first["logprob"])
    mass = {YES: 0.0, NO: 0.0}
    for token, logprob in candidates.items():
        word = token.strip().strip(".,!:").lower()
        if word in mass and logprob is not None and math.isfinite(logprob):
            mass[word] += math.exp(logprob)
    if mass[YES] + mass[NO] == 0:
        return Probability(None, f"neither yes nor no among the first token's "
                                 f"{len(candidates)} alternatives")
    return Probability(round(mass[YES] / (mass[YES] + mass[NO]), 6))


class Confidence(Declarations):
    kind = "decides"  # decides per question whether to retrieve
    uses_index = True
    call_shape = CallShape({"decision": (1, 1), "answer": (1, 1)})

    def __init__(self, context: SystemContext):
        self.context = context

    def answer(self, question: Question) -> SystemAnswer:
        llm = self.context.llm
        messages = [{"role": "system", "content": NEED_PROMPT},
                    {"role": "user", "content": NEED_QUESTION.format(question=question.text)}]
        asked = llm.chat("decision", messages, max_tokens=NEED_MAX_TOKENS,
                         top_logprobs=NEED_TOP_LOGPROBS)
        probability = retrieve_probability(asked)
        if probability.value is None:
            label = "none"
        else:
            label = "retrieve" if probability.value >= THRESHOLD else "no-retrieve"
        details: dict[str, Any] = {"decision": label, "decision_raw": asked.text,
                                   "p_retrieve": probability.value,
                                   "p_unavailable": probability.reason, "threshold": THRESHOLD}
        if label == "retrieve":
            steps, retrieved = search_and_answer(self.context, question, question.text)
            return from_steps([decided(label, asked), *steps], {**details, **retrieved})
        response = llm.chat("answer", answer_messages(question), max_tokens=ANSWER_MAX_TOKENS)
        return from_steps([decided(label, asked), answered(response)], details)

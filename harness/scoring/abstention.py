"""Abstention (docs/methods.md#claims-and-abstention, after CRAG): was the answer given, or did the
system abstain ("I don't know", a refusal)?

An empty answer, or one a pattern recognises as a refusal, is `abstained` without a call
(source `empty` or `pattern`); any other answer is decided by one forced call (source `model`).
The verdict is the metric `abstained` (1 or 0) with its source in `details`. The CRAG outcome
(correct / abstained / incorrect) needs the judge's truthfulness too, and its threshold is a
report setting, so reports derive it (harness/reporting/scorers.py), not this scorer.
"""

from __future__ import annotations

import re

from freshrag.core.types import LLM
from freshrag.scoring.base import (
    FLAG_MAX_TOKENS,
    SCORER_ROLE,
    ReplyError,
    ScoreInput,
    ScoreResult,
    arguments,
    forced,
    tool,
    unscored,
)

# Clear refusals only: a miss costs one call, a false hit would be a wrong verdict.
REFUSAL = re.compile(
    r"\b(i\s+(do\s+not|don'?t|dont)\s+know|i\s*(am|'m)\s+not\s+sure|"
    r"i\s+(cannot|can'?t|could\s+not|couldn'?t|am\s+unable\s+to)\s+(answer|find|provide|determine|say)|"
    r"i\s+have\s+no\s+(information|knowledge|data)|no\s+information\s+(is\s+)?(available|about|on)|"
    r"(the\s+)?(extracts?|context|article)\s+(does|do)\s+not\s+(contain|mention|provide))",
    re.IGNORECASE)
ABSTAINED_TOOL = tool("submit_abstention", "Say whether the answer abstains.", {
    "abstained": {"type": "boolean",
                  "description": "true if the answer declines or says it does not know; false "
                                 "if it gives an answer, right or wrong"}})
PROMPT = (
    "You are given a question and a chatbot's answer. Decide whether the chatbot abstained: it "
    "said it does not know, cannot answer, or declined, without giving an answer. An answer that "
    "gives any answer, even a wrong or hedged one, did not abstain. Call submit_abstention.")


class Abstention:
    name = "abstention"
    role = SCORER_ROLE
    needs: tuple[str, ...] = ()
    metrics = ("abstained",)

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult:
        if not item.answer.strip():
            return _verdict(True, "empty")
        if REFUSAL.search(item.answer):
            return _verdict(True, "pattern")
        response = forced(llm, self.role, PROMPT, f"Question: {item.question.text}\n\n"
                          f"Answer: {item.answer}", ABSTAINED_TOOL, FLAG_MAX_TOKENS, item.repeat)
        try:
            value = arguments(response, ABSTAINED_TOOL)["abstained"]
            if not isinstance(value, bool):
                raise ReplyError(f"abstained must be true or false, got {value!r:.80}")
        except ReplyError as err:
            return unscored(str(err))
        return _verdict(value, "model")


def _verdict(abstained: bool, source: str) -> ScoreResult:
    return ScoreResult("scored", {"abstained": float(abstained)}, {"source": source})

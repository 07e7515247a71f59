"""Context relevance (docs/methods.md#reference-free-metrics, after RAGAS): the retrieved context is
split into sentences, numbered, and one forced call names the numbers of the sentences needed
to answer the question; the score is needed / all sentences. Naming numbers instead of copying
sentences keeps the count exact and the reply short.

Not applicable where nothing was retrieved; unscored when a number is not a sentence's.
"""

from __future__ import annotations

from typing import Any

from freshrag.core.types import LLM
from freshrag.scoring.base import (
    FLAG_MAX_TOKENS,
    SCORER_ROLE,
    ReplyError,
    ScoreInput,
    ScoreResult,
    arguments,
    forced,
    not_applicable,
    numbered,
    sentences,
    tool,
    unscored,
)

NEEDED_TOOL = tool("submit_needed_sentences", "Submit the numbers of the needed sentences.", {
    "needed": {"type": "array", "items": {"type": "integer", "minimum": 1},
               "description": "numbers of the sentences needed to answer; empty if none"}})
PROMPT = (
    "You are given a question and numbered sentences retrieved to answer it. Name the numbers "
    "of the sentences that are needed to answer the question, and only those. Call "
    "submit_needed_sentences; give an empty list if no sentence helps.")
TOKENS_PER_INDEX = 4


class ContextRelevance:
    name = "context-relevance"
    role = SCORER_ROLE
    needs: tuple[str, ...] = ()
    metrics = ("context_relevance",)

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult:
        parts = sentences(item.context or "")
        if not parts:
            return not_applicable("nothing was retrieved")
        response = forced(llm, self.role, PROMPT, f"Question: {item.question.text}\n\n"
                          f"Sentences:\n{numbered(parts)}", NEEDED_TOOL,
                          FLAG_MAX_TOKENS + TOKENS_PER_INDEX * len(parts), item.repeat)
        try:
            needed = _indices(arguments(response, NEEDED_TOOL)["needed"], len(parts))
        except ReplyError as err:
            return unscored(str(err), sentences=len(parts))
        return ScoreResult("scored", {"context_relevance": len(needed) / len(parts)},
                           {"sentences": len(parts), "needed": needed})


def _indices(value: Any, n: int) -> list[int]:
    """Distinct sentence numbers in 1..n, sorted, or ReplyError."""
    if not isinstance(value, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise ReplyError(f"needed must be a list of whole numbers, got {value!r:.120}")
    outside = [i for i in value if not 1 <= i <= n]
    if outside:
        raise ReplyError(f"sentence number(s) {outside[:5]} outside 1..{n}")
    return sorted(set(value))

"""Faithfulness (docs/methods.md#reference-free-metrics, after RAGAS): the answer is split into
short statements (one forced call, the answer alone), then one forced call says for each whether
the retrieved context supports it; the score is supported / all statements.

Not applicable where nothing was retrieved (no context to be faithful to) or the answer is empty;
unscored, with the reason, when the answer yields no statement or a reply does not parse.
"""

from __future__ import annotations

from freshrag.core.types import LLM
from freshrag.scoring import answer_statements
from freshrag.scoring.base import (
    SCORER_ROLE,
    ReplyError,
    ScoreInput,
    ScoreResult,
    not_applicable,
    unscored,
)


class Faithfulness:
    name = "faithfulness"
    role = SCORER_ROLE
    needs: tuple[str, ...] = ()
    metrics = ("faithfulness",)

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult:
        if not item.context:
            return not_applicable("nothing was retrieved")
        if not item.answer.strip():
            return not_applicable("empty answer")
        found: list[str] = []
        try:
            found = answer_statements.split(llm, self.role, item.answer, item.repeat)
            if not found:
                return unscored("no statements in the answer")
            verdicts = answer_statements.supported(llm, self.role, found, item.context, item.repeat)
        except ReplyError as err:
            return unscored(str(err), statements=found)
        return ScoreResult("scored", {"faithfulness": sum(verdicts) / len(verdicts)},
                           {"statements": found, "supported": verdicts})

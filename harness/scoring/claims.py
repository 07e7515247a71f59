"""Claims against the gold article (docs/methods.md#claims-and-abstention, after RAGChecker).

- Precision: the answer's statements (split by one forced call), each checked against the gold
  article (one call): supported / all answer statements.
- Recall: the facts a complete answer must state, each checked against the answer (one call):
  found / all. Where the question carries a `reference` answer those facts are the reference's
  statements; else the gold article's key facts for this question (one call names them).

Four calls. A metric with nothing to count (an answer that states no fact has no precision; a
source with no key fact gives no recall) is left out and its reason kept in `details`; with
neither, the answer is unscored. An empty answer is not applicable.
"""

from __future__ import annotations

from typing import Any

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


class Claims:
    name = "claims"
    role = SCORER_ROLE
    needs = ("article",)
    metrics = ("claims_precision", "claims_recall")

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult:
        if not item.answer.strip():
            return not_applicable("empty answer")
        article = item.article.prompt_text()
        details: dict[str, Any] = {"recall_against": "reference" if item.question.reference
                                   else "article"}
        metrics: dict[str, float] = {}
        try:
            claimed = details["answer_claims"] = answer_statements.split(
                llm, self.role, item.answer, item.repeat)
            if claimed:
                verdicts = details["answer_supported"] = answer_statements.supported(
                    llm, self.role, claimed, article, item.repeat)
                metrics["claims_precision"] = sum(verdicts) / len(verdicts)
            else:
                details["precision"] = "no statements in the answer"
            key = details["key_claims"] = self._key_claims(llm, item, article)
            if key:
                found = details["key_found"] = answer_statements.supported(
                    llm, self.role, key, item.answer, item.repeat)
                metrics["claims_recall"] = sum(found) / len(found)
            else:
                details["recall"] = f"no key claims in the {details['recall_against']}"
        except ReplyError as err:
            return unscored(str(err), **details)
        if not metrics:
            return unscored("no statements in the answer and no key claims", **details)
        return ScoreResult("scored", metrics, details)

    def _key_claims(self, llm: LLM, item: ScoreInput, article: str) -> list[str]:
        if item.question.reference:
            return answer_statements.split(llm, self.role, item.question.reference, item.repeat)
        return answer_statements.key_claims(llm, self.role, item.question.text, article,
                                            item.repeat)

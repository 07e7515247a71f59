"""Claims against the gold article (docs/methods.md#claims-and-abstention, after RAGChecker).

- Precision: the answer's statements (split by one forced call), each checked against the gold
  article (one call): supported / all answer statements.
- Recall: the facts a complete answer must state, each checked against the answer (one call):
  found / all. Where the question carries a `reference` answer those facts are the reference's
  statements; else the gold article's key facts for this question (one call names them).

Four calls. A metric with nothing to count (an answer that states no fact has no precision; a
source with no key fact gives no recall) is left out and its reason kept in `details`; with
neither, the answer is unscored. An empty answer is not applicable.

A general query (kind `general`, docs/traffic.md#kinds) has no gold article: no precision (its
two calls are not made) and, without a `reference`, no recall either, so its answer is not
applicable, with that reason, rather than scored against nothing. A multi-article question's
statements are checked against all its gold articles, and its key facts drawn from all of them.
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

NO_SOURCE = "no gold article and no reference: a general query has nothing to check claims against"
NO_ARTICLE = "no gold article (a general query) to check the answer's statements against"


class Claims:
    name = "claims"
    role = SCORER_ROLE
    needs = ("article",)
    metrics = ("claims_precision", "claims_recall")

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult:
        if not item.answer.strip():
            return not_applicable("empty answer")
        if item.question.gold_title is None and not item.question.reference:
            return not_applicable(NO_SOURCE)
        golds = item.gold_articles()
        if not golds and item.question.gold_title is not None:
            raise ValueError(f"claims: no article given for {item.question.gold_title!r}")
        article = [gold.prompt_text() for gold in golds] or None
        details: dict[str, Any] = {"recall_against": "reference" if item.question.reference
                                   else "article"}
        metrics: dict[str, float] = {}
        try:
            if article is None:
                details["precision"] = NO_ARTICLE
            elif claimed := answer_statements.split(llm, self.role, item.answer, item.repeat):
                details["answer_claims"] = claimed
                verdicts = details["answer_supported"] = answer_statements.supported(
                    llm, self.role, claimed, article, item.repeat)
                metrics["claims_precision"] = sum(verdicts) / len(verdicts)
            else:
                details["answer_claims"] = claimed
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

    def _key_claims(self, llm: LLM, item: ScoreInput, article: list[str] | None) -> list[str]:
        if item.question.reference:
            return answer_statements.split(llm, self.role, item.question.reference, item.repeat)
        assert article is not None  # a question with neither is not applicable (score)
        return answer_statements.key_claims(llm, self.role, item.question.text, article,
                                            item.repeat)

"""A user's own scorer (docs/scoring.md#your-own-scorer): how long each answer is, and whether
it keeps to a limit. Reference-free and free: it makes no model call, so it can score any run or
import at once, beside the judge and the built-in scorers.

    freshrag score results/A_f --scorers length=docs/examples/length_scorer.py:AnswerLength
    freshrag run --dataset DIR --scorers judge,length=docs/examples/length_scorer.py:AnswerLength

A scorer is one object with `name`, `role`, `needs`, `metrics` and `score(llm, item)`; `item` is
what the score pass hands every scorer (freshrag.scoring.base.ScoreInput: the question, the answer,
the retrieved context, the gold article when `needs` asks for it, the judge's grade). It returns a
ScoreResult: `scored` with its metrics, or `not_applicable` with the reason (never a 0 for an
answer there is nothing to measure in).
"""

from freshrag.scoring.base import ScoreInput, ScoreResult, not_applicable

WORD_LIMIT = 60  # the answers of the paper's questions fit in a sentence or two


class AnswerLength:
    """The answer's length in words, and whether it keeps within a limit."""

    name = "length"
    role = "scorer"  # the role its calls would use: it makes none, so no model is ever asked
    needs = ()  # neither the gold article nor embeddings
    metrics = ("answer_words", "within_limit")

    def __init__(self, limit: int = WORD_LIMIT):
        self.limit = limit

    def score(self, llm, item: ScoreInput) -> ScoreResult:
        words = len(item.answer.split())
        if not words:
            return not_applicable("empty answer")
        return ScoreResult("scored", metrics={"answer_words": float(words),
                                              "within_limit": float(words <= self.limit)},
                           details={"limit": self.limit})

"""Answer relevance (docs/methods.md#reference-free-metrics, after RAGAS): one forced call writes
`QUESTIONS` questions that the answer would answer, from the answer alone; the score is the mean
cosine similarity of their embeddings with the asked question's, through the `embeddings` role
(the same model as the retrieval index). It penalises incomplete and padded answers, not wrong
ones, and needs no retrieved context.

Not applicable to an empty answer; unscored when the reply holds no question or does not parse.
"""

from __future__ import annotations

import math

from freshrag.core.types import LLM
from freshrag.scoring.base import (
    LIST_MAX_TOKENS,
    SCORER_ROLE,
    Embed,
    ReplyError,
    ScoreInput,
    ScoreResult,
    arguments,
    forced,
    not_applicable,
    text_list,
    tool,
    unscored,
)

QUESTIONS = 3  # RAGAS's n; more questions cost output tokens and change the mean little
QUESTIONS_TOOL = tool("submit_questions", "Submit the questions.", {
    "questions": {"type": "array", "items": {"type": "string"},
                  "description": f"{QUESTIONS} questions that the answer answers"}})
PROMPT = (
    f"You are given an answer. Write {QUESTIONS} different questions that this answer would "
    f"answer, each as a user would ask it. Call submit_questions.")


class AnswerRelevance:
    name = "answer-relevance"
    role = SCORER_ROLE
    needs = ("embeddings",)
    metrics = ("answer_relevance",)

    def __init__(self, embed: Embed | None = None):
        self.embed = embed  # set by the caller that wires the embeddings role (harness/cli/common.py)

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult:
        if not item.answer.strip():
            return not_applicable("empty answer")
        if self.embed is None:
            raise ValueError("answer-relevance needs an embedding function")
        response = forced(llm, self.role, PROMPT, f"Answer: {item.answer}", QUESTIONS_TOOL,
                          LIST_MAX_TOKENS, item.repeat)
        try:
            questions = text_list(arguments(response, QUESTIONS_TOOL)["questions"], "questions")
        except ReplyError as err:
            return unscored(str(err))
        if not questions:
            return unscored("no question in the reply")
        asked, *generated = self.embed([item.question.text, *questions])
        similarities = [cosine(asked, vector) for vector in generated]
        return ScoreResult("scored",
                           {"answer_relevance": sum(similarities) / len(similarities)},
                           {"questions": questions,
                            "similarities": [round(s, 4) for s in similarities]})


def cosine(a: list[float], b: list[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b)) / norm if norm else 0.0

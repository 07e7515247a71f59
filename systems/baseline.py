"""Baseline (section IV): the model answers from its own knowledge, with no retrieval."""

from __future__ import annotations

from freshrag.core.answering import ANSWER_MAX_TOKENS
from freshrag.core.types import CallShape, Declarations, Question, SystemAnswer, SystemContext
from freshrag.systems.prompts import answer_messages
from freshrag.systems.rag import answered, from_steps


class Baseline(Declarations):
    call_shape = CallShape({"answer": (1, 1)})

    def __init__(self, context: SystemContext):
        self.llm = context.llm

    def answer(self, question: Question) -> SystemAnswer:
        response = self.llm.chat("answer", answer_messages(question), max_tokens=ANSWER_MAX_TOKENS)
        return from_steps([answered(response)])

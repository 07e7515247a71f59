"""Naive RAG (section IV): every question retrieves the top-k chunks and is answered with them."""

from __future__ import annotations

from freshrag.core.types import CallShape, Declarations, Question, SystemAnswer, SystemContext
from freshrag.systems.rag import from_steps, search_and_answer


class Naive(Declarations):
    uses_index = True
    call_shape = CallShape({"answer": (1, 1)})

    def __init__(self, context: SystemContext):
        self.context = context

    def answer(self, question: Question) -> SystemAnswer:
        steps, details = search_and_answer(self.context, question, question.text)
        return from_steps(steps, {"decision": None, **details})

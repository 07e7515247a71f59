"""Naive RAG (section IV): every question retrieves the top-k chunks and is answered with them."""

from __future__ import annotations

from freshrag.core.types import CallShape, Declarations, Question, SystemAnswer, SystemContext
from freshrag.systems.rag import answer_with_chunks, retrieve


class Naive(Declarations):
    uses_index = True
    call_shape = CallShape({"answer": (1, 1)})

    def __init__(self, context: SystemContext):
        self.context = context

    def answer(self, question: Question) -> SystemAnswer:
        chunks = retrieve(self.context, question.text)
        response, details = answer_with_chunks(self.context, question, chunks)
        return SystemAnswer(response.text or "", [response], retrievals=1,
                            details={"decision": None, **details})

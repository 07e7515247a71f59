"""HyDE (beyond the paper): the model first writes a hypothetical answer passage; the index is
searched with the question and that passage, and the question is answered with the chunks found.

A passage in the style of the corpus often lands nearer the right chunks than a short question.
"""

from __future__ import annotations

from freshrag.core.types import CallShape, Declarations, Question, Step, SystemAnswer, SystemContext
from freshrag.systems.prompts import HYDE_MAX_TOKENS, HYDE_PROMPT, answer_messages
from freshrag.systems.rag import from_steps, search_and_answer


class Hyde(Declarations):
    uses_index = True
    call_shape = CallShape({"answer": (2, 2)})

    def __init__(self, context: SystemContext):
        self.context = context

    def answer(self, question: Question) -> SystemAnswer:
        passage = self.context.llm.chat("answer", answer_messages(question, HYDE_PROMPT),
                                        max_tokens=HYDE_MAX_TOKENS)
        # The question first: an embedder that truncates long input still sees it.
        query = f"{question.text}\n{passage.text or ''}".strip()
        steps, retrieved = search_and_answer(self.context, question, query)
        return from_steps([Step("reason", (passage,), text=passage.text), *steps],
                          {"decision": None, "hypothetical": passage.text, **retrieved})

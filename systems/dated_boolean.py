"""Dated boolean agent (beyond the paper): the boolean agent, but its decision prompt states
today's date and the model's knowledge cutoff and asks whether the question concerns anything
after the cutoff: retrieval where the model's knowledge is known to be missing."""

from __future__ import annotations

from datetime import date
from typing import Any

from freshrag.core.types import Question, SystemContext
from freshrag.systems.boolean import Boolean
from freshrag.systems.prompts import DATED_PROMPT, answer_messages


class DatedBoolean(Boolean):
    uses_date = True  # states --today and --knowledge-cutoff: part of a run's identity

    def __init__(self, context: SystemContext):
        super().__init__(context)
        if not context.knowledge_cutoff:
            raise ValueError("dated-boolean needs the answering model's knowledge cutoff")
        self.prompt = DATED_PROMPT.format(today=context.today or date.today().isoformat(),
                                          cutoff=context.knowledge_cutoff)

    def decision_messages(self, question: Question) -> list[dict[str, Any]]:
        return answer_messages(question, self.prompt)

"""Advanced boolean agent RAG (section IV): answer first without retrieval, then a forced
function call asks whether the question could have been answered better with more information;
if so, retrieve and answer again with the chunks, else the first answer stands.

The first answer and the decision come from the `decision` role (a cheaper model can take them,
as the paper suggests); the answer with chunks from the `answer` role. Every call is counted.
"""

from __future__ import annotations

from freshrag.core.types import CallShape, Declarations, Question, SystemAnswer, SystemContext
from freshrag.systems.prompts import MORE_INFORMATION_QUESTION, MORE_INFORMATION_TOOL
from freshrag.systems.rag import (
    answer_then_ask,
    answered,
    decided,
    from_steps,
    parse_decision,
    search_and_answer,
)

TOOL_NAME = MORE_INFORMATION_TOOL["function"]["name"]


class Advanced(Declarations):
    kind = "decides"  # decides per question whether to retrieve
    uses_index = True
    # the answer role only when the decision retrieves
    call_shape = CallShape({"decision": (2, 2), "answer": (0, 1)})

    def __init__(self, context: SystemContext):
        self.context = context

    def answer(self, question: Question) -> SystemAnswer:
        first, asked = answer_then_ask(self.context.llm, question, MORE_INFORMATION_QUESTION,
                                       MORE_INFORMATION_TOOL)
        decision = parse_decision(asked, TOOL_NAME)
        details = {"decision": decision.label, "decision_raw": decision.raw,
                   "first_answer": first.text}
        # it answers first, then decides: without retrieval the first answer stands
        steps = [answered(first), decided(decision.label, asked)]
        if not decision.retrieve:
            return from_steps(steps, details)
        more, retrieved = search_and_answer(self.context, question, question.text)
        return from_steps(steps + more, {**details, **retrieved})

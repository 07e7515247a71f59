"""Boolean agent RAG (section IV): the model decides, through a function with one boolean
`retrieve` and tool choice "auto", whether to fetch chunks before answering.

The decision call goes to the `decision` role, so a cheaper model can decide (the paper's
suggestion). A reply without a usable call is decision `none`: if it holds text, that text is
the answer, as with any model that answers instead of calling; otherwise the answer role answers
without retrieval.
"""

from __future__ import annotations

from typing import Any

from freshrag.core.answering import ANSWER_MAX_TOKENS
from freshrag.core.types import CallShape, Declarations, Question, Step, SystemAnswer, SystemContext
from freshrag.systems.prompts import BOOLEAN_PROMPT, RETRIEVE_TOOL, answer_messages
from freshrag.systems.rag import answered, decided, from_steps, parse_decision, search_and_answer


class Boolean(Declarations):
    kind = "decides"  # decides per question whether to retrieve
    uses_index = True
    # answered by the decision call, or after it
    call_shape = CallShape({"decision": (1, 1), "answer": (0, 1)})

    def __init__(self, context: SystemContext):
        self.context = context

    def decision_messages(self, question: Question) -> list[dict[str, Any]]:
        return answer_messages(question, BOOLEAN_PROMPT)

    def answer(self, question: Question) -> SystemAnswer:
        llm = self.context.llm
        first = llm.chat("decision", self.decision_messages(question), tools=[RETRIEVE_TOOL],
                         tool_choice="auto", max_tokens=ANSWER_MAX_TOKENS)
        decision = parse_decision(first, RETRIEVE_TOOL["function"]["name"])
        details: dict[str, Any] = {"decision": decision.label, "decision_raw": decision.raw}
        decide = decided(decision.label, first)
        if decision.retrieve:
            steps, retrieved = search_and_answer(self.context, question, question.text)
            return from_steps([decide, *steps], {**details, **retrieved})
        if first.tool_name is None and (first.text or "").strip():
            # the decision's reply is the answer: an answer step of no call of its own
            return from_steps([decide, Step("answer", text=first.text)],
                              {**details, "answered_by": "decision"})
        response = llm.chat("answer", answer_messages(question), max_tokens=ANSWER_MAX_TOKENS)
        return from_steps([decide, answered(response)], details)

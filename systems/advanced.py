"""Advanced boolean agent RAG (section IV): answer first without retrieval, then a forced
function call asks whether the question could have been answered better with more information;
if so, retrieve and answer again with the chunks, else the first answer stands.

The first answer and the decision come from the `decision` role (a cheaper model can take them,
as the paper suggests); the answer with chunks from the `answer` role. Every call is counted.
"""

from __future__ import annotations

from harness.types import Question, SystemAnswer, SystemContext
from systems.prompts import (ANSWER_MAX_TOKENS, DECISION_MAX_TOKENS, MORE_INFORMATION_QUESTION,
                             MORE_INFORMATION_TOOL, answer_messages)
from systems.rag import answer_with_chunks, parse_decision

TOOL_NAME = MORE_INFORMATION_TOOL["function"]["name"]


class Advanced:
    uses_index = True

    def __init__(self, context: SystemContext):
        self.context = context

    def answer(self, question: Question) -> SystemAnswer:
        llm = self.context.llm
        messages = answer_messages(question)
        first = llm.chat("decision", messages, max_tokens=ANSWER_MAX_TOKENS)
        follow_up = messages + [{"role": "assistant", "content": first.text or ""},
                                {"role": "user", "content": MORE_INFORMATION_QUESTION}]
        asked = llm.chat("decision", follow_up, tools=[MORE_INFORMATION_TOOL],
                         tool_choice=TOOL_NAME, max_tokens=DECISION_MAX_TOKENS)
        decision = parse_decision(asked, TOOL_NAME)
        details = {"decision": decision.label, "decision_raw": decision.raw,
                   "first_answer": first.text}
        if not decision.retrieve:
            return SystemAnswer(first.text or "", [first, asked], details=details)
        chunks = self.context.retriever.retrieve(question.text)
        response, retrieved = answer_with_chunks(self.context, question, chunks)
        return SystemAnswer(response.text or "", [first, asked, response], retrievals=1,
                            details={**details, **retrieved})

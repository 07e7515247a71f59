"""The Self-Ask agent, which answers sub-questions first (docs/methods.md#agents): one forced
call of the `decision` role splits the question into sub-questions (`sub_questions`, at most as
many as the bound leaves room for); each is searched for and answered in one short sentence; the
closing answer composes those answers, with every chunk they saw. A question that needs no
sub-questions (an empty list) is searched for and answered as naive answers it.

Bounded as every agent (systems/agent.py): the split and the closing answer take two calls, the
sub-questions the rest. A split reply it cannot use (no `sub_questions` call, arguments that are
no JSON object, a list holding what is not a question) is taken as "none needed", recorded with
`sub_questions` null; sub-questions beyond the room are dropped, `stopped` "max_steps".
"""

from __future__ import annotations

from typing import Any

from freshrag.core.answering import ANSWER_MAX_TOKENS
from freshrag.core.types import (
    CallShape,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    SystemContext,
)
from freshrag.llm.toolcall import ReplyError, room_for, tool_arguments
from freshrag.systems.agent import Agent, Bounds, closing_answer, finished, gathered, with_note
from freshrag.systems.prompts import (
    DECOMPOSE_PROMPT,
    QUERY_CHARS,
    SUB_ANSWERS,
    SUB_QUESTION,
    SUB_QUESTIONS_TOOL,
    answer_messages,
)
from freshrag.systems.rag import (
    answer_with_chunks,
    answered,
    chunk_records,
    retrieve,
    search_and_answer,
)

TOOL = SUB_QUESTIONS_TOOL["function"]["name"]
CALLS_BESIDE = 2  # the split and the closing answer


def sub_questions_tool(most: int) -> dict[str, Any]:
    """The split's function, its list bounded by the `most` sub-questions the bound leaves."""
    function = SUB_QUESTIONS_TOOL["function"]
    listed = function["parameters"]["properties"]["sub_questions"]
    parameters = {**function["parameters"], "properties": {"sub_questions": {**listed,
                                                                             "maxItems": most}}}
    return {**SUB_QUESTIONS_TOOL, "function": {**function, "parameters": parameters}}


def read_sub_questions(response: LLMResponse) -> list[str] | None:
    """The sub-questions asked ([]: none needed), or None for a reply that is no such list."""
    try:
        asked = tool_arguments(response, TOOL).get("sub_questions")
    except ReplyError:
        return None
    if not isinstance(asked, list) or not all(isinstance(q, str) and q.strip() for q in asked):
        return None
    return [q.strip() for q in asked]


def shape(max_steps: int) -> CallShape:
    """The split and an answer at the fewest; a sub-answer for every call between at the most.
    With no room for a sub-question, naive's one answer."""
    if max_steps <= CALLS_BESIDE:
        return CallShape({"answer": (1, 1)})
    return CallShape({"decision": (1, 1), "answer": (1, max_steps - 1)})


class Decompose(Agent, shape=shape):
    def answer(self, question: Question) -> SystemAnswer:
        bounds = Bounds(self.context)
        context = bounds.bounded(self.context)
        most = bounds.max_steps - CALLS_BESIDE
        if most < 1:  # no room to split: the closing answer alone
            steps, retrieved = search_and_answer(context, question, question.text)
            return finished(steps, {"decision": None, "sub_questions": None, **retrieved},
                            "max_steps")
        split = context.llm.chat("decision", answer_messages(question, DECOMPOSE_PROMPT),
                                 tools=[sub_questions_tool(most)], tool_choice=TOOL,
                                 max_tokens=room_for(*[QUERY_CHARS] * most))
        asked = read_sub_questions(split)
        said = "\n".join(asked) if asked is not None else split.tool_arguments or split.text
        steps = [Step("reason", (split,), text=said)]
        details: dict[str, Any] = {"decision": None, "sub_questions": asked}
        if not asked:  # none needed (or no usable split): answered as naive answers
            more, retrieved = search_and_answer(context, question, question.text)
            return finished([*steps, *more], {**details, **retrieved}, None)
        stopped = "max_steps" if len(asked) > most else None
        notes: list[str] = []
        found: list[RetrievedChunk] = []
        for number, sub in enumerate(asked[:most], 1):
            if (why := bounds.closing()) is not None:
                stopped = why
                break
            chunks = retrieve(context, sub)
            asking = SUB_QUESTION.format(number=number, question=question.text, sub=sub)
            response, _ = answer_with_chunks(context, Question(question.id, asking, None), chunks)
            steps += [Step("search", query=sub, retrieved=tuple(chunks)),
                      Step("reason", (response,), text=response.text)]
            notes.append(f"{number}. {sub}\n{response.text or ''}")
            found = gathered(found, chunks)
        step, composed = self.composed(context, question, found, notes)
        return finished([*steps, step], {**details, **composed}, stopped)

    def composed(self, context: SystemContext, question: Question, found: list[RetrievedChunk],
                 notes: list[str]) -> tuple[Step, dict[str, Any]]:
        """The closing answer from the sub-answers and the chunks they saw (with none answered,
        a budget spent at once: the answer without retrieval)."""
        if not notes:
            return closing_answer(context, question, [])
        messages, cut = with_note(question, found, context.context_tokens,
                                  SUB_ANSWERS.format(notes="\n\n".join(notes)))
        response = context.llm.chat("answer", messages, max_tokens=ANSWER_MAX_TOKENS)
        return answered(response), {"retrieved": chunk_records(found), "context_cut": cut}

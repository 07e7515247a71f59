"""The adaptive router (docs/methods.md#agents, after Adaptive-RAG): one forced call of the
`decision` role routes the question (`route_question`: `retrieve`, `multi_step`) to an answer
without retrieval, naive's one search and answer, or the ReAct agent (systems/react.py), which
then has the calls the decision left. `multi_step` true is the agent whatever `retrieve` says.

The decide step's text and `details.decision` are the route: `no-retrieve` (a decider's word for
an answer without retrieval), `one-retrieval`,
`multi-step`, or `none` for a reply that is no such call with two booleans, answered without
retrieval as rag.py's `none` is. The report reads `decision` only to count `none`
(`no_decision`); that the router decides is its declared `kind`, and whether it retrieved comes
from `retrievals`.
"""

from __future__ import annotations

from freshrag.core.types import (
    CallShape,
    LLMResponse,
    Question,
    SystemAnswer,
)
from freshrag.llm.toolcall import ReplyError, tool_arguments
from freshrag.systems.agent import Agent, Bounds, closing_answer, finished
from freshrag.systems.prompts import DECISION_MAX_TOKENS, ROUTE_TOOL, ROUTER_PROMPT, answer_messages
from freshrag.systems.rag import decided, search_and_answer
from freshrag.systems.react import React

TOOL = ROUTE_TOOL["function"]["name"]


def parse_route(response: LLMResponse) -> str:
    """The route of a decision reply, "none" for one that is not two booleans."""
    try:
        arguments = tool_arguments(response, TOOL)
    except ReplyError:
        return "none"
    retrieve, multi_step = arguments.get("retrieve"), arguments.get("multi_step")
    if not isinstance(retrieve, bool) or not isinstance(multi_step, bool):
        return "none"
    if multi_step:
        return "multi-step"
    return "one-retrieval" if retrieve else "no-retrieve"


def shape(max_steps: int) -> CallShape:
    """The decision and one answer at the fewest; the decision and the agent's most at the
    most. With no room for both, the closing answer alone."""
    if max_steps < 2:
        return CallShape({"answer": (1, 1)})
    return CallShape({"decision": (1, 1), "answer": (1, max_steps - 1)})


class Router(Agent, shape=shape):
    kind = "decides"  # routes each question; its agent is one of the routes, not what it is

    def answer(self, question: Question) -> SystemAnswer:
        bounds = Bounds(self.context)
        context = bounds.bounded(self.context)
        if bounds.max_steps < 2:  # no room to decide and answer: answered without retrieval
            step, details = closing_answer(context, question, [])
            return finished([step], {"decision": None, **details}, "max_steps")
        first = context.llm.chat("decision", answer_messages(question, ROUTER_PROMPT),
                                 tools=[ROUTE_TOOL], tool_choice=TOOL,
                                 max_tokens=DECISION_MAX_TOKENS)
        route = parse_route(first)
        decide = decided(route, first)
        recorded = {"decision": route, "decision_raw": first.tool_arguments or first.text}
        if route == "multi-step":
            steps, details, stopped = React(self.context).loop(question, bounds)
            return finished([decide, *steps], {**details, **recorded}, stopped)
        if route == "one-retrieval":
            steps, details = search_and_answer(context, question, question.text)
            return finished([decide, *steps], {**recorded, **details}, None)
        step, details = closing_answer(context, question, [])
        return finished([decide, step], {**recorded, **details}, None)

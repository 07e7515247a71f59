"""The IRCoT agent, retrieval interleaved with reasoning (docs/methods.md#agents): a search with
the question; then, in turn, one forced call writes the next sentence of reasoning with what was
found and says whether to search again (`reason_step`: `thought`, `search_again`), and the index
is searched with that sentence; until the reasoning says to stop or the bound comes; then the
answer from every chunk gathered, each once, best first.

Bounded as every agent (systems/agent.py). A reasoning reply it cannot use (no `reason_step` call,
arguments that are no JSON object, no thought or no boolean `search_again`) ends the search: it is
recorded as a `reason` step holding the raw reply, and the answer comes from what was gathered.
"""

from __future__ import annotations

from typing import Any

from freshrag.core.types import (
    CallShape,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
)
from freshrag.llm.toolcall import ReplyError, room_for, tool_arguments
from freshrag.systems.agent import Agent, Bounds, closing_answer, finished, gathered, with_note
from freshrag.systems.prompts import (
    NO_THOUGHTS,
    REASON_QUESTION,
    REASON_TOOL,
    THOUGHT_CHARS,
)
from freshrag.systems.rag import retrieve

TOOL = REASON_TOOL["function"]["name"]


def read_reasoning(response: LLMResponse) -> tuple[str, bool] | None:
    """The thought and whether to search with it, or None for a reply that is neither."""
    try:
        arguments = tool_arguments(response, TOOL)
    except ReplyError:
        return None
    thought, again = arguments.get("thought"), arguments.get("search_again")
    if not isinstance(thought, str) or not thought.strip() or not isinstance(again, bool):
        return None
    return thought.strip(), again


def shape(max_steps: int) -> CallShape:
    """A sentence and the answer at the fewest; sentences until the closing answer at the most."""
    return CallShape({"answer": (min(2, max_steps), max_steps)})


class Iterative(Agent, shape=shape):
    def answer(self, question: Question) -> SystemAnswer:
        bounds = Bounds(self.context)
        context = bounds.bounded(self.context)
        found = retrieve(context, question.text)
        steps = [Step("search", query=question.text, retrieved=tuple(found))]
        thoughts: list[str] = []
        while (stopped := bounds.closing()) is None:
            response = context.llm.chat("answer", self.reason_messages(question, found, thoughts),
                                        tools=[REASON_TOOL], tool_choice=TOOL,
                                        max_tokens=room_for(THOUGHT_CHARS))
            reasoning = read_reasoning(response)
            if reasoning is None:
                steps.append(Step("reason", (response,),
                                  text=response.tool_arguments or response.text))
                break
            thought, again = reasoning
            steps.append(Step("reason", (response,), text=thought))
            thoughts.append(thought)
            if not again:
                break
            chunks = retrieve(context, thought)
            steps.append(Step("search", query=thought, retrieved=tuple(chunks)))
            found = gathered(found, chunks)
        step, details = closing_answer(context, question, found)
        return finished([*steps, step], {"decision": None, "thoughts": thoughts, **details},
                        stopped)

    def reason_messages(self, question: Question, found: list[RetrievedChunk],
                        thoughts: list[str]) -> list[dict[str, Any]]:
        so_far = "\n".join(f"{i}. {thought}" for i, thought in enumerate(thoughts, 1))
        messages, _ = with_note(question, found, self.context.context_tokens,
                                REASON_QUESTION.format(thoughts=so_far or NO_THOUGHTS),
                                [REASON_TOOL])
        return messages

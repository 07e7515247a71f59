"""The ReAct agent (docs/methods.md#agents): the model acts, and reads what its action returns,
until it answers. Each call offers two functions with tool choice "auto": `search(query)` over
the run's index, whose extracts come back as the call's observation, and `answer(text)`; a reply
in text is the answer too. So the model may answer without searching, search several times, or
search again with other words.

Bounded as every agent (systems/agent.py): its last possible call is a closing answer with every
chunk it found and no tools. A reply it cannot use (a call of an unknown function, arguments that
are no JSON object or lack their query or text, an empty reply) does not end the loop: the turn
counts towards the bound, is recorded as a `reason` step holding the raw reply, and the model is
told why in the next request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from freshrag.core.answering import ANSWER_MAX_TOKENS
from freshrag.core.types import (
    CallShape,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
)
from freshrag.llm.toolcall import ReplyError, tool_arguments
from freshrag.systems.agent import Agent, Bounds, closing_answer, finished, gathered, observation
from freshrag.systems.prompts import REACT_PROMPT, REACT_TOOLS, UNUSABLE_REPLY, answer_messages
from freshrag.systems.rag import chunk_records, retrieve

FIELDS = {"search": "query", "answer": "text"}  # each function's one argument


@dataclass(frozen=True)
class Action:
    """What a reply does: search for `query`, answer with `text`, or neither, and `why`."""

    query: str | None = None
    text: str | None = None
    why: str | None = None


def read_action(response: LLMResponse) -> Action:
    if response.tool_name is None:
        text = response.text or ""
        return Action(text=text) if text.strip() else Action(why="an empty reply")
    field = FIELDS.get(response.tool_name)
    if field is None:
        return Action(why=f"no function named {response.tool_name!r:.60}")
    try:
        value = tool_arguments(response, response.tool_name).get(field)
    except ReplyError as err:
        return Action(why=str(err))
    if not isinstance(value, str) or not value.strip():
        return Action(why=f"{response.tool_name} without its {field}")
    return Action(query=value.strip()) if field == "query" else Action(text=value)


def shape(max_steps: int) -> CallShape:
    """An answer at once, or `max_steps` calls: searches, then the closing answer."""
    return CallShape({"answer": (1, max_steps)})


class React(Agent, shape=shape):
    def answer(self, question: Question) -> SystemAnswer:
        steps, details, stopped = self.loop(question, Bounds(self.context))
        return finished(steps, {"decision": None, **details}, stopped)

    def loop(self, question: Question,
             bounds: Bounds) -> tuple[list[Step], dict[str, Any], str | None]:
        """The loop within `bounds` (a router's, which made its decision first): its steps, the
        details to record and why it stopped (None: the model answered)."""
        context = bounds.bounded(self.context)
        messages = answer_messages(question, REACT_PROMPT)
        steps: list[Step] = []
        found: list[RetrievedChunk] = []  # every search's chunks
        shown: list[RetrievedChunk] = []  # the chunks its observations showed
        unusable = 0
        while (stopped := bounds.closing()) is None:
            response = context.llm.chat("answer", messages, tools=REACT_TOOLS, tool_choice="auto",
                                        max_tokens=ANSWER_MAX_TOKENS)
            action = read_action(response)
            if action.text is not None:
                steps.append(Step("answer", (response,), text=action.text))
                saw = {"retrieved": chunk_records(shown)} if shown else {}
                return steps, {**saw, "unusable": unusable}, None
            if action.query is None:
                unusable += 1
                steps.append(Step("reason", (response,),
                                  text=response.tool_arguments or response.text))
                messages = messages + [{"role": "user",
                                        "content": UNUSABLE_REPLY.format(why=action.why)}]
                continue
            chunks = retrieve(context, action.query)
            steps.append(Step("search", (response,), query=action.query, retrieved=tuple(chunks)))
            call = searched(response, f"call_{len(steps)}")
            text, seen = observation(chunks, messages + [call], REACT_TOOLS,
                                     self.context.context_tokens, bounds.left)
            observed = {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"],
                        "content": text}
            messages = messages + [call, observed]
            found, shown = gathered(found, chunks), gathered(shown, seen)
        step, details = closing_answer(context, question, found)
        return [*steps, step], {**details, "unusable": unusable}, stopped


def searched(response: LLMResponse, call_id: str) -> dict[str, Any]:
    """The assistant's search call as the conversation holds it, before its observation."""
    return {"role": "assistant", "content": response.text,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": "search",
                                         "arguments": response.tool_arguments}}]}

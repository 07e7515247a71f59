"""What the multi-step agents share (docs/methods.md#agents): the bounds of one answer, the
closing answer that ends it, and fitting what the agent gathered into the model's window.

The bounds: `context.max_steps` is the most model calls an agent makes for one answer (a
router's decision included), the last of them always a closing answer with no tools, so an agent
that never chooses to answer stops after `max_steps` calls, `stopped` "max_steps". The tokens
spent (input and output of the agent's calls) are checked against `context.token_budget` before
each call after the first: once they reach it, the next call is the closing answer, `stopped`
"budget". So an agent spends at most one call past its budget: the closing one.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable

from freshrag.core.answering import ANSWER_MAX_TOKENS
from freshrag.core.steps import best_chunks
from freshrag.core.types import (
    DEFAULT_MAX_STEPS,
    CallShape,
    Declarations,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    SystemContext,
    SystemKind,
)
from freshrag.llm.tokens import count_messages
from freshrag.systems.prompts import NO_EXTRACTS, answer_messages
from freshrag.systems.rag import (
    SAFETY,
    TOKEN_MODEL,
    _truncate,
    answer_with_chunks,
    answered,
    fitted_messages,
    from_steps,
)

TURN_TOKENS = 128  # kept free for each later turn's call and framing: a query is one short line


class Agent(Declarations):
    """What every agent declares: it retrieves, it is bounded by the run's max_steps and token
    budget (so they are part of the run's identity), and its calls' shape follows max_steps.
    Each agent names the function that gives that shape where it subclasses this:
    `class React(Agent, shape=shape)`."""

    kind: SystemKind = "agent"
    uses_index = True
    uses_steps = True
    shape: Callable[[int], CallShape]

    def __init_subclass__(cls, shape: Callable[[int], CallShape], **kwargs: Any):
        super().__init_subclass__(**kwargs)
        cls.shape = staticmethod(shape)
        cls.call_shape = shape(DEFAULT_MAX_STEPS)  # the class's, at the default bound

    def __init__(self, context: SystemContext):
        self.context = context
        self.call_shape = self.shape(context.max_steps)


class Bounds:
    """The LLM as an agent sees it for one answer: every call is counted against `max_steps`
    and its tokens against `token_budget`. A call past `max_steps` is an agent's own mistake and
    raises, so no loop can run on."""

    def __init__(self, context: SystemContext):
        if context.max_steps < 1:
            raise ValueError(f"an agent needs max_steps of 1 or more, got {context.max_steps}")
        self.llm = context.llm
        self.max_steps = context.max_steps
        self.token_budget = context.token_budget
        self.calls: list[LLMResponse] = []

    def chat(self, role: str, messages: list[dict[str, Any]], **options: Any) -> LLMResponse:
        if len(self.calls) >= self.max_steps:
            raise RuntimeError(f"an agent made more than its {self.max_steps} calls")
        response = self.llm.chat(role, messages, **options)  # options as in the LLM Protocol
        self.calls.append(response)
        return response

    @property
    def spent(self) -> int:
        return sum(call.usage.input + call.usage.output for call in self.calls)

    @property
    def left(self) -> int:
        """The calls still allowed, the closing one included."""
        return self.max_steps - len(self.calls)

    def closing(self) -> str | None:
        """Why the next call must be the closing answer, or None while the agent may go on:
        "budget" once a call was made and the tokens spent reach the budget (also when only the
        closing call is left), "max_steps" when only the closing call is left."""
        if self.calls and self.token_budget is not None and self.spent >= self.token_budget:
            return "budget"
        return "max_steps" if self.left <= 1 else None

    def bounded(self, context: SystemContext) -> SystemContext:
        """`context` with this as its LLM, so that rag.py's helpers call through the bounds."""
        return replace(context, llm=self)


def finished(steps: list[Step], details: dict[str, Any], stopped: str | None) -> SystemAnswer:
    """The answer of an agent's steps, with why it stopped (None: it answered when it chose)."""
    answer = from_steps(steps, details)
    answer.stopped = stopped
    return answer


def closing_answer(context: SystemContext,
                   question: Question, chunks: list[RetrievedChunk]) -> tuple[Step, dict[str, Any]]:
    """The closing call, with no tools: the answer role's reply with every chunk gathered (as
    naive's answer: rag.py fits them), or without extracts when nothing was gathered (and no
    `retrieved` to record, as a system that did not retrieve records none)."""
    if not chunks:
        response = context.llm.chat("answer", answer_messages(question),
                                    max_tokens=ANSWER_MAX_TOKENS)
        return answered(response), {}
    response, details = answer_with_chunks(context, question, chunks)
    return answered(response), details


def gathered(found: list[RetrievedChunk], new: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """The chunks of several searches, each once (by article and place, at its best score),
    best first."""
    return best_chunks([*found, *new])


def answer_room(context_tokens: int) -> int:
    """The tokens a request may fill, with room for the answer (as rag.py's fitted_messages)."""
    return int(context_tokens * SAFETY) - ANSWER_MAX_TOKENS


def with_note(question: Question, chunks: list[RetrievedChunk], context_tokens: int, note: str,
              tools: list[dict[str, Any]] | None = None
              ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """rag.py's fitted messages of `chunks` and the question, then `note` as a user message:
    the note (cut to half the window at most) is counted first and the extracts fill the rest,
    so that the whole request fits. Returns the messages and what was cut (None: nothing)."""
    note = _truncate(note, answer_room(context_tokens) // 2)
    extra = [{"role": "user", "content": note}]
    reserved = count_messages(extra, TOKEN_MODEL, tools)
    messages, cut = fitted_messages(question, chunks,
                                    context_tokens - math.ceil(reserved / SAFETY))
    return messages + extra, cut


def observation(chunks: list[RetrievedChunk], messages: list[dict[str, Any]],
                tools: list[dict[str, Any]], context_tokens: int,
                searches_left: int) -> tuple[str, list[RetrievedChunk]]:
    """A search's extracts as a tool message's text, in rank order and cut as rag.py cuts
    (`_truncate`) to this search's share of the room the conversation `messages` leaves: the
    room is shared among the `searches_left` searches still possible (this one included), each
    later one keeping `TURN_TOKENS` for its own call. Returns the text and the chunks it shows."""
    if not chunks:
        return NO_EXTRACTS, []
    room = answer_room(context_tokens) - count_messages(messages, TOKEN_MODEL, tools)
    share = (room - TURN_TOKENS * searches_left) // max(searches_left, 1)
    text = _truncate("\n\n".join(chunk.text for chunk in chunks), share)
    shown, start = [], 0
    for chunk in chunks:  # a chunk is shown if any of it is
        if start >= len(text):
            break
        shown.append(chunk)
        start += len(chunk.text) + 2
    return text or NO_EXTRACTS, shown

"""What the strategies share: answering with retrieved chunks, fitting them into the model's
context window, reading a boolean retrieval decision strictly, and the steps of an answer's
trajectory (docs/run-format.md#steps), from which its calls, retrievals and text follow
(`from_steps`).

A decision the model did not make usably (no tool call, other tool, arguments that are not
`{"retrieve": true|false}`) is `none`: the strategy answers without retrieval and the report
counts it, instead of guessing or crashing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from freshrag.core.answering import ANSWER_MAX_TOKENS, RAG_PROMPT
from freshrag.core.steps import chunk_records as chunk_records  # the systems' name for it
from freshrag.core.types import (
    LLM,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    SystemContext,
)
from freshrag.llm.tokens import count_text, encoding_for
from freshrag.llm.toolcall import ReplyError, tool_arguments
from freshrag.systems.prompts import DECISION_MAX_TOKENS, answer_messages

TOKEN_MODEL = "gpt-4"  # an estimate for any model: cl100k_base counts, with SAFETY to spare
SAFETY = 0.9  # share of the window we fill: other tokenizers count differently


@dataclass(frozen=True)
class Decision:
    """A boolean retrieval decision: "retrieve", "no-retrieve" or "none", with the raw reply."""

    label: str
    raw: str | None

    @property
    def retrieve(self) -> bool:
        return self.label == "retrieve"


def parse_decision(response: LLMResponse, tool_name: str) -> Decision:
    try:
        value = tool_arguments(response, tool_name).get("retrieve")
    except ReplyError:
        return Decision("none", response.tool_arguments or response.text)
    if not isinstance(value, bool):
        return Decision("none", response.tool_arguments)
    return Decision("retrieve" if value else "no-retrieve", response.tool_arguments)


def answer_then_ask(llm: LLM, question: Question, ask: str,
                    tool: dict[str, Any]) -> tuple[LLMResponse, LLMResponse]:
    """The answer-first agents' two `decision` calls: an answer without retrieval, then, with that
    answer in the conversation, `ask` as one forced call of `tool` (advanced, self-check)."""
    messages = answer_messages(question)
    first = llm.chat("decision", messages, max_tokens=ANSWER_MAX_TOKENS)
    follow_up = messages + [{"role": "assistant", "content": first.text or ""},
                            {"role": "user", "content": ask}]
    asked = llm.chat("decision", follow_up, tools=[tool], tool_choice=tool["function"]["name"],
                     max_tokens=DECISION_MAX_TOKENS)
    return first, asked


def retrieve(context: SystemContext, query: str) -> list[RetrievedChunk]:
    """The index's chunks for `query`. A retrieving system declares `uses_index`, for which the
    run gives it the index; one built without it is a mistake in its caller's code."""
    if context.retriever is None:
        raise TypeError("a retrieving system was given no retrieval index: declare uses_index")
    return context.retriever.retrieve(query)


def search_and_answer(context: SystemContext, question: Question,
                      query: str) -> tuple[list[Step], dict[str, Any]]:
    """A search for `query`, then the answer role's reply with its chunks: the two steps, and
    the details to record about the chunks."""
    chunks = retrieve(context, query)
    response, details = answer_with_chunks(context, question, chunks)
    return [Step("search", query=query, retrieved=tuple(chunks)), answered(response)], details


def answered(response: LLMResponse) -> Step:
    """The answer step of a reply."""
    return Step("answer", (response,), text=response.text)


def decided(label: str, *calls: LLMResponse) -> Step:
    """The decision step of the calls that made it, with the decision's label."""
    return Step("decide", calls, text=label)


def from_steps(steps: list[Step], details: dict[str, Any] | None = None) -> SystemAnswer:
    """The answer a trajectory gives: the last answer step's text, every step's calls in order,
    and one retrieval per search."""
    text = next((step.text for step in reversed(steps) if step.kind == "answer"), None)
    return SystemAnswer(text or "", [call for step in steps for call in step.calls],
                        retrievals=sum(step.kind == "search" for step in steps),
                        details=details or {}, steps=steps)


def answer_with_chunks(context: SystemContext, question: Question,
                       chunks: list[RetrievedChunk]) -> tuple[LLMResponse, dict[str, Any]]:
    """The answer role's reply given the chunks, and the details to record about them."""
    messages, cut = fitted_messages(question, chunks, context.context_tokens)
    response = context.llm.chat("answer", messages, max_tokens=ANSWER_MAX_TOKENS)
    return response, {"retrieved": chunk_records(chunks), "context_cut": cut}


def fitted_messages(question: Question, chunks: list[RetrievedChunk],
                    context_tokens: int) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """RAG messages that fit the window with room for the answer, and what was cut (None: nothing).

    Chunks keep their rank order; the first that does not fit is shortened and the rest dropped.
    A question that alone overflows the window is shortened too, and answered without extracts.
    """
    budget = int(context_tokens * SAFETY) - ANSWER_MAX_TOKENS
    question_tokens = count_text(question.text, TOKEN_MODEL)
    frame_tokens = count_text(RAG_PROMPT.format(extracts=""), TOKEN_MODEL) + 16  # message framing
    room = budget - frame_tokens - question_tokens
    if room <= 0:
        text = _truncate(question.text, budget - frame_tokens)
        cut = {"question_cut": True, "extracts_kept": 0, "extracts_dropped": len(chunks)}
        return answer_messages(Question(question.id, text, question.gold_title),
                               RAG_PROMPT.format(extracts="")), cut
    extracts, kept_whole = [], 0
    for chunk in chunks:
        tokens = count_text(chunk.text, TOKEN_MODEL) + 2  # the blank line between extracts
        if tokens > room:
            if room > 16:
                extracts.append(_truncate(chunk.text, room))
            break
        extracts.append(chunk.text)
        kept_whole += 1
        room -= tokens
    messages = answer_messages(question, RAG_PROMPT.format(extracts="\n\n".join(extracts)))
    if kept_whole == len(chunks):
        return messages, None
    return messages, {"question_cut": False, "extracts_kept": len(extracts),
                      "extracts_dropped": len(chunks) - len(extracts),
                      "extract_shortened": len(extracts) > kept_whole}


def _truncate(text: str, tokens: int) -> str:
    encoding = encoding_for(TOKEN_MODEL)
    return encoding.decode(encoding.encode(text, disallowed_special=())[:max(tokens, 0)])

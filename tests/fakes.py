"""A scripted fake model for unit tests: the `LLM` Protocol in process, no HTTP.

`is_call_of` tells which finished pair an HTTP request to the fake server belongs to.

Each reply in the script is consumed in order; a reply is a string (text), a `ToolReply`
(a tool call with raw argument text, possibly broken on purpose) or an exception to raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.judge import JUDGE_PROMPT
from harness.types import LLMResponse, Usage
from systems.prompts import ANSWER_PROMPT


@dataclass(frozen=True)
class ToolReply:
    name: str
    arguments: str


class ScriptedLLM:
    def __init__(self, script: list[Any], usage: Usage = Usage(10, 5)):
        self.script = list(script)
        self.usage = usage
        self.requests: list[dict[str, Any]] = []

    def chat(self, role: str, messages: list[dict[str, Any]], *, tools=None, tool_choice=None,
             temperature: float = 0.0, max_tokens: int | None = None,
             attempt: int = 0) -> LLMResponse:
        self.requests.append({"role": role, "messages": messages, "tools": tools,
                              "tool_choice": tool_choice, "temperature": temperature,
                              "attempt": attempt})
        if not self.script:
            raise AssertionError(f"unexpected extra {role} call")
        reply = self.script.pop(0)
        if isinstance(reply, Exception):
            raise reply
        text, name, arguments = (None, reply.name, reply.arguments) if isinstance(reply, ToolReply) \
            else (reply, None, None)
        return LLMResponse(role=role, model="scripted", text=text, tool_name=name,
                           tool_arguments=arguments, usage=self.usage, latency_s=0.0,
                           cache_hit=False, messages=messages)


def is_call_of(request, row):
    """Whether an HTTP request belongs to the given finished pair (its answer or judge call)."""
    messages = request["messages"]
    if messages[0]["content"] == JUDGE_PROMPT:
        return messages[1]["content"].startswith(f"Query: {row['question']}\n\nChatbot's answer: {row['answer']}")
    is_baseline = messages[0]["content"] == ANSWER_PROMPT
    return messages[1]["content"] == row["question"] and is_baseline == (row["system"] == "baseline")

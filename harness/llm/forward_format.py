"""The OpenAI chat-completions format of the run's endpoint for agent frameworks
(harness/llm/forward.py; docs/own-system.md#agents-of-your-own-langgraph-openai-agents-sdk): a
request body read into `LLM.chat`'s options, refused naming the field it cannot forward; a reply
written as OpenAI's chat completion; an error as OpenAI's error body."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from freshrag.core.errors import FreshragError
from freshrag.core.types import LLMResponse

# Fields a framework may send that change nothing a forwarded call answers: the reply holds one
# tool call at most (freshrag's client keeps the first), the run's seed is the run's, and
# nothing is stored or tagged upstream.
IGNORED = ("model", "parallel_tool_calls", "stream_options", "store", "metadata", "user", "seed",
           "n")


class Refused(FreshragError):
    """A request the endpoint answers with an error: its HTTP status and why (the field). Caught
    where the request is answered, never shown to the user as such."""

    def __init__(self, status: int, message: str, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.param = param


def completion(response: LLMResponse, number: int) -> dict[str, Any]:
    """`response` as OpenAI's chat completion. A tool call's id is a hash of the conversation
    and the call, so that a framework sending it back asks the same request again next run
    (and the cache answers it)."""
    message: dict[str, Any] = {"role": "assistant", "content": response.text}
    if response.tool_name is not None:
        digest = hashlib.sha256(json.dumps(
            [response.messages, response.tool_name, response.tool_arguments],
            sort_keys=True, default=str).encode()).hexdigest()
        message["tool_calls"] = [{"id": f"call_{digest[:24]}", "type": "function", "function": {
            "name": response.tool_name, "arguments": response.tool_arguments or "{}"}}]
    usage = response.usage
    return {"id": f"chatcmpl-freshrag-{number}", "object": "chat.completion",
            "created": int(time.time()), "model": response.model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if response.tool_name else "stop"}],
            "usage": {"prompt_tokens": usage.input, "completion_tokens": usage.output,
                      "total_tokens": usage.input + usage.output}}


def chat_options(body: Any) -> dict[str, Any]:
    """A request body as `LLM.chat`'s arguments (but the role); Refused (400) naming the field
    that is missing, of the wrong type, or not forwarded."""
    if not isinstance(body, dict):
        raise Refused(400, "the body is not a JSON object")
    if (stream := body.get("stream", False)) is not False:
        raise Refused(400, "streaming is not forwarded: ask with stream false" if stream is True
                      else "stream must be true or false", "stream")
    known = ("messages", "tools", "tool_choice", "temperature", "max_tokens",
             "max_completion_tokens", "stream", *IGNORED)
    for name in body:
        if name not in known:
            raise Refused(400, f"{name} is not forwarded (freshrag forwards messages, tools, "
                               f"tool_choice, temperature and max_tokens)", name)
    if body.get("n", 1) != 1:
        raise Refused(400, "n: one choice only", "n")
    options: dict[str, Any] = {"messages": _messages(body.get("messages"))}
    if body.get("tools"):
        options["tools"] = _tools(body["tools"])
        options["tool_choice"] = tool_choice(body.get("tool_choice", "auto"))
    temperature = body.get("temperature")
    if temperature is not None:
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
                or not 0 <= temperature <= 2:
            raise Refused(400, "temperature must be a number from 0 to 2", "temperature")
        options["temperature"] = float(temperature)
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise Refused(400, f"{name} must be a whole number of 1 or more", name)
            options.setdefault("max_tokens", value)
    return options


def _messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "messages must be a non-empty list", "messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise Refused(400, f"messages[{i}] must be an object with a role", f"messages[{i}]")
        if not isinstance(message.get("content"), (str, list, type(None))):
            raise Refused(400, f"messages[{i}].content must be text, a list of parts or null",
                          f"messages[{i}].content")
    return messages


def _tools(tools: Any) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise Refused(400, "tools must be a list", "tools")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise Refused(400, f"tools[{i}] must be a function with a name",
                          f"tools[{i}].function.name")
    return tools


def tool_choice(choice: Any) -> str:
    """OpenAI's tool_choice as `LLM.chat` takes it: "auto", "none" and "required" as they are
    (freshrag's client sends them so), a named function as its name."""
    if choice in ("auto", "none", "required"):
        return str(choice)
    function = choice.get("function") if isinstance(choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or name in ("auto", "none", "required"):
        raise Refused(400, 'tool_choice must be "auto", "none", "required" or '
                           '{"type": "function", "function": {"name": ...}}', "tool_choice")
    return name


def error_reply(refused: Refused) -> tuple[int, dict[str, Any]]:
    """The status and OpenAI's error body of a refusal."""
    return refused.status, {"error": {"message": str(refused), "type": "freshrag_forwarding",
                                      "param": refused.param, "code": None}}

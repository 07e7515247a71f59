"""What an endpoint sent back, checked before anything uses it: the reply is plain JSON
data (harness/llm/wire.py) of any shape, so a reply that is no chat completion (no choices, text
that is not text, a runaway of a million characters) is an EndpointError here, never a row or a
cache entry; usage that is no count is counted locally instead; a lone surrogate becomes
U+FFFD (docs/faults.md)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

from freshrag.core.jsonl import loads
from freshrag.core.textfile import unicode_text
from freshrag.core.types import Usage
from freshrag.llm.errors import EndpointError
from freshrag.llm.tokens import estimate_usage

# Text or arguments longer than this are no reply to any request freshrag makes (its max_tokens
# are in the hundreds): refused before anything is cached or written.
MAX_REPLY_CHARS = 1_000_000
MAX_USAGE_TOKENS = 100_000_000  # a usage count beyond this is not a count: estimated instead


def is_usable(value: dict[str, Any]) -> bool:
    """Whether a reply is worth caching: some text, or a tool call whose arguments are a JSON
    object. The client knows no schema, so a call with the wrong fields counts as usable here and
    is left to the caller's strict parser, which retries with another `attempt` (another key)."""
    if (value["text"] or "").strip():
        return True
    if value["tool_name"] is None:
        return False
    try:
        return isinstance(loads(value["tool_arguments"] or ""), dict)
    except json.JSONDecodeError:
        return False


def completion_value(completion: Any, request: dict[str, Any], latency_s: float) -> dict[str, Any]:
    """The cacheable part of a completion (the reply's JSON data), with usage normalised;
    EndpointError for a reply that is not one: no choices, text or arguments that are not
    strings or are longer than MAX_REPLY_CHARS. Text that is not Unicode (a lone surrogate
    escape) is made so first (core/textfile.py unicode_text), before it is counted or cached."""
    completion = unicode_text(completion)
    choices = _field(completion, "choices")
    if not isinstance(choices, list):
        start = str(completion)[:80]
        raise EndpointError(f"the reply is not a chat completion (it starts {start!r})")
    if not choices:
        raise EndpointError(f"endpoint returned no choices for model {request['model']!r}")
    message = _field(choices[0], "message")
    text = _field(message, "content")
    calls = _field(message, "tool_calls") or []
    tool_name = tool_arguments = None
    if calls:
        function = _field(calls[0], "function") if isinstance(calls, list) else None
        tool_name = _field(function, "name")
        tool_arguments = _field(function, "arguments")
        if not isinstance(tool_name, str) or not isinstance(tool_arguments, str):
            raise EndpointError("the reply's tool call has no function name and arguments as text")
    for what, value in (("text", text), ("tool-call arguments", tool_arguments)):
        if value is not None and not isinstance(value, str):
            raise EndpointError(f"the reply's {what} is {type(value).__name__}, not text")
        if value is not None and len(value) > MAX_REPLY_CHARS:
            raise EndpointError(f"the reply's {what} hold {len(value):,} characters, more than "
                                f"the {MAX_REPLY_CHARS:,} freshrag accepts from one call")
    usage = _usage(_field(completion, "usage"))
    if usage is None:  # none given, or not counts: counted here, and flagged estimated
        usage = estimate_usage(request["messages"], request.get("tools"), text, tool_arguments,
                               request["model"])
    return {"text": text, "tool_name": tool_name, "tool_arguments": tool_arguments,
            "usage": asdict(usage), "latency_s": latency_s,
            "logprobs": _logprobs(choices[0]) if request.get("logprobs") else None}


def _field(data: Any, name: str) -> Any:
    """`data[name]` if data is a JSON object, else None: a reply may have any shape."""
    return data.get(name) if isinstance(data, dict) else None


def _usage(given: Any) -> Usage | None:
    """The endpoint's token counts, if it gave counts (whole numbers in a sane range)."""
    prompt = _field(given, "prompt_tokens")
    output = _field(given, "completion_tokens") or 0
    if not all(type(n) is int and 0 <= n <= MAX_USAGE_TOKENS for n in (prompt, output)):
        return None
    return Usage(prompt, output)


def _logprobs(choice: Any) -> list[dict[str, Any]] | None:
    """The tokens' log-probabilities as the endpoint gave them, None if it gave none (an
    endpoint that ignores the request field is recorded as such, never guessed)."""
    content = _field(_field(choice, "logprobs"), "content")
    if not content or not isinstance(content, list):
        return None
    return [{"token": _field(item, "token"), "logprob": _finite(_field(item, "logprob")),
             "top": [{"token": _field(top, "token"), "logprob": _finite(_field(top, "logprob"))}
                     for top in (_field(item, "top_logprobs") or [])]} for item in content]


def _finite(logprob: Any) -> Any:
    """A log-probability, None where it is no finite number (`-Infinity`, `NaN`, which Python
    reads from a reply): the cache writes strict JSON, and a decider skips a None as it would
    an impossible token (systems/confidence.py)."""
    return None if isinstance(logprob, float) and not math.isfinite(logprob) else logprob

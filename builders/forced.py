"""One forced function call about an article, strictly parsed: what every step of the labelled
question builder shares (docs/methods.md#statement-extraction-and-critiques: statements, questions,
critiques, labels).

The article is fitted to the model's window (`freshrag.llm.fitting.chat_fitting`, the one rule for that);
the reply must be a call of the forced function whose arguments are a JSON object that `parse`
accepts. Anything else earns one more attempt (a new `attempt`, so a cached reply is not simply
replayed), then an `Outcome` with no value and the reason, keeping every raw reply: never a made-up
value, never a traceback. An article too long even halved is an outcome with that reason.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from freshrag.core.types import LLM, LLMResponse, Usage
from freshrag.llm.errors import ContextTooLong
from freshrag.llm.fitting import chat_fitting
from freshrag.llm.toolcall import ReplyError, tool_arguments

TRIES = 2


@dataclass
class Outcome:
    """A parsed value, or None and why; with every call made and its raw reply."""

    value: Any = None
    reason: str | None = None
    raw: list[str | None] = field(default_factory=list)
    calls: list[LLMResponse] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.reason is None

    def record(self) -> dict[str, Any]:
        """What a stage file keeps about the call(s)."""
        return {"reason": self.reason, "raw": self.raw, "usage": usage_record(self.calls)}


def usage_record(calls: list[LLMResponse]) -> dict[str, Any]:
    return asdict(sum((call.usage for call in calls), Usage()))


def forced_call(llm: LLM, role: str, tool: dict[str, Any],
                messages: Callable[[str], list[dict[str, Any]]], parse: Callable[[dict], Any], *,
                text: str = "", max_tokens: int, temperature: float = 0.0,
                first_attempt: int = 0) -> Outcome:
    """Call `tool` (forced) with `messages(text)`; `text` (an article, possibly empty) is what may
    be halved to fit. `parse` turns the arguments into the value or raises ReplyError. Callers
    that send one request more than once for different samples give each a `first_attempt`
    TRIES apart, so no two share a cache entry."""
    name = tool["function"]["name"]
    outcome, fitted = Outcome(), None
    reasons = []
    for attempt in range(first_attempt, first_attempt + TRIES):
        try:  # a retry sends the text as far as the first attempt had to cut it
            fitted = chat_fitting(llm, role, text, lambda cut: dict(
                messages=messages(cut), tools=[tool], tool_choice=name, temperature=temperature,
                max_tokens=max_tokens, attempt=attempt), halved=fitted.halvings if fitted else 0)
        except ContextTooLong as err:
            reasons.append(f"article {err}")
            break
        text = text[:fitted.chars]
        response = fitted.response
        outcome.calls.append(response)
        outcome.raw.append(response.tool_arguments if response.tool_name else response.text)
        try:
            outcome.value = parse(tool_arguments(response, name))
            return outcome
        except ReplyError as err:
            reasons.append(str(err))
    outcome.reason = "; ".join(reasons)
    return outcome


def text_field(values: dict[str, Any], name: str, max_chars: int = 2_000) -> str:
    """A string field holding words, its whitespace runs made single spaces."""
    value = values.get(name)
    if not isinstance(value, str) or not is_text(value):
        raise ReplyError(f"{name} is {str(value)[:200]!r}, not text with a letter in it")
    if len(value) > max_chars:
        raise ReplyError(f"{name} is {len(value):,} characters long (at most {max_chars:,})")
    return " ".join(value.split())


def text_list(values: dict[str, Any], name: str) -> list[str]:
    """A non-empty list of strings; each re-spaced, those without a letter and repeats dropped."""
    items = values.get(name)
    if not isinstance(items, list) or not items:
        raise ReplyError(f"{name} is {str(items)[:200]!r}, not a non-empty list")
    if not all(isinstance(item, str) for item in items):
        raise ReplyError(f"{name} holds something other than strings: {str(items)[:200]!r}")
    kept = list(dict.fromkeys(" ".join(item.split()) for item in items if is_text(item)))
    if not kept:
        raise ReplyError(f"{name} holds no text with a letter in it: {str(items)[:200]!r}")
    return kept


def is_text(value: str) -> bool:
    """Whether a string has a letter: `"]"` or `" "` is no statement or question."""
    return any(char.isalpha() for char in value)

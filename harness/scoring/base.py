"""What every scorer shares (docs/scoring.md#scorers): the
answer as a scorer sees it, the result it returns, and strict parsing of forced function calls.

A scorer is one object with `name`, `role`, `needs` and one method, `score(llm, item)`. It
returns a `ScoreResult` whose `status` is `scored` (with `metrics`, numbers by name),
`unscored` (the reply could not be used: `reason` and the raw replies kept, never a number) or
`not_applicable` (the metric has nothing to measure, e.g. faithfulness of an answer that
retrieved nothing: recorded as such, never as 0). An endpoint error is not caught here: the
score pass (harness/scoring/scorepass.py) records it as a `failed` score and retries it on resume.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from freshrag.core.records import GradeRecord
from freshrag.core.types import LLM, Article, LLMResponse, Question
from freshrag.llm.toolcall import ReplyError, tool_arguments

SCORER_ROLE = "scorer"  # one role for every scorer beyond the judge (freshrag.core.types.ROLES)
STATUSES = ("scored", "unscored", "not_applicable", "failed")
LIST_MAX_TOKENS = 512  # a list of short statements or questions; bounds a padding local model
FLAG_MAX_TOKENS = 128  # one boolean or a few indices

Embed = Callable[[list[str]], list[list[float]]]


@dataclass(frozen=True)
class ScoreInput:
    """One answer to score: the question (with its optional `reference`), the answer text, the
    text the answer was given (`context`: the retrieved extracts; None when nothing was
    retrieved), the gold article (None when the scorer's caller has no articles; a
    multi-article question's first), every gold article of a multi-article question in hop
    order (`articles`; empty for one article), the judge's grade of the row (for the abstention
    outcome), and which repeat this is (0 first)."""

    question: Question
    answer: str
    context: str | None = None
    article: Article | None = None
    grade: GradeRecord | None = None
    repeat: int = 0
    articles: tuple[Article, ...] = ()

    def gold_articles(self) -> tuple[Article, ...]:
        """Every gold article at hand, in hop order: `articles`, else `article` alone."""
        return self.articles or ((self.article,) if self.article else ())


@dataclass(frozen=True)
class ScoreResult:
    status: str                                  # one of STATUSES
    metrics: dict[str, float] = field(default_factory=dict)  # only when scored
    details: dict[str, Any] = field(default_factory=dict)    # statements, verdicts, sources
    reason: str | None = None                    # why unscored / not applicable


class Scorer(Protocol):
    name: str
    role: str          # the LLM role its calls use, so their tokens are counted apart
    needs: tuple[str, ...]  # "article", "embeddings": what the caller must provide
    metrics: tuple[str, ...]  # the metric names a scored result holds

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult: ...


def not_applicable(reason: str) -> ScoreResult:
    return ScoreResult("not_applicable", reason=reason)


def unscored(reason: str, **details: Any) -> ScoreResult:
    """The reply could not be used; the score pass keeps every raw reply beside the reason."""
    return ScoreResult("unscored", reason=reason, details=details)


def tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """A function whose every property is required."""
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties,
                       "required": list(properties)}}}


def forced(llm: LLM, role: str, system: str, user: str, spec: dict[str, Any],
           max_tokens: int, repeat: int) -> LLMResponse:
    """One forced call of `spec`'s function; repeat k is attempt k, its own cache entry."""
    return llm.chat(role, [{"role": "system", "content": system},
                           {"role": "user", "content": user}],
                    tools=[spec], tool_choice=spec["function"]["name"], temperature=0.0,
                    max_tokens=max_tokens, attempt=repeat)


def arguments(response: LLMResponse, spec: dict[str, Any]) -> dict[str, Any]:
    """The arguments of the forced call, as an object, or ReplyError saying what is wrong."""
    name = spec["function"]["name"]
    value = tool_arguments(response, name)
    missing = [key for key in spec["function"]["parameters"]["required"] if key not in value]
    if missing:
        raise ReplyError(f"{name} arguments miss {missing}")
    return value


def text_list(value: Any, what: str) -> list[str]:
    """A list of non-empty strings (stripped), or ReplyError."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ReplyError(f"{what} must be a list of strings, got {value!r:.120}")
    return [item.strip() for item in value if item.strip()]


def flag_list(value: Any, n: int, what: str) -> list[bool]:
    """Exactly n booleans, or ReplyError."""
    if not isinstance(value, list) or not all(isinstance(item, bool) for item in value):
        raise ReplyError(f"{what} must be a list of true/false, got {value!r:.120}")
    if len(value) != n:
        raise ReplyError(f"{what} holds {len(value)} verdicts for {n} statements")
    return value


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+")


def sentences(text: str) -> list[str]:
    """The text's sentences: split after . ! ? before a capital or digit, and at line breaks.
    Good enough for Wikipedia prose; both sides of a share use the same split."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def numbered(items: list[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, start=1))

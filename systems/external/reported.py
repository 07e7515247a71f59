"""What a system outside freshrag reports about an answer (docs/own-system.md): an HTTP
service's reply or a row of an answers file. The answer text is required; the retrieved contexts,
the tokens spent, the retrievals, the retrieval decision and the latency are read where reported
and recorded as unknown (the answer's `details["unknown"]`, `retrievals` None) where not, never
as 0. Contexts given as bare texts (Ragas' `retrieved_contexts`) keep their text but name no
article: their `retrieved` titles are left out, so that the retrieval table does not count them
as misses of the gold article. A trajectory, as `steps` or as a conversation's `messages`,
becomes the answer's steps (systems/external/trajectory.py); where the retrievals are not
reported, its searches count them."""

from __future__ import annotations

import math
from typing import Any

from freshrag.core.types import LLMResponse, Question, SystemAnswer, Usage
from freshrag.systems.external.trajectory import reported_steps

REPORTED = ("answer", "contexts", "input_tokens", "output_tokens", "retrievals", "decision",
            "latency_s", "steps", "messages")
DECISIONS = ("retrieve", "no-retrieve", "none")


def reported_answer(values: dict[str, Any], model: str, question: Question,
                    names: dict[str, str] | None = None) -> SystemAnswer:
    """The answer `values` (keys of REPORTED, None where not reported) describe; `model` names
    what answered in the calls. ValueError names the first value that cannot be read; `{answer}`
    in its message stands for where the answer was looked for, and `names` gives the trajectory's
    fields as the source calls them (`steps`, `messages` unless named)."""
    answer = values.get("answer")
    if not isinstance(answer, str):
        raise ValueError(f"no answer text at {{answer!r}} (got {answer!r:.80})")
    contexts = _contexts(values.get("contexts"))
    tokens_in, tokens_out = (_count(values.get(name), name)
                             for name in ("input_tokens", "output_tokens"))
    retrievals = _count(values.get("retrievals"), "retrievals")
    decision = _decision(values.get("decision"))
    latency = _seconds(values.get("latency_s"))
    names = names or {}
    steps = reported_steps(values.get("steps"), values.get("messages"),
                           (names.get("steps", "steps"), names.get("messages", "messages")))
    searches = sum(step.kind == "search" for step in steps)
    if retrievals is None and searches:
        retrievals = searches  # the trajectory's searches are its retrievals
    if retrievals is None and contexts is not None:
        retrievals = int(bool(contexts))  # contexts came back: one retrieval, as naive RAG counts
    unknown = [name for name, value in (("input_tokens", tokens_in), ("output_tokens", tokens_out),
                                        ("retrievals", retrievals), ("decision", decision))
               if value is None]
    calls = [] if tokens_in is None or tokens_out is None else [LLMResponse(
        role="answer", model=model, text=answer, tool_name=None, tool_arguments=None,
        usage=Usage(tokens_in, tokens_out), latency_s=latency or 0.0, cache_hit=False,
        messages=[{"role": "user", "content": question.text}])]
    details: dict[str, Any] = {"decision": decision, "unknown": unknown}
    if contexts:
        if any(title for title, _, _ in contexts):  # all untitled: which articles is unknown
            details["retrieved"] = [{"title": title, "index": i, "score": score}
                                    for i, (title, _, score) in enumerate(contexts)]
        details["context"] = "\n\n".join(text for _, text, _ in contexts)
    return SystemAnswer(answer, calls=calls, retrievals=retrievals, details=details,
                        latency_s=latency, steps=steps)


def _contexts(value: Any) -> list[tuple[str, str, float | None]] | None:
    """(title, text, score) of each context: plain strings or {title, text|content, score}."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"contexts must be a list, got {value!r:.80}")
    found: list[tuple[str, str, float | None]] = []
    for item in value:
        if isinstance(item, str):
            found.append(("", item, None))
            continue
        text = item.get("text", item.get("content", item.get("page_content"))) \
            if isinstance(item, dict) else None
        score = item.get("score") if isinstance(item, dict) else None
        if not isinstance(text, str) or not _is_number(score, none=True):
            raise ValueError(f"a context must be text or {{title, text, score}}, got {item!r:.80}")
        title = item.get("title")
        found.append((title if isinstance(title, str) else "", text, score))
    return found


def _count(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10**12:
        raise ValueError(f"{name} must be a whole number from 0, got {value!r:.80}")
    return value


def _decision(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "retrieve" if value else "no-retrieve"
    if value not in DECISIONS:
        raise ValueError(f"decision must be true/false or one of {', '.join(DECISIONS)}, "
                         f"got {value!r:.80}")
    return value


def _seconds(value: Any) -> float | None:
    if value is None:
        return None
    if not _is_number(value) or not 0 <= value < 10**7:
        raise ValueError(f"latency_s must be seconds from 0, got {value!r:.80}")
    return float(value)


def _is_number(value: Any, none: bool = False) -> bool:
    if value is None:
        return none
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

"""Critiques of generated questions (docs/methods.md#statement-extraction-and-critiques): one forced
`rate_question` call rates a question with its intended answer 1-5 on stand-alone clarity,
specificity, question-context grounding and answer-context grounding; `--min-critique` drops the
questions rated below a threshold.

Thresholds are `N` (every criterion) or `criterion=N,...`. A question meant to be unanswerable is
held to stand-alone and specificity only: the article is not supposed to answer it. A critique
that could not be parsed leaves the question unrated: with a threshold it is dropped as
`critique_unscored` (a filter that could not look lets nothing through), never given a rating.
The first criterion below its threshold, in the order above, is the reason counted in the funnel.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from freshrag.builders.forced import Outcome, ReplyError, forced_call
from freshrag.builders.labels.prompts import CRITERIA, CRITIQUE_PROMPT, CRITIQUE_TOOL, messages
from freshrag.builders.prompts import article_text
from freshrag.core.types import ARTICLE_CHARS, LLM

CRITIQUE_MAX_TOKENS = 96  # four small integers
GROUNDING = ("question_grounding", "answer_grounding")
NO_ANSWER = "(none: the question is meant to be one the article cannot answer)"


def parse_thresholds(text: str) -> tuple[tuple[str, int], ...]:
    """`--min-critique`: `3` for every criterion, or `stand_alone=4,specificity=3`."""
    if re.fullmatch(r"\s*[1-5]\s*", text):
        return tuple((name, int(text)) for name in CRITERIA)
    thresholds: dict[str, int] = {}
    for part in text.split(","):
        match = re.fullmatch(r"\s*([a-z_]+)\s*=\s*([1-5])\s*", part)
        if not match or match.group(1) not in CRITERIA or match.group(1) in thresholds:
            raise argparse.ArgumentTypeError(
                f"expected a rating 1-5, or criterion=rating pairs with criteria from "
                f"{', '.join(CRITERIA)} (each once), got {text!r:.200}")
        thresholds[match.group(1)] = int(match.group(2))
    return tuple(thresholds.items())


def parse_critique(values: dict[str, Any]) -> dict[str, int]:
    ratings = {}
    for name in CRITERIA:
        value = values.get(name)
        # bool is an int in Python; `true` is not a rating
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            raise ReplyError(f"{name} is {value!r}, not a whole number from 1 to 5")
        ratings[name] = value
    return ratings


def critique(llm: LLM, title: str, content: str, question: str, answer: str | None) -> Outcome:
    """Rate one question and its intended answer (None for an unanswerable one)."""
    def request(text: str) -> list[dict[str, str]]:
        return messages(CRITIQUE_PROMPT, f"Question: {question}\n\nIntended answer: "
                        f"{answer or NO_ANSWER}\n\nWikipedia article:\n{article_text(title, text)}")

    return forced_call(llm, "builder", CRITIQUE_TOOL, request, parse_critique,
                       text=content[:ARTICLE_CHARS], max_tokens=CRITIQUE_MAX_TOKENS)


def drop_reason(ratings: dict[str, int] | None, thresholds: tuple[tuple[str, int], ...],
                unanswerable: bool) -> str | None:
    """Why a question is dropped (`critique_<criterion>`, `critique_unscored`), or None."""
    if not thresholds:
        return None
    if ratings is None:
        return "critique_unscored"
    wanted = dict(thresholds)
    for name in CRITERIA:
        if unanswerable and name in GROUNDING:
            continue
        if name in wanted and ratings[name] < wanted[name]:
            return f"critique_{name}"
    return None

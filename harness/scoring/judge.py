"""The LLM judge of section III.B: truthfulness and relevance, 1 to 5, through a forced call.

The judge alone sees the gold article (`Article.prompt_text`: title + text, cut to 15,000
characters; a general query has none and is graded against the judge's own knowledge), halved
to fit the judge model's window if need be (`chat_fitting`, the one rule for
that; the grade records the cut). A multi-article question's judge sees every gold article, in hop
order, each cut to the same bound that the rule halves (`chat_fitting_all`;
docs/methods.md#multi-article-questions). Its reply is parsed strictly: anything but two integers in
1..5 earns one more attempt, then the grade is unscored with the reason and the raw arguments
kept. An article still too long after the halvings leaves the grade unscored with that reason.
An unscored answer is never given a score.

The judge may also say why, in one line (`reason`): optional in the schema, so that a weak model
still grades, and bounded, so that a grammar-constrained one cannot run on. A reason that is no
text, or holds no word (a small model's `, ` or `1.1.1.1`), is dropped and one too long is cut;
neither ever costs the grade its ratings.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from freshrag.core.errors import FreshragError
from freshrag.core.types import LLM, Article, Grade, LLMResponse, Question
from freshrag.llm.errors import ContextTooLong
from freshrag.llm.fitting import chat_fitting_all
from freshrag.llm.toolcall import ReplyError, line_of_text, room_for, tool_arguments
from freshrag.scoring.base import ScoreInput, ScoreResult, unscored

ATTEMPTS = 2
# One short sentence saying why; a longer one is cut to this. A small model tends to fill the
# string to its bound (SmolLM2-135M: ~70 tokens at 200 characters), so the bound is its cost.
REASON_CHARS = 120
# Two small integers need a few dozen tokens, the reason at most room_for its characters; the
# bound keeps a grammar-constrained local model from running on to its context limit (minutes
# per call on 2 cores) when it pads the JSON.
JUDGE_MAX_TOKENS = 256 + room_for(REASON_CHARS)
SCALE = [1, 2, 3, 4, 5]

JUDGE_PROMPT = (
    "You evaluate the answer a chatbot gave to a user's query. You are given the query, the "
    "chatbot's answer, and a Wikipedia article that contains the true answer. Rate the answer's "
    "truthfulness (is what it says correct according to the article?) and its relevance (does it "
    "answer what was asked?), each from 1 (worst) to 5 (best). If the answer says that the chatbot "
    "does not know, its relevance is 1. Report both ratings, with the reason for them in one short "
    "sentence, by calling the function submit_grade."
)

# A multi-article question: the articles that hold its answer between them, in hop order.
ARTICLES_JUDGE_PROMPT = (
    "You evaluate the answer a chatbot gave to a user's query. You are given the query, the "
    "chatbot's answer, and the Wikipedia articles that together contain the true answer (it may "
    "need facts from each of them). Rate the answer's truthfulness (is what it says correct "
    "according to the articles?) and its relevance (does it answer what was asked?), each from 1 "
    "(worst) to 5 (best). If the answer says that the chatbot does not know, its relevance is 1. "
    "Report both ratings, with the reason for them in one short sentence, by calling the "
    "function submit_grade."
)
# What heads each article in the judge's user message (the viewer finds the gold passage by it)
ARTICLE_MARK = "\n\nWikipedia article:\n"

# A general query (a greeting, arithmetic, a definition, a writing request) has no gold article:
# the judge is told so and grades by its own knowledge, on the same scale and through the same call.
GENERAL_JUDGE_PROMPT = (
    "You evaluate the answer a chatbot gave to a user's query. The query needs no reference "
    "document: it is a greeting, a calculation, a definition, a writing request or similar, so no "
    "article is given. Rate the answer's truthfulness (is what it says correct?) and its "
    "relevance (does it do what was asked?), each from 1 (worst) to 5 (best), using your own "
    "knowledge. If the answer says that the chatbot does not know, its relevance is 1. Report both "
    "ratings, with the reason for them in one short sentence, by calling the function "
    "submit_grade."
)

GRADE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit_grade",
        "description": "Submit the ratings of the chatbot's answer.",
        "parameters": {
            "type": "object",
            "properties": {
                # enum as well as the bounds: grammar-constrained servers (llama.cpp) honour enum only
                "truthfulness": {"type": "integer", "minimum": 1, "maximum": 5, "enum": SCALE,
                                 "description": "1 = false, 5 = fully true according to the article"},
                "relevance": {"type": "integer", "minimum": 1, "maximum": 5, "enum": SCALE,
                              "description": "1 = off topic or 'I don't know', 5 = answers exactly"},
                # optional, so that a model that gives the ratings alone still grades
                "reason": line_of_text(REASON_CHARS) | {
                    "description": "why, in one short sentence"},
            },
            "required": ["truthfulness", "relevance"],
        },
    },
}
FIELDS = ("truthfulness", "relevance")


class GradeParseError(FreshragError, ValueError):
    """Why a judge reply is not a grade."""


def judge_messages(question: Question, answer: str,
                   article_text: str | Sequence[str] | None) -> list[dict[str, Any]]:
    """The judge's messages; `article_text` the gold article's text, or the texts of a
    multi-article question's articles in hop order; None (or none) for a general query."""
    texts = [article_text] if isinstance(article_text, str) else list(article_text or ())
    user = f"Query: {question.text}\n\nChatbot's answer: {answer}"
    if not texts:
        return [{"role": "system", "content": GENERAL_JUDGE_PROMPT}, {"role": "user", "content": user}]
    user += "".join(ARTICLE_MARK + text for text in texts)
    prompt = JUDGE_PROMPT if len(texts) == 1 else ARTICLES_JUDGE_PROMPT
    return [{"role": "system", "content": prompt}, {"role": "user", "content": user}]


def grade(llm: LLM, question: Question, answer: str,
          article: Article | Sequence[Article] | None,
          first_attempt: int = 0) -> tuple[Grade, list[LLMResponse]]:
    """Score one answer; returns the grade and the judge calls made (for token accounting).
    `article` is the gold article, or a multi-article question's articles in hop order; None
    (or none: a general query) grades with GENERAL_JUDGE_PROMPT, without an article.
    `first_attempt` > 0 asks afresh (a repeat of `freshrag score --repeats`): attempts are
    cached, and sent with seed + attempt, apart from the first grading's."""
    articles = (article,) if isinstance(article, Article) else tuple(article or ())
    texts, fitted = [gold.prompt_text() for gold in articles], None
    calls, raws, reasons = [], [], []
    for attempt in range(ATTEMPTS):
        try:  # a retry sends the articles as far as the first attempt had to cut them
            fitted = chat_fitting_all(llm, "judge", texts, lambda cut: dict(
                messages=judge_messages(question, answer, cut),
                tools=[GRADE_TOOL],
                tool_choice="submit_grade", temperature=0.0, max_tokens=JUDGE_MAX_TOKENS,
                attempt=first_attempt + attempt), halved=fitted.halvings if fitted else 0)
        except ContextTooLong as err:
            reasons.append(f"{'article' if len(articles) < 2 else 'articles'} {err}")
            break
        texts = [text[:fitted.chars] for text in texts]
        calls.append(fitted.response)
        raws.append(fitted.response.tool_arguments)
        try:
            truthfulness, relevance, why = parse_grade(fitted.response)
        except GradeParseError as err:
            reasons.append(str(err))
            continue
        return Grade(truthfulness, relevance, raw=raws, context_cut=fitted.cut, reason=why), calls
    return Grade(None, None, unscored_reason="; ".join(reasons), raw=raws,
                 context_cut=fitted.cut if fitted else None), calls


def parse_grade(response: LLMResponse) -> tuple[int, int, str | None]:
    """The two ratings and the reason (None if none usable), or GradeParseError saying exactly
    what is wrong with the ratings."""
    try:
        arguments = tool_arguments(response, GRADE_TOOL["function"]["name"])
    except ReplyError as err:
        raise GradeParseError(str(err)) from None
    truthfulness, relevance = (_rating(arguments, name) for name in FIELDS)
    return truthfulness, relevance, grade_reason(arguments.get("reason"))


def grade_reason(value: object) -> str | None:
    """The judge's reason as one line of at most REASON_CHARS characters; None when it gave no
    text with a word in it. A bad reason is dropped or cut, never a reason to leave the grade
    unscored."""
    if not isinstance(value, str) or not any(char.isalpha() for char in value):
        return None
    line = " ".join(value.split())
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS - 1] + "…"


def _rating(arguments: dict[str, Any], name: str) -> int:
    if name not in arguments:
        raise GradeParseError(f"missing field {name!r}")
    value = arguments[name]
    # bool is an int in Python; a judge that says `true` has not given a rating.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GradeParseError(f"{name} is not a number: {value!r}")
    if not math.isfinite(value) or value != int(value):
        raise GradeParseError(f"{name} is not a whole number: {value!r}")
    if not 1 <= value <= 5:
        raise GradeParseError(f"{name} out of range 1..5: {value!r}")
    return int(value)


class Judge:
    """The judge as a scorer (harness/scoring/__init__.py): what `freshrag score --scorers judge`
    asks, repeat k from attempt k * ATTEMPTS on, so that every repeat is its own cache entry and
    seed. A run's own grading stays in samples.jsonl (`grade`)."""

    name = "judge"
    role = "judge"
    needs = ("article",)
    metrics = FIELDS

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult:
        verdict, _ = grade(llm, item.question, item.answer, item.gold_articles(),
                           first_attempt=item.repeat * ATTEMPTS)
        if verdict.unscored_reason is not None:  # not `scored`, in a form mypy narrows
            return unscored(verdict.unscored_reason, context_cut=verdict.context_cut)
        return ScoreResult("scored", {name: getattr(verdict, name) for name in FIELDS},
                           {"context_cut": verdict.context_cut, "reason": verdict.reason})

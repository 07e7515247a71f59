"""The both-needed check of a question written from two articles
(docs/building.md#multi-hop-questions): kept only when the answer model, given all its gold
articles, answers it, and, given any one of them alone, does not.

Each answer is the `answer` role's, with the articles as extracts headed by their titles (the
RAG prompt the systems answer with, harness/core/answering.py), each article cut to an equal
share of the paper's 15,000 characters, the same cut alone as together, and halved together if the
model's window needs it. Whether an answer answers is the `judge` role's truthfulness, 1 to 5,
against the question's reference answer, by a forced `check_answer` call (4 or more answers it).
The calls stop at the first that decides: not answered with all articles, or answered with one.
A judge reply that cannot be parsed (after one more attempt) leaves the question unchecked, and
an unchecked question is not kept: a filter that could not look lets nothing through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from freshrag.builders.forced import forced_call
from freshrag.builders.labels.prompts import messages
from freshrag.core.answering import ANSWER_MAX_TOKENS, RAG_PROMPT
from freshrag.core.types import ARTICLE_CHARS, LLM
from freshrag.llm.errors import ContextTooLong
from freshrag.llm.fitting import chat_fitting
from freshrag.llm.toolcall import ReplyError

ANSWERED_AT = 4  # truthfulness from which an answer counts as answering (as the report's share)
CHECK_MAX_TOKENS = 64  # one small integer
SCALE = [1, 2, 3, 4, 5]
# Why a written question is not kept, as the funnel counts it.
NOT_WITH_ALL = "not_answered_with_all"
BY_ONE = "answered_by_one_article"
UNCHECKED = "check_unscored"
TOO_LONG = "too_long"

CHECK_PROMPT = (
    "You check a chatbot's answer to a question against the reference answer. Rate its "
    "truthfulness from 1 to 5: 5 if it gives the reference answer (in any words), 1 if it gives "
    "another answer, none, or says that it does not know. Call the function check_answer."
)
CHECK_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "check_answer",
        "description": "Submit how truthfully the answer gives the reference answer.",
        "parameters": {
            "type": "object",
            "properties": {
                # enum as well as the bounds: grammar-constrained servers honour enum only
                "truthfulness": {"type": "integer", "minimum": 1, "maximum": 5, "enum": SCALE,
                                 "description": "5 = gives the reference answer, 1 = does not"},
            },
            "required": ["truthfulness"],
        },
    },
}


@dataclass
class Check:
    """The verdict on one question (`dropped` None: kept) and every answer it took."""

    dropped: str | None = None
    reason: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"dropped": self.dropped, "reason": self.reason, "steps": self.steps}


def check(llm: LLM, question: str, reference: str, golds: list[tuple[str, str]],
          walked: bool = False) -> Check:
    """Answer `question` with all of `golds` ((title, content) in hop order), then with each
    alone, each answer judged against `reference`; stops at the first that decides, unless
    `walked` (the dry run, whose made-up grades decide nothing: it counts every call)."""
    verdict = Check()
    for articles in [golds, *([gold] for gold in golds)]:
        step = answer_and_judge(llm, question, reference, articles)
        verdict.steps.append(step)
        together = len(articles) == len(golds)
        if step["truthfulness"] is None:
            verdict.dropped = TOO_LONG if step["too_long"] else UNCHECKED
            verdict.reason = step["reason"]
        elif together and step["truthfulness"] < ANSWERED_AT:
            verdict.dropped = NOT_WITH_ALL
        elif not together and step["truthfulness"] >= ANSWERED_AT:
            verdict.dropped, verdict.reason = BY_ONE, f"answered from {articles[0][0]!r} alone"
        if verdict.dropped and not walked:
            break
    return verdict


def answer_and_judge(llm: LLM, question: str, reference: str,
                     articles: list[tuple[str, str]]) -> dict[str, Any]:
    """One answer with `articles` and its truthfulness (None, with the reason, if none)."""
    step: dict[str, Any] = {"articles": [title for title, _ in articles], "answer": None,
                            "truthfulness": None, "reason": None, "raw": [], "too_long": False}
    try:
        answer = answer_with(llm, question, articles)
    except ContextTooLong as err:
        return {**step, "too_long": True, "reason": f"articles {err}"}
    graded = forced_call(llm, "judge", CHECK_TOOL, lambda _: messages(
        CHECK_PROMPT, f"Question: {question}\n\nReference answer: {reference}\n\n"
                      f"Chatbot's answer: {answer}"), _truthfulness, max_tokens=CHECK_MAX_TOKENS)
    return {**step, "answer": answer, "truthfulness": graded.value, "reason": graded.reason,
            "raw": graded.raw}


def answer_with(llm: LLM, question: str, articles: list[tuple[str, str]]) -> str:
    """The answer model's reply given `articles` as extracts, each cut to its share."""
    share = ARTICLE_CHARS // 2
    texts = [f"Title: {title}\n\n{content}"[:share] for title, content in articles]
    longest = max(texts, key=len)
    fitted = chat_fitting(llm, "answer", longest, lambda cut: dict(
        messages=[{"role": "system", "content": RAG_PROMPT.format(
            extracts="\n\n".join(text[:len(cut)] for text in texts))},
                  {"role": "user", "content": question}],
        max_tokens=ANSWER_MAX_TOKENS))
    return " ".join((fitted.response.text or "").split())


def _truthfulness(values: dict[str, Any]) -> int:
    value = values.get("truthfulness")
    if isinstance(value, bool) or not isinstance(value, int) or value not in SCALE:
        raise ReplyError(f"truthfulness is {value!r}, not a whole number from 1 to 5")
    return value

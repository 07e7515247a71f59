"""Statements and their support, shared by faithfulness and claims (docs/scoring.md#scorers): one
call splits a text into short self-contained
statements, another says for each numbered statement whether a source text supports it.

Both are forced function calls parsed strictly: a list that is not strings, or verdicts that are
not exactly one true/false per statement, is a ReplyError for the scorer to record as unscored.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from freshrag.core.types import LLM, LLMResponse
from freshrag.llm.fitting import chat_fitting_all
from freshrag.scoring.base import (
    FLAG_MAX_TOKENS,
    LIST_MAX_TOKENS,
    ReplyError,
    arguments,
    flag_list,
    forced,
    numbered,
    text_list,
    tool,
)

STATEMENTS_TOOL = tool("submit_statements", "Submit the statements.", {
    "statements": {"type": "array", "items": {"type": "string"},
                   "description": "short factual statements, each understandable on its own"}})
VERDICTS_TOOL = tool("submit_verdicts", "Submit one verdict per numbered statement, in order.", {
    "supported": {"type": "array", "items": {"type": "boolean"},
                  "description": "true if the source supports the statement, else false"}})

SPLIT_PROMPT = (
    "Break the text you are given into short factual statements. Each statement must make "
    "sense on its own (replace pronouns by what they refer to) and state one fact. Leave out "
    "greetings, hedges and statements that one does not know something. Submit them by calling "
    "submit_statements; submit an empty list if the text states no fact.")
KEY_CLAIMS_PROMPT = (
    "You are given a question and a source text. List the facts of the source that a complete "
    "answer to the question must state, as short statements that each make sense on their own. "
    "Submit them by calling submit_statements.")
SUPPORT_PROMPT = (
    "You are given a source text and numbered statements. For each statement, decide whether "
    "the source supports it: true only if the source states it or it follows directly from the "
    "source; false if the source contradicts it or says nothing about it. Call submit_verdicts "
    "with one true/false per statement, in the statements' order.")

# Verdicts are one short boolean per statement; lists of statements get LIST_MAX_TOKENS.
VERDICT_TOKENS_PER_STATEMENT = 8


def split(llm: LLM, role: str, text: str, repeat: int) -> list[str]:
    """The text's statements (maybe none)."""
    response = forced(llm, role, SPLIT_PROMPT, f"Text:\n{text}", STATEMENTS_TOOL,
                      LIST_MAX_TOKENS, repeat)
    return text_list(arguments(response, STATEMENTS_TOOL)["statements"], "statements")


def key_claims(llm: LLM, role: str, question: str, source: str | Sequence[str],
               repeat: int) -> list[str]:
    """The facts of `source` (a text, or several: a multi-article question's gold articles) a
    complete answer to `question` must state."""
    response = about(llm, role, KEY_CLAIMS_PROMPT, source,
                     lambda cut: f"Question: {question}\n\nSource:\n{cut}",
                     STATEMENTS_TOOL, LIST_MAX_TOKENS, repeat)
    return text_list(arguments(response, STATEMENTS_TOOL)["statements"], "statements")


def supported(llm: LLM, role: str, statements: list[str], source: str | Sequence[str],
              repeat: int) -> list[bool]:
    """One verdict per statement: does `source` support it? Needs at least one statement."""
    if not statements:
        raise ValueError("no statements to check")
    listed = numbered(statements)
    response = about(llm, role, SUPPORT_PROMPT, source,
                     lambda cut: f"Source:\n{cut}\n\nStatements:\n{listed}", VERDICTS_TOOL,
                     FLAG_MAX_TOKENS + VERDICT_TOKENS_PER_STATEMENT * len(statements), repeat)
    return flag_list(arguments(response, VERDICTS_TOOL)["supported"], len(statements),
                     "supported")


def about(llm: LLM, role: str, system: str, source: str | Sequence[str],
          user: Callable[[str], str], spec: dict[str, Any], max_tokens: int,
          repeat: int) -> LLMResponse:
    """A forced call about a source text (a gold article, retrieved extracts) or several (a
    multi-article question's gold articles, each cut alike and sent one after the other), the
    source halved to fit the model's window if the endpoint refuses it (`chat_fitting_all`, the
    judge's rule). Raises ContextTooLong if even a quarter does not fit: the score pass records
    it unscored."""
    texts = [source] if isinstance(source, str) else list(source)
    return chat_fitting_all(llm, role, texts, lambda cuts: dict(
        messages=[{"role": "system", "content": system},
                  {"role": "user", "content": user("\n\n".join(cuts))}],
        tools=[spec], tool_choice=spec["function"]["name"], temperature=0.0,
        max_tokens=max_tokens, attempt=repeat)).response


__all__ = ["ReplyError", "split", "key_claims", "supported"]

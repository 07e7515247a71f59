"""Answering prompts shared by the systems (section IV): one place, so that every strategy asks
the same question in the same words and differs only in the context it adds."""

from __future__ import annotations

from typing import Any

from harness.types import Question

ANSWER_MAX_TOKENS = 512

ANSWER_PROMPT = "You are a helpful assistant. Answer the user's question accurately and concisely."

ARTICLE_PROMPT = (
    "You are a helpful assistant. Answer the user's question accurately and concisely, using the "
    "Wikipedia article below, which is headed by its title.\n\n{article}"
)


def answer_messages(question: Question, system_prompt: str = ANSWER_PROMPT) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": question.text}]

# Every answering prompt, hashed into each run's manifest.
PROMPTS = {"answer": ANSWER_PROMPT, "article": ARTICLE_PROMPT}

"""The builder's prompts (section III.A): the recency classifier and the question writers.
Recorded in the dataset's manifest, so that a dataset says how it was made."""

from __future__ import annotations

import json
from typing import Any

from freshrag.core.types import (
    ARTICLE_CHARS,  # title + text handed to the classifier, as in the paper
)
from freshrag.llm.toolcall import line_of_text, room_for

RECENCY_MAX_TOKENS = 128
QUESTION_MAX_TOKENS = 200
FORM_CHARS = 300  # a grounded question, one line
FORM_MAX_TOKENS = room_for(FORM_CHARS)

RECENCY_PROMPT = (
    "You decide whether a Wikipedia article is mostly about things that happened after "
    "{cutoff}. Read the article, then call the function report_recency: true if most of the "
    "information in it concerns events after {cutoff}, false otherwise."
)

RECENCY_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "report_recency",
        "description": "Report whether most of the article is about events after the cutoff date.",
        "parameters": {
            "type": "object",
            "properties": {
                "mostly_after_cutoff": {
                    "type": "boolean",
                    "description": "true if most of the article's information is about events "
                                   "after the cutoff date"},
            },
            "required": ["mostly_after_cutoff"],
        },
    },
}

QUESTION_PROMPTS = {
    # The paper's: a creative question about the contents of the text.
    "creative": (
        "Below is a Wikipedia article. Write one creative question about its contents that the "
        "article answers. Reply with the question only."
    ),
    # The paper's suggestion for a harder set: ask about what happened after the cutoff.
    "recent": (
        "Below is a Wikipedia article. Write one question that the article answers about "
        "something that happened after {cutoff}, so that it cannot be answered from knowledge "
        "of the world up to {cutoff}. Reply with the question only."
    ),
}

# `--style grounded` (builders/styles/grounded.py): one text form of a database query per call.
GROUNDED_PROMPT = (
    "You write one question that a person would ask to get exactly the answer of a database "
    "query over facts from Wikipedia infoboxes. The user gives the query in plain words and as "
    "SQL. The question must ask for that answer and nothing else, name the subject as given, and "
    "never state the answer. {instruction} Call the function write_question with the question."
)

WRITE_QUESTION_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "write_question",
        "description": "Submit the question that asks for the query's answer.",
        "parameters": {
            "type": "object",
            "properties": {"question": line_of_text(FORM_CHARS) | {"description": "the question"}},
            "required": ["question"],
        },
    },
}

# `--style changed --rewrite-sentences` (builders/styles/changed_sentences.py): a sentence
# reworded since the cutoff, rewritten as a fact with an old and a new value.
FACT_QUESTION_CHARS, FACT_VALUE_CHARS = 300, 200
REWRITE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "write_changed_fact",
        "description": "Submit the fact that changed between the two sentences.",
        "parameters": {
            "type": "object",
            "properties": {
                "question": line_of_text(FACT_QUESTION_CHARS) | {
                    "description": "a question naming the subject that asks for the fact's "
                                   "current value and states neither value"},
                "value_then": line_of_text(FACT_VALUE_CHARS) | {
                    "description": "the value as the old sentence gives it, in its words"},
                "value_now": line_of_text(FACT_VALUE_CHARS) | {
                    "description": "the value as the new sentence gives it, in its words"}},
            "required": ["question", "value_then", "value_now"],
        },
    },
}
REWRITE_PROMPT = (
    "You are given two versions of a sentence from the Wikipedia article about a subject: as it "
    "read at {cutoff}, and as it reads now. Find the fact whose value changed between them. "
    "Write one question that names the subject and asks for the fact's current value without "
    "stating either value, and give the value as the old sentence states it (value_then) and as "
    "the new sentence states it (value_now), each copied from its sentence. Call "
    "write_changed_fact.")
REWRITE_MAX_TOKENS = room_for(FACT_QUESTION_CHARS, FACT_VALUE_CHARS, FACT_VALUE_CHARS)

PROMPTS = {"recency": RECENCY_PROMPT, "recency_tool": json.dumps(RECENCY_TOOL),
           **{f"question_{style}": text for style, text in QUESTION_PROMPTS.items()},
           "grounded": GROUNDED_PROMPT, "grounded_tool": json.dumps(WRITE_QUESTION_TOOL),
           "changed_sentences": REWRITE_PROMPT, "changed_sentences_tool": json.dumps(REWRITE_TOOL)}


def article_text(title: str, content: str) -> str:
    return f"Title: {title}\n\n{content}"[:ARTICLE_CHARS]


def recency_messages(title: str, content: str, cutoff: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": RECENCY_PROMPT.format(cutoff=cutoff)},
            {"role": "user", "content": article_text(title, content)}]


def question_messages(title: str, content: str, style: str, cutoff: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": QUESTION_PROMPTS[style].format(cutoff=cutoff)},
            {"role": "user", "content": article_text(title, content)}]

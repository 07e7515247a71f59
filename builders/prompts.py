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

PROMPTS = {"recency": RECENCY_PROMPT, "recency_tool": json.dumps(RECENCY_TOOL),
           **{f"question_{style}": text for style, text in QUESTION_PROMPTS.items()},
           "grounded": GROUNDED_PROMPT, "grounded_tool": json.dumps(WRITE_QUESTION_TOOL)}


def article_text(title: str, content: str) -> str:
    return f"Title: {title}\n\n{content}"[:ARTICLE_CHARS]


def recency_messages(title: str, content: str, cutoff: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": RECENCY_PROMPT.format(cutoff=cutoff)},
            {"role": "user", "content": article_text(title, content)}]


def question_messages(title: str, content: str, style: str, cutoff: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": QUESTION_PROMPTS[style].format(cutoff=cutoff)},
            {"role": "user", "content": article_text(title, content)}]

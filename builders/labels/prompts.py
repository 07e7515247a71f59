"""Prompts and function schemas of the labelled question builder (docs/methods.md#question-labels):
the statement extraction (theme, facts, summaries, conclusions), the question writers, the
critique and the labeller. Our own wording; recorded in the dataset's manifest beside the
builder's other prompts, so that a dataset says how it was made.
"""

from __future__ import annotations

import json
from typing import Any

from freshrag.core.types import LABELS
from freshrag.llm.toolcall import line_of_text

SUMMARIES = CONCLUSIONS = 3  # merged and derived statements asked per article
MAX_FACTS = 6
CRITERIA = ("stand_alone", "specificity", "question_grounding", "answer_grounding")
SCALE = [1, 2, 3, 4, 5]

THEME_PROMPT = (
    "Read the Wikipedia article below and say in one sentence what it is mainly about. "
    "Give the sentence by calling report_theme.")

FACTS_PROMPT = (
    "Read the Wikipedia article below, whose main subject is: {theme}\n"
    "List up to {max_facts} facts the article states. Each fact is one short sentence holding a "
    "single piece of information (a name, a date, a number, an event), written so that it is "
    "clear without the article: name the subject rather than writing 'it' or 'the article'. "
    "Give the list by calling report_statements.")

SUMMARIES_PROMPT = (
    "Below are the main subject of a Wikipedia article and facts taken from it. Write {n} summary "
    "sentences, each bringing together two or more of the facts about one side of the subject, so "
    "that an answer giving only one of those facts would be incomplete. Give them by calling "
    "report_statements.")

CONCLUSIONS_PROMPT = (
    "Below are the main subject of a Wikipedia article and facts taken from it. Write {n} "
    "sentences that none of the facts says outright but that follow from them by a simple step "
    "of reasoning: a comparison, a difference between two dates or numbers, a consequence. Give "
    "them by calling report_statements.")

QUESTION_PROMPT = (
    "You write a quiz question about a Wikipedia article's subject. The statement below must be "
    "the exact answer to your question, and nothing vaguer or different should answer it. The "
    "question must make sense on its own to someone who never saw the article: name the subject, "
    "and never refer to 'the article' or 'the statement'. Do not copy the statement word for "
    "word. Give the question by calling write_question.")

UNANSWERABLE_PROMPT = (
    "You write a quiz question about the subject of the Wikipedia article below that a curious "
    "reader might ask but that the article cannot answer: the answer is neither written in it "
    "nor inferable from it. Stay on the article's subject, make the question clear on its own "
    "(name the subject), and ask something that does have a definite answer in the world. Give "
    "the question by calling write_question.")

CRITIQUE_PROMPT = (
    "You review a question written for a reading test on a Wikipedia article, with the answer "
    "its author intended. Rate it from 1 (poor) to 5 (excellent) on each criterion:\n"
    "stand_alone: the question is clear to someone who has not seen the article;\n"
    "specificity: it asks for something particular, not so broad that many answers would fit;\n"
    "question_grounding: the article answers the question;\n"
    "answer_grounding: the article supports the intended answer.\n"
    "Give the four ratings by calling rate_question.")

LABELLER_PROMPT = (
    "You sort questions by how a Wikipedia article answers them. Pick one label:\n"
    "fact_single: the article states the answer as one single piece of information (a name, a "
    "date, a number), which is either right or wrong;\n"
    "summary: the answer needs several pieces of information from the article put together, so "
    "that giving only some of them is partly right;\n"
    "reasoning: the article does not state the answer, but it follows from what the article says "
    "by a simple inference;\n"
    "unanswerable: the article neither states the answer nor lets one infer it.\n"
    "Give the label by calling assign_label.")


def _tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": list(properties)}}}


SENTENCE = line_of_text(240, min_chars=8)  # one sentence; its pattern bounds a small model


def _statements(max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": SENTENCE, "minItems": 1, "maxItems": max_items,
            "description": "one sentence each"}


THEME_TOOL = _tool("report_theme", "Report what the article is mainly about.",
                   {"theme": SENTENCE | {"description": "one sentence"}})
FACTS_TOOL = _tool("report_statements", "Report the statements.",
                   {"statements": _statements(MAX_FACTS)})
DERIVED_TOOL = _tool("report_statements", "Report the statements.",
                     {"statements": _statements(max(SUMMARIES, CONCLUSIONS))})
QUESTION_TOOL = _tool("write_question", "Submit the question.",
                      {"question": SENTENCE | {"description": "the question"}})
# enum as well as the bounds: grammar-constrained servers (llama.cpp) honour enum only
CRITIQUE_TOOL = _tool("rate_question", "Submit the four ratings of the question.", {
    name: {"type": "integer", "minimum": 1, "maximum": 5, "enum": SCALE} for name in CRITERIA})
LABEL_TOOL = _tool("assign_label", "Submit the label of the question.",
                   {"label": {"type": "string", "enum": list(LABELS)}})

PROMPTS = {"statements_theme": THEME_PROMPT, "statements_facts": FACTS_PROMPT,
           "statements_summaries": SUMMARIES_PROMPT,
           "statements_conclusions": CONCLUSIONS_PROMPT, "question_statement": QUESTION_PROMPT,
           "question_unanswerable": UNANSWERABLE_PROMPT, "critique": CRITIQUE_PROMPT,
           "labeller": LABELLER_PROMPT,
           "tool_theme": json.dumps(THEME_TOOL), "tool_facts": json.dumps(FACTS_TOOL),
           "tool_derived": json.dumps(DERIVED_TOOL), "tool_question": json.dumps(QUESTION_TOOL),
           "tool_critique": json.dumps(CRITIQUE_TOOL), "tool_labeller": json.dumps(LABEL_TOOL)}


def messages(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def facts_user(theme: str | None, facts: list[str]) -> str:
    listed = "\n".join(f"- {fact}" for fact in facts)
    return f"Main subject: {theme or '(not known)'}\n\nFacts:\n{listed}"

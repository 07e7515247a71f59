"""Answering prompts shared by the systems (section IV): one place, so that every strategy asks
the same question in the same words and differs only in the context it adds. The RAG prompt and
the answer's token bound, which the builders answer with too, are in harness/core/answering.py."""

from __future__ import annotations

import json
from typing import Any

from freshrag.core.answering import RAG_PROMPT
from freshrag.core.types import Question
from freshrag.llm.toolcall import line_of_text

# A forced yes/no call needs a few dozen tokens; the bound keeps a grammar-constrained local model
# from filling its whole context with whitespace inside the JSON.
DECISION_MAX_TOKENS = 128

ANSWER_PROMPT = "You are a helpful assistant. Answer the user's question accurately and concisely."

ARTICLE_PROMPT = (
    "You are a helpful assistant. Answer the user's question accurately and concisely, using the "
    "Wikipedia article below, which is headed by its title.\n\n{article}"
)


# The oracle's prompt for a multi-article question: its gold articles, one after the other
ARTICLES_PROMPT = (
    "You are a helpful assistant. Answer the user's question accurately and concisely, using the "
    "Wikipedia articles below, each headed by its title.\n\n{articles}"
)


# The boolean agent's one function (section IV): a single boolean, offered with tool choice "auto".
RETRIEVE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "retrieve_information",
        "description": "Fetch more information about the question from a vector database of "
                       "Wikipedia articles. Only call this if it is needed to answer well, "
                       "as every retrieval costs tokens.",
        "parameters": {
            "type": "object",
            "properties": {"retrieve": {"type": "boolean",
                                        "description": "true to fetch information"}},
            "required": ["retrieve"],
        },
    },
}

BOOLEAN_PROMPT = (
    "You are a helpful assistant. Answer the user's question accurately and concisely. If you need "
    "more information to answer it, call the function retrieve_information; only call it if it is "
    "needed, to save tokens."
)

# The advanced boolean agent's forced question, asked after its first answer (section IV).
MORE_INFORMATION_QUESTION = "Could the last question have been answered better with more information?"
MORE_INFORMATION_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "more_information",
        "description": "Say whether the last question could have been answered better with more "
                       "information from a database of Wikipedia articles.",
        "parameters": {
            "type": "object",
            "properties": {"retrieve": {"type": "boolean", "description":
                                        "true if more information would have given a better answer"}},
            "required": ["retrieve"],
        },
    },
}

# Beyond the paper: the decision is anchored in time, so the model can tell fresh from known.
DATED_PROMPT = (
    "You are a helpful assistant. Today's date is {today}. Your knowledge ends at {cutoff}. If the "
    "user's question concerns anything that happened, appeared or changed after {cutoff}, call the "
    "function retrieve_information with retrieve set to true to fetch up-to-date information. "
    "Otherwise answer the question directly, accurately and concisely."
)

# Beyond the paper (docs/methods.md#retrieval-need-and-deciders): the `confidence` decider reads the
# probability of "yes" from the first token's log-probabilities, so the reply must start with it.
NEED_PROMPT = (
    "You decide whether the user's question can be answered well only by looking up documents "
    "(for example recent events or facts you may not know), or whether you can answer it from "
    "your own knowledge. Reply with one word: yes if documents must be looked up, no otherwise."
)
# The question again, with the ask last: SmolLM2-135M put "yes"/"no" among its first token's
# alternatives only when the ask followed the question (probed by hand on the embedded server).
NEED_QUESTION = ("Question: {question}\n\nMust documents be looked up to answer this question "
                 "well? Answer yes or no.")
NEED_MAX_TOKENS = 2  # the first token carries the decision; a second shows what followed
NEED_TOP_LOGPROBS = 20  # alternatives per token (the most OpenAI's API gives)

# The `self-check` decider: after answering, the model rates its own answer (forced call, 1..5).
SELF_CHECK_QUESTION = (
    "How confident are you that your last answer is correct and complete? Rate it from 1 (a "
    "guess) to 5 (certain) by calling the function rate_confidence."
)
SELF_CHECK_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "rate_confidence",
        "description": "Rate your confidence in your last answer.",
        "parameters": {
            "type": "object",
            # enum as well as the bounds: grammar-constrained servers (llama.cpp) honour enum only
            "properties": {"confidence": {"type": "integer", "minimum": 1, "maximum": 5,
                                          "enum": [1, 2, 3, 4, 5],
                                          "description": "1 = a guess, 5 = certain"}},
            "required": ["confidence"],
        },
    },
}

# Beyond the paper: HyDE retrieves with the embedding of a hypothetical answer.
HYDE_PROMPT = (
    "Write a short passage in the style of a Wikipedia article that answers the user's question. "
    "If you are not sure of the facts, write the most plausible passage you can."
)
HYDE_MAX_TOKENS = 256


# The agents (docs/methods.md#agents). ReAct's loop offers two tools with tool choice "auto";
# `search` comes first, as a dry run's scenario that decides for retrieval calls the first tool
# offered (docs/costs.md#dry-run). A reply in text instead of a call is the answer.
QUERY_CHARS = 200  # one line: a small model's query cannot run on until max_tokens
REACT_PROMPT = (
    "You are a helpful assistant. Answer the user's question accurately and concisely. You can "
    "search a database of Wikipedia articles with the function search, as often as you need and "
    "with queries of your own; each search returns extracts headed by the title of their article. "
    "If a search finds nothing useful, search again with other words. When you know the answer, "
    "give it with the function answer. Search only when it helps: every search costs tokens."
)
SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search a vector database of Wikipedia articles; returns the extracts "
                       "that match the query best.",
        "parameters": {
            "type": "object",
            "properties": {"query": {**line_of_text(QUERY_CHARS),
                                     "description": "what to look up: a few words or a question"}},
            "required": ["query"],
        },
    },
}
ANSWER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "answer",
        "description": "Give your final answer to the user's question.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the answer"}},
            "required": ["text"],
        },
    },
}
REACT_TOOLS = [SEARCH_TOOL, ANSWER_TOOL]
NO_EXTRACTS = "The search found no extracts."
# What the agent is told after a reply it could not use (no known function, broken arguments)
UNUSABLE_REPLY = ("That reply could not be used ({why}). Call search with a query, or answer "
                  "with your answer.")

# IRCoT: one forced call writes the next sentence of reasoning and says whether to search with it.
THOUGHT_CHARS = 300
REASON_QUESTION = (
    "Think step by step towards the answer to the question, using the extracts above. Your "
    "reasoning so far:\n{thoughts}\n\nWrite the next sentence of your reasoning by calling the "
    "function reason_step, and say whether to search the database again with that sentence: "
    "search_again false once the reasoning states the answer."
)
REASON_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "reason_step",
        "description": "The next sentence of reasoning, and whether to search with it.",
        "parameters": {
            "type": "object",
            "properties": {
                "thought": {**line_of_text(THOUGHT_CHARS),
                            "description": "one sentence of reasoning"},
                "search_again": {"type": "boolean",
                                 "description": "true to search the database with the sentence"},
            },
            "required": ["thought", "search_again"],
        },
    },
}
NO_THOUGHTS = "(none yet)"

# Self-Ask: one forced call splits the question; each sub-question is answered with its own search.
DECOMPOSE_PROMPT = (
    "Split the user's question into the simpler sub-questions that must be answered first to "
    "answer it, each about one fact that can be looked up, by calling the function "
    "sub_questions. If the question needs no sub-questions, give an empty list."
)
SUB_QUESTIONS_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "sub_questions",
        "description": "The sub-questions to answer first, in order; an empty list if none.",
        "parameters": {
            "type": "object",
            # maxItems follows the agent's bound (systems/decompose.py sub_questions_tool)
            "properties": {"sub_questions": {"type": "array",
                                             "items": line_of_text(QUERY_CHARS)}},
            "required": ["sub_questions"],
        },
    },
}
# Each sub-question is asked with the question it serves: the one answer it needs, and no two
# sub-questions' requests alike.
SUB_QUESTION = ("Sub-question {number} on the way to answering \"{question}\": {sub}\n\nAnswer the "
                "sub-question in one short sentence.")
SUB_ANSWERS = ("Answers found to sub-questions of the question:\n\n{notes}\n\nAnswer the "
               "question with them and the extracts.")

# Adaptive-RAG: one forced decision routes the question; booleans, so that "no retrieval" and
# "the agent" are a dry run's two scenarios.
ROUTER_PROMPT = (
    "Decide how the user's question is best answered: from your own knowledge, with one search "
    "of a database of Wikipedia articles, or with several searches (a question that needs facts "
    "from more than one article, or from what a first search finds). Call the function "
    "route_question: retrieve true if a search is needed, multi_step true if several are."
)
ROUTE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "route_question",
        "description": "How to answer the question: without a search, with one, or with several.",
        "parameters": {
            "type": "object",
            "properties": {
                "retrieve": {"type": "boolean", "description": "true if a search is needed"},
                "multi_step": {"type": "boolean",
                               "description": "true if several searches are needed"},
            },
            "required": ["retrieve", "multi_step"],
        },
    },
}


def answer_messages(question: Question, system_prompt: str = ANSWER_PROMPT) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": question.text}]

# Every answering prompt, hashed into each run's manifest.
PROMPTS = {"answer": ANSWER_PROMPT, "article": ARTICLE_PROMPT, "articles": ARTICLES_PROMPT,
           "rag": RAG_PROMPT,
           "boolean": BOOLEAN_PROMPT,
           "retrieve_tool": json.dumps(RETRIEVE_TOOL), "more_information": MORE_INFORMATION_QUESTION,
           "more_information_tool": json.dumps(MORE_INFORMATION_TOOL), "dated": DATED_PROMPT,
           "hyde": HYDE_PROMPT, "need": NEED_PROMPT, "need_question": NEED_QUESTION, "self_check": SELF_CHECK_QUESTION,
           "self_check_tool": json.dumps(SELF_CHECK_TOOL),
           "react": REACT_PROMPT, "react_tools": json.dumps(REACT_TOOLS),
           "no_extracts": NO_EXTRACTS, "no_thoughts": NO_THOUGHTS,
           "unusable_reply": UNUSABLE_REPLY,
           "reason_question": REASON_QUESTION, "reason_tool": json.dumps(REASON_TOOL),
           "decompose": DECOMPOSE_PROMPT, "sub_questions_tool": json.dumps(SUB_QUESTIONS_TOOL),
           "sub_question": SUB_QUESTION, "sub_answers": SUB_ANSWERS,
           "router": ROUTER_PROMPT, "route_tool": json.dumps(ROUTE_TOOL)}

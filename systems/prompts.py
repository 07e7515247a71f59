"""Answering prompts shared by the systems (section IV): one place, so that every strategy asks
the same question in the same words and differs only in the context it adds."""

from __future__ import annotations

import json
from typing import Any

from freshrag.core.types import Question

ANSWER_MAX_TOKENS = 512
# A forced yes/no call needs a few dozen tokens; the bound keeps a grammar-constrained local model
# from filling its whole context with whitespace inside the JSON.
DECISION_MAX_TOKENS = 128

ANSWER_PROMPT = "You are a helpful assistant. Answer the user's question accurately and concisely."

ARTICLE_PROMPT = (
    "You are a helpful assistant. Answer the user's question accurately and concisely, using the "
    "Wikipedia article below, which is headed by its title.\n\n{article}"
)


RAG_PROMPT = (
    "You are a helpful assistant. Answer the user's question accurately and concisely, using the "
    "extracts below. They come from Wikipedia articles; each extract is headed by the title of its "
    "article.\n\n{extracts}"
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


def answer_messages(question: Question, system_prompt: str = ANSWER_PROMPT) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": question.text}]

# Every answering prompt, hashed into each run's manifest.
PROMPTS = {"answer": ANSWER_PROMPT, "article": ARTICLE_PROMPT, "rag": RAG_PROMPT,
           "boolean": BOOLEAN_PROMPT,
           "retrieve_tool": json.dumps(RETRIEVE_TOOL), "more_information": MORE_INFORMATION_QUESTION,
           "more_information_tool": json.dumps(MORE_INFORMATION_TOOL), "dated": DATED_PROMPT,
           "hyde": HYDE_PROMPT, "need": NEED_PROMPT, "need_question": NEED_QUESTION, "self_check": SELF_CHECK_QUESTION,
           "self_check_tool": json.dumps(SELF_CHECK_TOOL)}

"""A scripted fake model for unit tests: the `LLM` Protocol in process, no HTTP; and fakes of
the retrieval index (`FakeRetriever`) and of an embedding model (`BagOfWordsEmbedder`).

Each reply in the script is consumed in order; a reply is a string (text), a `ToolReply`
(a tool call with raw argument text, possibly broken on purpose) or an exception to raise.

For the fake HTTP server (tests/support/fake_openai_server.py): the environment that points every
role at it (`use_endpoint`, with the key `SECRET`) or at no endpoint at all (`clean_env`), replies
a judge and the scorers would give (`grade_call`, `discerning_judge`, `scorers_reply`), replies
that differ call by call (`varying_reply`: epochs that never agree by chance), and
`is_call_of`, which tells which finished pair a request belongs to. `held` is another process
holding a run directory's lock.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from freshrag.core.types import LLMResponse, RetrievedChunk, Usage
from freshrag.scoring import probes
from freshrag.scoring.judge import JUDGE_PROMPT
from freshrag.systems.prompts import ANSWER_PROMPT
from tests import ROOT
from tests.support.fake_openai_server import bag_of_words_vector, default_reply, forced_tool_name


@dataclass(frozen=True)
class ToolReply:
    name: str
    arguments: str


@dataclass(frozen=True)
class LogprobReply:
    """A text reply with per-token log-probabilities (LLMResponse.logprobs), or None: an
    endpoint that gave none."""

    text: str
    logprobs: list[dict[str, Any]] | None


# The key the tests give their endpoints: no file a command writes, nor any message, may hold it.
SECRET = "sk-test-secret-do-not-write"


def use_endpoint(monkeypatch, base_url: str, api_key: str, model: str = "fake-model") -> None:
    """Every role (embeddings too, which stay local until named) on one endpoint, as a user's
    environment would set it."""
    monkeypatch.setenv("FRESHRAG_BASE_URL", base_url)
    monkeypatch.setenv("FRESHRAG_API_KEY", api_key)
    monkeypatch.setenv("FRESHRAG_MODEL", model)
    monkeypatch.setenv("FRESHRAG_EMBEDDINGS_MODEL", model)


def clean_env() -> dict[str, str]:
    """This process's environment without any endpoint: freshrag must start its own local
    server."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}


class ScriptedLLM:
    def __init__(self, script: list[Any], usage: Usage = Usage(10, 5)):
        self.script = list(script)
        self.usage = usage
        self.requests: list[dict[str, Any]] = []

    def chat(self, role: str, messages: list[dict[str, Any]], *, tools=None, tool_choice=None,
             temperature: float = 0.0, max_tokens: int | None = None,
             attempt: int = 0, top_logprobs: int | None = None) -> LLMResponse:
        self.requests.append({"role": role, "messages": messages, "tools": tools,
                              "tool_choice": tool_choice, "temperature": temperature,
                              "max_tokens": max_tokens, "attempt": attempt,
                              "top_logprobs": top_logprobs})
        if not self.script:
            raise AssertionError(f"unexpected extra {role} call")
        reply = self.script.pop(0)
        if isinstance(reply, Exception):
            raise reply
        logprobs = reply.logprobs if isinstance(reply, LogprobReply) else None
        if isinstance(reply, LogprobReply):
            reply = reply.text
        text, name, arguments = (None, reply.name, reply.arguments) if isinstance(reply, ToolReply) \
            else (reply, None, None)
        return LLMResponse(role=role, model="scripted", text=text, tool_name=name,
                           tool_arguments=arguments, usage=self.usage, latency_s=0.0,
                           cache_hit=False, messages=messages, logprobs=logprobs)


class FakeRetriever:
    """Returns the same chunks for every query and remembers the queries."""

    def __init__(self, chunks: list[RetrievedChunk]):
        self.chunks = chunks
        self.queries: list[str] = []

    def retrieve(self, query: str) -> list[RetrievedChunk]:
        self.queries.append(query)
        return list(self.chunks)

    def record(self) -> dict[str, Any]:
        return {"fake": True}


class BagOfWordsEmbedder:
    """A deterministic embedder for index tests; `fail_after` batches, it raises (a kill)."""

    name = "bag-of-words"
    where = "the bag-of-words test embedder"

    def __init__(self, dim: int = 64, fail_after: int | None = None):
        self.dim = dim
        self.fail_after = fail_after
        self.batches = 0
        self.texts = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.fail_after is not None and self.batches >= self.fail_after:
            raise KeyboardInterrupt("simulated kill mid-build")
        self.batches += 1
        self.texts += len(texts)
        return [bag_of_words_vector(text, self.dim) for text in texts]


def is_call_of(request, row):
    """Whether an HTTP request belongs to the given finished pair (its answer or judge call)."""
    messages = request["messages"]
    if messages[0]["content"] == JUDGE_PROMPT:
        return messages[1]["content"].startswith(f"Query: {row['question']}\n\nChatbot's answer: {row['answer']}")
    is_baseline = messages[0]["content"] == ANSWER_PROMPT
    return messages[1]["content"] == row["question"] and is_baseline == (row["system"] == "baseline")


def grade_call(truthfulness: int, relevance: int) -> dict:
    arguments = json.dumps({"truthfulness": truthfulness, "relevance": relevance})
    return {"tool_call": {"name": "submit_grade", "arguments": arguments}}


def varying_reply() -> Callable[[dict], dict]:
    """A fake server's reply that differs by call count: the n-th answer is "answer n", the
    n-th grade cycles through the scale (thread-safe: pairs run at once)."""
    count = itertools.count(1)  # next() of a count is atomic under the GIL

    def reply(request: dict) -> dict:
        n = next(count)
        if request.get("tools"):
            return grade_call(1 + n % 5, 1 + (n // 5) % 5)
        return {"content": f"answer {n}"}

    return reply


def discerning_judge(request: dict) -> dict:
    """Grades as a working judge would: an answer found in the article is true, "I don't know"
    is irrelevant, anything else is false."""
    user = request["messages"][-1]["content"]
    answer = user.split("Chatbot's answer: ", 1)[1].split("\n\nWikipedia article:", 1)[0]
    article = user.split("Wikipedia article:\n", 1)[1]
    if answer == probes.ABSTAIN:
        return grade_call(3, 1)
    found = all(part.rstrip(".") in article for part in answer.split(". "))  # every sentence
    return grade_call(5, 5) if found else grade_call(1, 4)


def scorers_reply(request, malformed=()):
    """A plausible reply for each scorer's function (the judge's grade follows the request's
    seed); `malformed` functions get broken JSON; any other request, the default reply."""
    name = forced_tool_name(request)
    user = request["messages"][-1]["content"]
    if name in malformed:
        return {"tool_call": {"name": name, "arguments": "{\"oops\": "}}
    numbered = len(re.findall(r"^\d+\. ", user, re.MULTILINE))
    arguments = {
        "submit_statements": {"statements": ["The town has bridges."]},
        "submit_verdicts": {"supported": [True] * numbered},
        "submit_needed_sentences": {"needed": [1]},
        "submit_questions": {"questions": ["How many bridges does the town have?"]},
        "submit_abstention": {"abstained": False},
        # the grade follows the seed, so that two repeats of the judge can differ
        "submit_grade": {"truthfulness": 1 + request.get("seed", 0) % 5, "relevance": 3},
    }.get(name)
    return {"tool_call": {"name": name, "arguments": json.dumps(arguments)}} if arguments \
        else default_reply(request)


_HOLDER = """
import sys, time
from freshrag.core.rundir import locked
with locked(__import__("pathlib").Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


@contextlib.contextmanager
def held(directory: Path) -> Iterator[subprocess.Popen]:
    """Another process holding `directory`'s lock (harness/core/rundir.py) until the block ends."""
    process = subprocess.Popen([sys.executable, "-c", _HOLDER, str(directory)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "held"
        yield process
    finally:
        process.kill()
        process.wait()

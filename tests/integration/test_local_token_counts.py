"""The dry run's input count of a request to the embedded model equals the prompt tokens the
real server (llama.cpp, SmolLM2-135M) reports for it, on both runtimes
(harness/llm/local_tokens.py): with the prebuilt one (xllamacpp), both go through the adapter's
translation and llama.cpp's own template and vocabulary; with the source-built fallback
(llama-cpp-python), both render the request with its `chatml-function-calling` handler and
tokenize with SmolLM2's vocabulary. Three of the project's own requests, each kind of tool choice
once: an answer (no tools), the boolean agent's decision (tool choice "auto") and the judge
(forced).

Exact, not approximate: the only way the two could part is a model that, with tool choice
"auto", calls a function twice in one reply (the server then adds the prompts of both calls);
the decision prompt has one function and the dry run assumes one call.
"""

import os

import pytest

from freshrag.core.config import load_settings
from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.cost.estimate import MadeUpReply, counters
from freshrag.llm import local_tokens
from freshrag.llm.client import LLMClient
from freshrag.llm.local_server import GGUF_FILE, PREBUILT, RUNTIME_ENV, SOURCE, LocalServer
from freshrag.llm.tokens import TiktokenCounter
from freshrag.scoring.judge import GRADE_TOOL, judge_messages
from freshrag.systems.prompts import BOOLEAN_PROMPT, RETRIEVE_TOOL, answer_messages

pytestmark = pytest.mark.integration


def requests() -> list[tuple[str, list, dict]]:
    """(role, messages, options) of an answer, a decision and a judge call on an example
    question; the judge's article cut to 2,000 characters to keep the test short."""
    dataset = load_dataset_dir(example_dir())
    question = dataset.questions[0]
    article = dataset.articles[question.gold_title].prompt_text()[:2000]
    return [
        ("answer", answer_messages(question), {"max_tokens": 8}),
        ("decision", answer_messages(question, BOOLEAN_PROMPT),
         {"tools": [RETRIEVE_TOOL], "tool_choice": "auto", "max_tokens": 8}),
        ("judge", judge_messages(question, "It has two bridges.", article),
         {"tools": [GRADE_TOOL], "tool_choice": GRADE_TOOL["function"]["name"],
          "max_tokens": 32}),
    ]


@pytest.mark.parametrize("runtime, tokenizer", [
    pytest.param(PREBUILT, f"{GGUF_FILE} ({PREBUILT} adapter)", id="prebuilt"),
    pytest.param(SOURCE, f"{GGUF_FILE} (chatml-function-calling)", id="source-built"),
])
def test_dry_run_input_counts_equal_the_embedded_servers_prompt_tokens(monkeypatch, runtime,
                                                                        tokenizer):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}
    settings = load_settings(None, env)
    monkeypatch.setenv(RUNTIME_ENV, runtime)
    local_tokens.embedded.cache_clear()  # the counter of the runtime under test
    counted = []
    with LocalServer() as server:
        assert server.runtime == runtime
        client = LLMClient(settings, cache=None, local=server)
        for role, messages, options in requests():
            sent = client.chat(role, messages, **options)
            request, key = client.prepare(role, messages, **options)
            # the dry run's made-up reply takes the decision the model took: a message and a
            # function call are rendered with different endings
            dry = MadeUpReply(sent.tool_name is not None, {}, counters(client))(role, request, key)
            assert dry["tokenizer"] == tokenizer
            assert not sent.usage.estimated  # the server's own count
            tiktoken = TiktokenCounter(request["model"]).count_request(request)[0]
            counted.append((role, dry["usage"]["input"], sent.usage.input, tiktoken))
    # the figures docs/measurements.md#cost-estimates cites
    print(f"\n{runtime} (role, dry run, server, tiktoken):", counted)
    local_tokens.embedded.cache_clear()
    assert all(dry == served for _, dry, served, _ in counted), counted

"""The prebuilt embedded runtime (xllamacpp behind harness/llm/embedded_server.py) with the real
SmolLM2-135M: the judge's forced call and the boolean agent's automatic one come back as tool calls
whose arguments follow the function's schema (the grammar sees to it, whatever the 135M model
would rather write), plain and streamed requests pass through, and the server has its slots."""

import json
import os
import urllib.request

import openai
import pytest

from freshrag.core.config import load_settings
from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.llm.client import LLMClient
from freshrag.llm.local_server import PARALLEL_SLOTS, PREBUILT
from freshrag.scoring.judge import GRADE_TOOL, JUDGE_MAX_TOKENS, judge_messages
from freshrag.systems.prompts import BOOLEAN_PROMPT, RETRIEVE_TOOL, answer_messages

pytestmark = pytest.mark.integration


@pytest.fixture
def server(embedded_server):
    """The session's embedded server (tests/integration/conftest.py): the default runtime."""
    return embedded_server


@pytest.fixture
def client(server):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}
    return LLMClient(load_settings(None, env), cache=None, local=server)


def test_the_default_runtime_is_the_prebuilt_one_with_its_slots(server):
    assert server.runtime == PREBUILT and server.concurrency() == PARALLEL_SLOTS
    root = server.base_url.removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/props", timeout=30) as response:
        assert json.loads(response.read())["total_slots"] == PARALLEL_SLOTS


def test_the_judges_forced_calls_are_tool_calls_with_the_grades_fields(client):
    dataset = load_dataset_dir(example_dir())
    required = set(GRADE_TOOL["function"]["parameters"]["required"])
    for question in dataset.questions[:3]:
        article = dataset.articles[question.gold_title].prompt_text()[:3000]
        reply = client.chat("judge", judge_messages(question, "It was held in 2026.", article),
                            tools=[GRADE_TOOL], tool_choice=GRADE_TOOL["function"]["name"],
                            max_tokens=JUDGE_MAX_TOKENS)
        assert reply.tool_name == GRADE_TOOL["function"]["name"], reply.text
        arguments = json.loads(reply.tool_arguments)
        assert required <= set(arguments), arguments
        assert not reply.usage.estimated and reply.usage.input > 0


def test_automatic_tool_choice_gives_a_call_of_the_tool_or_text(client):
    dataset = load_dataset_dir(example_dir())
    schema = RETRIEVE_TOOL["function"]["parameters"]
    for question in dataset.questions[:3]:
        reply = client.chat("decision", answer_messages(question, BOOLEAN_PROMPT),
                            tools=[RETRIEVE_TOOL], tool_choice="auto", max_tokens=128)
        if reply.tool_name is None:
            assert reply.text.strip() and not reply.text.lstrip().startswith('{"tool_call"')
        else:
            assert reply.tool_name == RETRIEVE_TOOL["function"]["name"]
            assert set(schema.get("required", [])) <= set(json.loads(reply.tool_arguments))


def test_plain_and_streamed_requests_pass_through(server):
    sdk = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
    messages = [{"role": "user", "content": "Name a colour."}]
    whole = sdk.chat.completions.create(model="m", messages=messages, max_tokens=8,
                                        temperature=0)
    streamed = sdk.chat.completions.create(model="m", messages=messages, max_tokens=8,
                                           temperature=0, stream=True)
    pieces = [c.choices[0].delta.content or "" for c in streamed if c.choices]
    assert whole.choices[0].message.content and len(pieces) > 1
    assert whole.usage.completion_tokens <= 8

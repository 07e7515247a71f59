"""The dry run's token counters: the embedded model's requests rendered by llama-cpp-python's
own chat handler (harness/llm/local_tokens.py), every other model's counted by tiktoken, and the
estimate table naming which counted. The real tokenizer against the real server is in
tests/integration/test_local_token_counts.py; here a vocabulary that counts characters shows
which prompt the handler rendered for each kind of tool choice."""

import pytest
from llama_cpp.llama_chat_format import get_chat_completion_handler

from freshrag.cli.main import main
from freshrag.llm.local_server import CHAT_FORMAT
from freshrag.llm.local_tokens import LocalTokenizer
from tests.support.costs import PRICE, long_article, table
from tests.support.datasets import write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import use_endpoint

TOOL = {"type": "function", "function": {"name": "decide", "parameters": {
    "type": "object", "properties": {"retrieve": {"type": "boolean"}}, "required": ["retrieve"]}}}
MESSAGES = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "Who won?"}]


class CharacterVocabulary:
    """One token per character; remembers every text it tokenized with special tokens (the
    prompts: a reply is tokenized without)."""

    def __init__(self):
        self.prompts: list[str] = []

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        if special:
            self.prompts.append(text.decode())
        return list(text)


@pytest.mark.parametrize("tool_choice, reply, prompt_ends, counted_prompt", [
    pytest.param(None, {"text": "Bob."}, "<|im_start|>assistant\n", 0, id="no-tools"),
    pytest.param({"type": "function", "function": {"name": "decide"}},
                 {"tool_name": "decide", "arguments": '{"retrieve": true}'},
                 "<|im_start|>assistant\nfunctions.decide:\n", 0, id="forced"),
    pytest.param("auto", {"text": "Bob."}, "<|im_start|>assistant\nmessage:\n", 1,
                 id="auto-answers"),
    pytest.param("auto", {"tool_name": "decide", "arguments": '{"retrieve": true}'},
                 "<|im_start|>assistant\nfunctions.decide:\n", 1, id="auto-calls"),
])
def test_the_handler_renders_the_prompt_the_server_counts(tool_choice, reply, prompt_ends,
                                                           counted_prompt):
    vocabulary = CharacterVocabulary()
    tokenizer = LocalTokenizer(vocabulary, get_chat_completion_handler(CHAT_FORMAT), "chars")
    request = {"model": "m", "messages": MESSAGES, "max_tokens": 9,
               **({"tools": [TOOL], "tool_choice": tool_choice} if tool_choice else {})}
    prompt_tokens, completion_tokens = tokenizer.count_request(request, **reply)
    # with "auto" the handler first asks which kind of reply follows; the usage it reports is
    # that of the completion after it, as the server's
    prompt = vocabulary.prompts[counted_prompt]
    assert prompt.endswith(prompt_ends) and prompt_tokens == len(prompt.encode())
    assert ("functions.decide:\n{" in prompt) == bool(tool_choice)  # the schema is in the prompt
    assert completion_tokens == len((reply.get("text") or reply.get("arguments")).encode())


def test_a_model_tiktoken_does_not_know_is_counted_with_cl100k_and_the_table_says_so(
        tmp_path, monkeypatch, capsys):
    with FakeOpenAIServer() as server:
        use_endpoint(monkeypatch, server.base_url, "sk-x")
        data = tmp_path / "data"
        write_dataset(data, content=long_article, prices=PRICE)
        assert main(["run", "--dataset", str(data), "--systems", "baseline", "--out",
                     str(tmp_path / "run"), "--no-probe", "--dry-run"]) == 0
    rows = table(capsys.readouterr().out)
    assert rows["answer"][-1].startswith("tiktoken cl100k_base")  # or its offline copy
    assert rows["judge"][-1].startswith("tiktoken cl100k_base")

"""The embedded model's own token counts, for the dry run (docs/costs.md#dry-run).

tiktoken's cl100k_base, which the dry run uses for a model it does not know, counts SmolLM2's
prompts 10-20% short, so the embedded model's requests are counted by the runtime that serves
them (harness/llm/local_server.py):

With the prebuilt runtime (xllamacpp), `RuntimeTokenizer` starts the embedded server and asks it:
the request goes through the adapter's own translation (harness/llm/embedded_server.py, the tools
described in the system message), then llama.cpp's `/apply-template` renders it with the GGUF's
template and `/tokenize` counts it, which is the prompt the server would evaluate. A reply is
counted as the JSON the grammar makes the model write, plus its end-of-turn token.

With the source-built runtime (llama-cpp-python), the server renders a chat request with
llama-cpp-python's `chatml-function-calling` handler (not the GGUF's own template: that handler
is what gives tool calls) and tokenizes the prompt with the model's vocabulary. So here the same
handler renders the request, against a stand-in for the model that only tokenizes: the vocabulary
is loaded with `Llama(model_path, vocab_only=True)` (a tenth of a second, no weights), and every
completion the handler asks for is answered with the reply the dry run made up and the token
count of its prompt as usage. The handler then adds up usage as it does in the server: with
`tool_choice` "auto" it asks the model twice (message or function, then the message or the
arguments), and the usage it reports is the second completion's. Counting is thus the server's
own code path, and follows llama-cpp-python if its template changes. docs/methods.md#systems
(tokens per strategy), docs/methods.md#retrieval-need-and-deciders (count model calls and tokens).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import threading
import urllib.request
from typing import Any, Iterator

from freshrag.llm import embedded_server, local_server


class LocalTokenizer:
    """Counts requests to the embedded server as the server does."""

    def __init__(self, llama: Any, handler: Any, name: str):
        self._llama = llama
        self._handler = handler
        self._lock = threading.Lock()  # one vocabulary object shared by the dry run's threads
        self.name = name

    def tokens(self, text: str, special: bool = False) -> int:
        """Tokens of `text`, with a beginning-of-sequence token where the model adds one."""
        with self._lock:
            return len(self._llama.tokenize(text.encode("utf-8"), add_bos=special,
                                            special=special))

    def count_request(self, request: dict[str, Any], tool_name: str | None = None,
                      arguments: str | None = None, text: str = "") -> tuple[int, int]:
        """(prompt tokens, completion tokens) the server reports for `request` answered with
        `text`, or with a call of `tool_name` with `arguments`."""
        stand_in = _Completer(self, text, tool_name, arguments)
        result = self._handler(llama=stand_in, messages=request["messages"],
                               tools=request.get("tools"), tool_choice=request.get("tool_choice"),
                               max_tokens=request.get("max_tokens"), stream=False)
        return result["usage"]["prompt_tokens"], result["usage"]["completion_tokens"]


class _Completer:
    """The model as the chat handler sees it, answering with a made-up reply: in an automatic
    tool choice, first "message" or "functions.NAME" (the handler stops generation at ":"),
    then the reply text or the arguments, then nothing (no second function call)."""

    verbose = False

    def __init__(self, tokenizer: LocalTokenizer, text: str, tool_name: str | None,
                 arguments: str | None):
        self.tokenizer = tokenizer
        self.text, self.tool_name, self.arguments = text, tool_name, arguments
        self.arguments_given = False

    def create_completion(self, prompt: str, stop: list[str] | None = None,
                          **_: Any) -> dict[str, Any]:
        if stop == [":"]:  # the handler asks whether a message or a function call follows
            reply = f"functions.{self.tool_name}" if self.tool_name else "message"
        elif self.tool_name and not self.arguments_given:
            reply, self.arguments_given = self.arguments or "{}", True
        elif self.tool_name:
            reply = ""  # asked for a further function call: the model ends its turn
        else:
            reply = self.text
        prompt_tokens = self.tokenizer.tokens(prompt, special=True)
        completion_tokens = self.tokenizer.tokens(reply)
        return {"id": "cmpl-count", "object": "text_completion", "created": 0, "model": "count",
                "choices": [{"text": reply, "index": 0, "logprobs": None,
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}}


class RuntimeTokenizer:
    """Counts requests to the prebuilt runtime with its own template and vocabulary."""

    def __init__(self, server: local_server.LocalServer, name: str):
        self.server = server
        self.root = server.base_url.removesuffix("/v1")
        self.name = name

    def _ask(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.root}{path}", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def tokens(self, text: str, special: bool = False) -> int:
        reply = self._ask("/tokenize", {"content": text, "add_special": special,
                                        "parse_special": special})
        return len(reply["tokens"])

    def count_request(self, request: dict[str, Any], tool_name: str | None = None,
                      arguments: str | None = None, text: str = "") -> tuple[int, int]:
        adapted, mode = embedded_server.adapt_request(request)
        prompt = self._ask("/apply-template", {"messages": adapted["messages"]})["prompt"]
        return self.tokens(prompt, special=True), self.tokens(
            _reply_text(mode, tool_name, arguments, text)) + 1  # + the end-of-turn token


def _reply_text(mode: str | None, tool_name: str | None, arguments: str | None,
                text: str) -> str:
    """What the model writes under the adapter's grammar for a reply of `text` or a call."""
    if mode is None:
        return text
    if tool_name is None:
        return json.dumps({"response": text}) if mode == embedded_server.AUTO else text
    parsed = json.loads(arguments or "{}")
    if mode == embedded_server.FORCED:
        return json.dumps(parsed)
    call = {"name": tool_name, "arguments": parsed}
    return json.dumps({"tool_call": call} if mode == embedded_server.AUTO else call)


@functools.lru_cache(maxsize=1)
def embedded() -> LocalTokenizer | RuntimeTokenizer | None:
    """The embedded model's tokenizer, loaded once; None where no runtime or no model file is
    installed (the dry run then counts with tiktoken and says so)."""
    try:
        if local_server.runtime() == local_server.PREBUILT:
            server = local_server.LocalServer(slots=1).start()
            atexit.register(server.stop)
            return RuntimeTokenizer(server, f"{local_server.gguf_path().name} "
                                            f"({local_server.PREBUILT} adapter)")
    except local_server.LocalServerError:
        return None
    try:
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import get_chat_completion_handler
        path = local_server.gguf_path()
        with _quiet_stderr():  # llama.cpp warns on stderr that a vocabulary has no context size
            llama = Llama(model_path=str(path), vocab_only=True, verbose=False)
    except (ImportError, local_server.LocalServerError, ValueError, RuntimeError):
        return None
    # freed before the interpreter tears down llama_cpp's module, or its __del__ fails loudly
    atexit.register(llama.close)
    handler = get_chat_completion_handler(local_server.CHAT_FORMAT)
    return LocalTokenizer(llama, handler, f"{path.name} ({local_server.CHAT_FORMAT})")


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null: llama.cpp writes from C, past sys.stderr."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)

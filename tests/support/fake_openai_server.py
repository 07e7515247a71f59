"""In-process fake of the OpenAI Chat Completions HTTP API, for tests and benchmarks.

Standard library only. Answers ``POST /v1/chat/completions`` (and ``POST
/chat/completions``) with responses shaped closely enough like the real API for
the official ``openai`` Python SDK to parse them, and ``POST /v1/embeddings`` with
bag-of-words vectors of ``embedding_dim`` dimensions (after ``embedding_delay`` seconds), and
``GET /v1/models`` with the ``models`` entries when given (else 404), with:

* a fixed per-call latency (``delay``),
* scripted replies (``reply`` callable; ``{"error": {"status", "message"}}`` refuses the call;
  ``{"raw": {...}}`` sends any bytes, slowly if asked: see ``_send_raw``) or a schema-aware
  default reply,
* seeded, repeatable fault injection (429 / 500 / hang) via :class:`FaultPlan`,
* thread-safe call counting and capture of every request body.

Typical use::

    with FakeOpenAIServer(delay=0.01) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert server.calls == 1
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import random
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["FaultPlan", "FakeOpenAIServer", "default_reply", "forced_tool_name"]

_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_EMBEDDING_PATHS = ("/v1/embeddings", "/embeddings")
_MODELS_PATHS = ("/v1/models", "/models")


def bag_of_words_vector(text: str, dim: int) -> list[float]:
    """A deterministic embedding: each word hashed into one of `dim` buckets, L2-normalised.
    Texts that share words are near each other, which is all retrieval tests need."""
    vector = [0.0] * dim
    for word in text.lower().split():
        word = word.strip(".,;:!?()\"'")
        if word:
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


@dataclass
class FaultPlan:
    """Which calls fail, decided per call by a seeded RNG so runs are repeatable.

    One uniform draw per received call (in arrival order) picks the outcome:
    ``[0, rate_limit)`` -> 429, then the next ``server_error`` slice -> 500, then
    the next ``timeout`` slice -> hang for ``hang_seconds`` before answering
    normally; anything else is a normal call.
    """

    rate_limit: float = 0.0    # fraction of calls answered 429 with an OpenAI-style error body
    server_error: float = 0.0  # fraction answered 500
    timeout: float = 0.0       # fraction that sleep `hang_seconds` before answering (client should time out)
    hang_seconds: float = 30.0
    seed: int = 0


# --------------------------------------------------------------------------- helpers


def _content_text(content: Any) -> str:
    """Text of a message ``content``: a string, a list of content parts, or None."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return str(content)


def _prompt_chars(request: dict) -> int:
    messages = request.get("messages") or []
    return sum(len(_content_text(m.get("content"))) for m in messages if isinstance(m, dict))


def _last_user_text(request: dict) -> str:
    for message in reversed(request.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def forced_tool_name(request: dict) -> str | None:
    """Name of the function the request forces, if any."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        fn = choice.get("function") or {}
        name = fn.get("name")
        return name if isinstance(name, str) else None
    if choice == "required":
        # Not a named function, but the model must call one: pick the first tool.
        for tool in request.get("tools") or []:
            if isinstance(tool, dict):
                name = (tool.get("function") or {}).get("name")
                if isinstance(name, str):
                    return name
    return None


def _tool_schema(request: dict, name: str) -> dict | None:
    for tool in request.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") or {}
        if fn.get("name") == name:
            params = fn.get("parameters")
            return params if isinstance(params, dict) else None
    return None


def _fill_value(schema: Any, depth: int = 0) -> Any:
    """A plausible value for a JSON schema: numbers -> maximum, booleans -> true, strings -> "x"."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    typ = schema.get("type")
    if isinstance(typ, list):  # e.g. ["integer", "null"]
        non_null = [t for t in typ if t != "null"]
        typ = non_null[0] if non_null else "null"
    if typ is None:
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return _fill_value(options[0], depth + 1)
        if "properties" in schema:
            typ = "object"
    if typ == "integer":
        if "maximum" in schema:
            return int(schema["maximum"])
        if "exclusiveMaximum" in schema:
            return int(schema["exclusiveMaximum"]) - 1
        if "minimum" in schema:
            return int(schema["minimum"])
        return 0
    if typ == "number":
        if "maximum" in schema:
            return schema["maximum"]
        if "minimum" in schema:
            return schema["minimum"]
        return 0
    if typ == "boolean":
        return True
    if typ == "string":
        return "x"
    if typ == "array":
        min_items = schema.get("minItems", 0)
        item = _fill_value(schema.get("items"), depth + 1)
        return [item] * int(min_items) if isinstance(min_items, int) else []
    if typ == "object":
        props = schema.get("properties")
        if not isinstance(props, dict):
            return {}
        return {key: _fill_value(sub, depth + 1) for key, sub in props.items()}
    return None


def default_reply(request: dict) -> dict:
    """Reply used when no ``reply`` callable is given.

    A forced function call gets a tool call whose arguments fill the tool's
    schema (integers -> their maximum, booleans -> true, strings -> "x");
    anything else gets ``"echo: " + <last user message>``.
    """
    name = forced_tool_name(request)
    if name is not None:
        schema = _tool_schema(request, name)
        args = _fill_value(schema) if schema else None
        if not isinstance(args, dict):
            args = {}
        return {"tool_call": {"name": name, "arguments": json.dumps(args)}}
    return {"content": "echo: " + _last_user_text(request)}


# --------------------------------------------------------------------------- HTTP plumbing


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Don't join handler threads in server_close(): keep-alive connections held
    # by a client pool would otherwise block shutdown indefinitely.
    block_on_close = False
    request_queue_size = 256
    allow_reuse_address = True

    fake: "FakeOpenAIServer"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client killed mid-request (the SIGKILL tests) resets its connections: expected here.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without TCP_NODELAY, Nagle +
    # delayed ACK add ~40 ms to every keep-alive request.
    disable_nagle_algorithm = True
    server_version = "FakeOpenAI/1.0"
    sys_version = ""
    server: _HTTPServer

    # -- connection tracking so stop() can break idle keep-alive reads
    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    # -- helpers
    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        try:
            n = int(length)
        except ValueError:
            return b""
        return self.rfile.read(n) if n > 0 else b""

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            # The client gave up (e.g. it timed out during a hang) or stop() closed us.
            self.close_connection = True

    def _send_error(self, status: int, message: str, err_type: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": err_type, "param": None, "code": None}})

    # -- verbs
    def _batch_api(self, method: str, body: bytes) -> bool:
        """/v1/files and /v1/batches, when the server has them (tests/support/fake_batches.py)."""
        batches = self.server.fake.batches
        answer = batches and batches.handle(self.server.fake, method, self.path.split("?", 1)[0],
                                            body, self.headers.get("Content-Type", ""))
        if not answer:
            return False
        status, payload = answer
        if isinstance(payload, bytes):
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        else:
            self._send_json(status, payload)
        return True

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        body = self._read_body()
        if self._batch_api("POST", body):
            return
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in self.server.fake.services:
            self.server.fake._handle_service(self, path, body)
            return
        if path in _EMBEDDING_PATHS:
            self.server.fake._handle_embeddings(self, body)
            return
        if path not in _CHAT_PATHS:
            self._send_error(404, f"Unknown path: {self.path}", "invalid_request_error")
            return
        self.server.fake._handle_chat(self, body)

    def do_GET(self) -> None:  # noqa: N802
        if self._batch_api("GET", b""):
            return
        models = self.server.fake.models
        if models is not None and self.path.split("?", 1)[0].rstrip("/") in _MODELS_PATHS:
            self._send_json(200, {"object": "list", "data": models})
            return
        self._send_error(404, f"Unknown path: {self.path}", "invalid_request_error")


# --------------------------------------------------------------------------- public server


class FakeOpenAIServer:
    """In-process OpenAI-compatible chat-completions server (see module docstring)."""

    def __init__(
        self,
        reply: Callable[[dict], dict] | None = None,
        delay: float = 0.0,
        faults: FaultPlan | None = None,
        report_usage: bool = True,
        embedding_dim: int = 64,
        embedding_delay: float = 0.0,
        batches: Any = None,
        services: dict[str, Callable[[Any, dict], dict]] | None = None,
        capture: bool = True,
        models: list[dict] | None = None,
    ) -> None:
        # the entries of GET /v1/models (None: 404, an endpoint that lists nothing); a test may
        # change them between calls, as a server whose weights changed under the same name
        self.models = models
        self.capture = capture  # keep every request body in `requests` (off for long benchmarks)
        # path -> handler(request JSON, headers) giving a raw reply: a RAG service under test
        # (_handle_service says what the reply may hold)
        self.services = services or {}
        self.service_requests: list[tuple[str, Any, dict]] = []
        self.batches = batches  # a tests.support.fake_batches.FakeBatches serves /v1/files, /v1/batches
        self.reply = reply
        self.embedding_dim = embedding_dim
        self.embedding_delay = float(embedding_delay)
        self.embedding_calls: int = 0
        self.embedding_requests: list[dict] = []  # the bodies of /v1/embeddings requests
        self.delay = float(delay)
        self.faults = faults or FaultPlan()
        self.report_usage = report_usage

        self.calls: int = 0
        self.requests: list[dict] = []

        self._lock = threading.Lock()
        self._rng = random.Random(self.faults.seed)
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> "FakeOpenAIServer":
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"fake-openai-{httpd.server_address[1]}", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping in delay / hang
        httpd.shutdown()      # stops serve_forever (returns within poll_interval)
        httpd.server_close()  # closes the listening socket; does not join handler threads
        with self._conns_lock:
            conns = list(self._conns)
            self._conns.clear()
        for conn in conns:  # break idle keep-alive reads so handler threads exit
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset_counts(self) -> None:
        """Zero ``calls`` and clear ``requests`` (the fault RNG keeps its position)."""
        with self._lock:
            self.calls = 0
            self.requests = []

    # -- connection tracking (called from handler threads)
    def _track(self, conn: socket.socket) -> None:
        with self._conns_lock:
            self._conns.add(conn)

    def _untrack(self, conn: socket.socket) -> None:
        with self._conns_lock:
            self._conns.discard(conn)

    # -- request handling (runs in a handler thread)
    def _decide_fault(self) -> str | None:
        """Must be called with self._lock held, so draws follow call order."""
        f = self.faults
        if not (f.rate_limit or f.server_error or f.timeout):
            return None
        r = self._rng.random()
        if r < f.rate_limit:
            return "rate_limit"
        if r < f.rate_limit + f.server_error:
            return "server_error"
        if r < f.rate_limit + f.server_error + f.timeout:
            return "timeout"
        return None

    def _handle_service(self, handler: _Handler, path: str, body: bytes) -> None:
        """One request to a service route. Its handler returns {"json": value} or {"body": bytes
        or text, "content_type": ...}, with optional "status" (200), "delay" (seconds before the
        reply) and "drip" (seconds between the body's bytes: a server that sends slowly)."""
        try:
            request = json.loads(body) if body else None
        except ValueError:
            request = None
        headers = {key.lower(): value for key, value in handler.headers.items()}
        with self._lock:
            self.service_requests.append((path, request, headers))
        self._send_raw(handler, self.services[path](request, headers))

    def _send_raw(self, handler: _Handler, spec: dict) -> None:
        """A reply of any shape: {"json": value} or {"body": bytes or text, "content_type": ...}
        (text/html unless given), with optional "status" (200), "delay" (seconds before the
        reply) and "drip" (seconds between bytes, the status line and headers included: a server
        that sends slowly); "length" overrides the Content-Length header (a body cut short);
        "headers" adds headers (a redirect's Location)."""
        if self._stopping.wait(spec.get("delay", 0)):
            return
        if "json" in spec:
            data, kind = json.dumps(spec["json"]).encode(), "application/json"
        else:
            data = spec["body"].encode() if isinstance(spec["body"], str) else spec["body"]
            kind = spec.get("content_type", "text/html")
        status = spec.get("status", 200)
        head = (f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                f"Content-Type: {kind}\r\nContent-Length: {spec.get('length', len(data))}\r\n"
                + "".join(f"{name}: {value}\r\n" for name, value in spec.get("headers", {}).items())
                + "Connection: close\r\n\r\n").encode()
        whole, step = head + data, 1 if spec.get("drip") else len(head) + len(data)
        handler.close_connection = True
        try:
            for start in range(0, len(whole), step):
                handler.wfile.write(whole[start:start + step])
                handler.wfile.flush()
                if spec.get("drip") and self._stopping.wait(spec["drip"]):
                    return
        except OSError:  # the client gave up (its deadline) or stop() closed us
            pass

    def _handle_chat(self, handler: _Handler, body: bytes) -> None:
        try:
            request = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            request = None
        valid = isinstance(request, dict)

        with self._lock:
            self.calls += 1
            if valid and self.capture:
                self.requests.append(request)
            fault = self._decide_fault()

        if fault == "rate_limit":
            handler._send_error(429, "Rate limit reached (fake server fault injection).", "rate_limit_error")
            return
        if fault == "server_error":
            handler._send_error(500, "The server had an error (fake server fault injection).", "server_error")
            return
        if fault == "timeout":
            if self._stopping.wait(self.faults.hang_seconds):
                handler.close_connection = True  # shutting down: drop the request silently
                return
        elif self.delay > 0:
            if self._stopping.wait(self.delay):
                handler.close_connection = True
                return

        if not valid:
            handler._send_error(400, "Request body must be a JSON object.", "invalid_request_error")
            return

        try:
            spec = (self.reply or default_reply)(request)
            if isinstance(spec, dict) and "raw" in spec:  # any bytes: an HTML page, a cut body
                self._send_raw(handler, spec["raw"])
                return
            if isinstance(spec, dict) and "error" in spec:  # a scripted refusal, e.g. a 400
                error = spec["error"]
                handler._send_error(error["status"], error["message"],
                                    error.get("type", "invalid_request_error"))
                return
            payload = self._build_response(request, spec)
        except Exception as exc:  # reply callable raised, or returned something unusable
            handler._send_error(500, f"Fake reply failed: {type(exc).__name__}: {exc}", "server_error")
            return
        handler._send_json(200, payload)

    def _handle_embeddings(self, handler: _Handler, body: bytes) -> None:
        request = json.loads(body.decode("utf-8"))
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        with self._lock:
            self.embedding_calls += 1
            self.embedding_requests.append(request)
        if self.embedding_delay > 0 and self._stopping.wait(self.embedding_delay):
            handler.close_connection = True  # shutting down
            return
        data = []
        for i, text in enumerate(texts):
            vector = bag_of_words_vector(str(text), self.embedding_dim)
            if request.get("encoding_format") == "base64":  # the SDK asks for this by default
                vector = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": vector})
        tokens = sum(len(str(text).split()) for text in texts)
        handler._send_json(200, {"object": "list", "data": data, "model": request.get("model"),
                                 "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def batch_reply(self, request: dict) -> dict:
        """A batch line's response body: what a live call of the same request would get."""
        return self._build_response(request, (self.reply or default_reply)(request))

    def _build_response(self, request: dict, spec: dict) -> dict:
        if not isinstance(spec, dict):
            raise TypeError(f"reply must return a dict, got {type(spec).__name__}")
        n = next(self._ids)  # itertools.count.__next__ is atomic under the GIL
        message: dict[str, Any] = {"role": "assistant"}
        if "tool_call" in spec:
            call = spec["tool_call"]
            name = str(call["name"])
            arguments = call.get("arguments", "{}")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            message["content"] = None
            message["tool_calls"] = [
                {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": arguments}}
            ]
            finish_reason = "tool_calls"
            completion_text = arguments
        elif "content" in spec:
            content = spec["content"]
            message["content"] = None if content is None else str(content)
            finish_reason = "stop"
            completion_text = message["content"] or ""
        else:
            raise ValueError("reply dict needs a 'content' or 'tool_call' key")
        message["refusal"] = None

        response: dict[str, Any] = {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or "fake-model",
            # a spec's "logprobs" is the OpenAI shape: [{"token", "logprob", "top_logprobs": [...]}]
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "logprobs": {"content": spec["logprobs"]} if spec.get("logprobs") else None,
                         "message": message}],
        }
        if self.report_usage:
            usage = spec.get("usage") or {}
            prompt = int(usage.get("prompt_tokens", max(1, _prompt_chars(request) // 4)))
            completion = int(usage.get("completion_tokens", max(1, len(completion_text) // 4)))
            response["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return response

"""The run's OpenAI-compatible endpoint for agent frameworks: one loopback port per process,
a session per answer (docs/own-system.md#agents-of-your-own-langgraph-openai-agents-sdk; why:
docs/design.md#an-endpoint-for-agent-frameworks).

A framework (LangGraph with langchain-openai, the OpenAI Agents SDK) takes a base URL and a key,
not an LLM object. So the process serves `POST /v1/chat/completions` (and `GET /v1/models`) on a
loopback port, and a system opens one session per answer (harness/llm/forward_session.py, which
makes each call on the answering thread and records the steps): a random key that only its
answer's requests carry. This module is the HTTP side: it reads a request (its length, path,
key and JSON, by core/jsonl.py `loads` and so under the one decode rule of
docs/faults.md#text-that-is-not-unicode; harness/llm/forward_format.py reads the body into
`LLM.chat`'s options), hands it
to the key's session and writes the reply, an error as OpenAI's error body with
`x-should-retry: false` (which the framework's client obeys: an error of the run's LLM is not
retried).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

from freshrag.core.jsonl import loads
from freshrag.core.types import LLM, ROLES, Retriever
from freshrag.llm.forward_format import Refused, chat_options, error_reply
from freshrag.llm.forward_session import Exchange, Session

MAX_BODY = 16 * 1024 * 1024  # bytes of one request: a long conversation, never a runaway
CHAT, MODELS = "/v1/chat/completions", "/v1/models"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number")


class Forwarder:
    """The process's endpoint: one loopback port, started at the first session, closed at exit;
    each request goes to the session whose key it carries."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        with self._lock:
            if self._server is None:
                self._server = _HTTPServer(("127.0.0.1", 0), _Handler)
                self._server.forwarder = self
                threading.Thread(target=self._server.serve_forever, daemon=True,
                                 name="freshrag-forwarder").start()
                atexit.register(self.close)
            return self._server.server_address[1]

    def open(self, llm: LLM, role: str, retriever: Retriever | None,
             most: int | None = None) -> Session:
        if role not in ROLES:
            raise ValueError(f"no role {role!r}: one of {', '.join(ROLES)}")
        session = Session(self.port, llm, role, retriever, most)
        with self._lock:
            self._sessions[session.api_key] = session
        return session

    def end(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.api_key, None)
        session.closed = True

    def session(self, authorization: str | None) -> Session:
        key = (authorization or "").removeprefix("Bearer ").strip()
        with self._lock:
            found = self._sessions.get(key)
        if found is None:
            raise Refused(401, "no open session holds this key: use the session's api_key")
        return found

    def close(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


FORWARDER = Forwarder()


class Endpoint:
    """`SystemContext.endpoint` of a run: a session of the process's forwarder per `with`, its
    calls made by `llm` as `role`. `most`: the most calls one session may forward, the most its
    system's `call_shape` declares for one answer (set once the system is built,
    harness/run/plan.py `built`); None: no bound but the framework's own."""

    def __init__(self, llm: LLM, retriever: Retriever | None):
        self.llm, self.retriever = llm, retriever
        self.most: int | None = None

    @contextlib.contextmanager
    def __call__(self, role: str) -> Iterator[Session]:
        opened = FORWARDER.open(self.llm, role, self.retriever, self.most)
        try:
            yield opened
        finally:
            FORWARDER.end(opened)


class _HTTPServer(ThreadingHTTPServer):
    """A thread per connection, each waiting for its session's answering thread, which makes
    the calls one at a time: a framework's parallel requests cost a waiting thread each, never a
    model call more. The listen backlog is the kernel's most (the standard library's 5 reset
    all but a few of a framework's dozens of parallel calls before a thread could take them)."""

    request_queue_size = socket.SOMAXCONN  # the kernel caps it at net.core.somaxconn
    daemon_threads = True
    block_on_close = False  # a framework's idle keep-alive connection must not hold up exit
    forwarder: Forwarder


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no delayed-ACK wait
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._reply(*self._answer(self._models))

    def do_POST(self) -> None:  # noqa: N802
        self._reply(*self._answer(self._chat))

    def _answer(self, work: Callable[[], dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        try:
            return 200, work()
        except Refused as refused:
            return error_reply(refused)

    def _models(self) -> dict[str, Any]:
        if self.path.split("?", 1)[0].rstrip("/") != MODELS:
            raise Refused(404, f"no such path: {self.path[:200]}")
        session = self.server.forwarder.session(self.headers.get("Authorization"))
        return {"object": "list", "data": [{"id": session.role, "object": "model",
                                            "owned_by": "freshrag"}]}

    def _chat(self) -> dict[str, Any]:
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            self.close_connection = True
            raise Refused(411, "a request needs its Content-Length")
        if int(length) > MAX_BODY:
            self.close_connection = True  # its body is not read
            raise Refused(413, f"the body is over {MAX_BODY:,} bytes")
        body = self.rfile.read(int(length))
        if self.path.split("?", 1)[0].rstrip("/") != CHAT:
            raise Refused(404, f"no such path: {self.path[:200]}")
        session = self.server.forwarder.session(self.headers.get("Authorization"))
        try:  # the one decode rule: a lone surrogate is U+FFFD before any call sees it
            data = loads(body, parse_constant=_no_constant)
        except ValueError:  # json's, too deep, a 5,000-digit number, bytes that are not UTF-8
            raise Refused(400, "the body is not JSON") from None
        exchange = Exchange(chat_options(data))
        session.take(exchange)
        exchange.done.wait()
        status, payload = exchange.reply
        if status != 200:
            raise Refused(status, payload["error"]["message"], payload["error"]["param"])
        return payload

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-should-retry", "false")  # openai's clients obey it: no retry
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the framework gave up on the request
            self.close_connection = True

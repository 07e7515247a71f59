"""The run's OpenAI-compatible endpoint for agent frameworks: a session per answer
(docs/own-system.md#agents-of-your-own-langgraph-openai-agents-sdk; why:
docs/design.md#an-endpoint-for-agent-frameworks).

A framework (LangGraph with langchain-openai, the OpenAI Agents SDK) takes a base URL and a key,
not an LLM object. So the process serves `POST /v1/chat/completions` on a loopback port, and a
system opens one `Session` per answer: a random key that only its answer's requests carry.
While `Session.run(agent)` runs the framework on a helper thread, each request the framework
sends is made as `llm.chat(role, ...)` on the answering thread itself, where the run's recorder
and a dry run's planner keep the pair's calls: every call is cached, capped by --max-cost,
counted per role and made up in a walk, as a call the system made itself would be. An error the
LLM raised is sent to the framework as HTTP 502 (which its client does not retry) and raised
again by `run` once the framework has returned, so the pair fails or the run stops as it would
have; after it no call is made. Every call is a step (`reason` when it calls a tool, `answer`
when it is text), and each `search` the framework's tool asks is a `search` step.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import queue
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, ContextManager, Iterator, TypeVar

from freshrag.core.errors import FreshragError
from freshrag.core.steps import best_chunks, chunk_records
from freshrag.core.types import (
    LLM,
    ROLES,
    LLMResponse,
    Retriever,
    Step,
    SystemAnswer,
)

T = TypeVar("T")
MAX_BODY = 16 * 1024 * 1024  # bytes of one request: a long conversation, never a runaway
CHAT, MODELS = "/v1/chat/completions", "/v1/models"
NOTHING_FOUND = "The search found nothing."
# Fields a framework may send that change nothing a forwarded call answers: the reply holds one
# tool call at most (freshrag's client keeps the first), the run's seed is the run's, and
# nothing is stored or tagged upstream.
IGNORED = ("model", "parallel_tool_calls", "stream_options", "store", "metadata", "user", "seed",
           "n")


class Refused(FreshragError):
    """A request the endpoint answers with an error: its HTTP status and why (the field). Caught
    where the request is answered, never shown to the user as such."""

    def __init__(self, status: int, message: str, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.param = param


@dataclass
class _Exchange:
    """One forwarded request, waiting for the answering thread's reply."""

    options: dict[str, Any]
    done: threading.Event = field(default_factory=threading.Event)
    # what the framework is told if the answering thread stops before it replies
    reply: tuple[int, dict[str, Any]] = field(
        default_factory=lambda: _error(Refused(502, "the run stopped before this call")))

    def settle(self, reply: Callable[[], tuple[int, dict[str, Any]]]) -> None:
        try:
            self.reply = reply()
        finally:
            self.done.set()


class Session:
    """One answer's endpoint: its key, the LLM and role its calls go to, its steps."""

    def __init__(self, server: Forwarder, llm: LLM, role: str, retriever: Retriever | None):
        self.llm, self.role, self.retriever = llm, role, retriever
        self.api_key = secrets.token_urlsafe(24)
        self.base_url = f"http://127.0.0.1:{server.port}/v1"
        self.steps: list[Step] = []
        self.failure: BaseException | None = None  # the LLM's error: no call after it
        self.closed = False
        self._lock = threading.Lock()
        self._inbox: queue.SimpleQueue[_Exchange | None] | None = None  # set while `run` runs

    def run(self, agent: Callable[[], T]) -> T:
        """`agent()` on a helper thread, its forwarded calls made here; what it returned, or
        the LLM's error if one came (else what `agent` raised)."""
        with self._lock:
            if self.closed or self._inbox is not None:
                raise RuntimeError("a session runs one agent at a time, before its answer")
            inbox = self._inbox = queue.SimpleQueue()
        outcome: dict[str, Any] = {}
        helper = threading.Thread(target=_outcome, args=(agent, outcome, inbox), daemon=True,
                                  name=f"freshrag-agent-{self.role}")
        helper.start()
        try:
            while (exchange := inbox.get()) is not None:
                exchange.settle(lambda: self._forward(exchange.options))
        finally:
            self._stop_serving(inbox)
        helper.join()
        if self.failure is not None:
            raise self.failure
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def _stop_serving(self, inbox: queue.SimpleQueue[_Exchange | None]) -> None:
        """No request is taken after this; those already waiting are refused."""
        with self._lock:
            self._inbox = None
        while not inbox.empty():
            if (exchange := inbox.get()) is not None:
                exchange.settle(lambda: _error(Refused(409, "the session's agent has returned")))

    def take(self, exchange: _Exchange) -> None:
        """A request for the answering thread (a server thread's call)."""
        with self._lock:
            if self._inbox is None:
                raise Refused(409, "the session is not running an agent: call it inside "
                                   "session.run(...), before session.answer(...)")
            self._inbox.put(exchange)

    def _forward(self, options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.failure is not None:
            return _error(Refused(502, f"an earlier call failed: {self.failure}"))
        try:
            response = self.llm.chat(self.role, **options)
        except Exception as err:  # the budget, the endpoint, the cache, a walk's stop
            self.failure = err
            return _error(Refused(502, f"{type(err).__name__}: {err}"))
        kind = "reason" if response.tool_name else "answer"
        with self._lock:
            self.steps.append(Step(kind, (response,), text=response.text))
        return 200, completion(response, len(self.steps))

    def search(self, query: str) -> str:
        """The run's index asked for `query`, kept as a `search` step; the chunks' text."""
        if self.retriever is None:
            raise RuntimeError("session.search needs the run's index: declare uses_index = True")
        chunks = self.retriever.retrieve(query)
        with self._lock:
            self.steps.append(Step("search", query=query, retrieved=tuple(chunks)))
        return "\n\n".join(chunk.text for chunk in chunks) or NOTHING_FOUND

    def answer(self, text: str, stopped: str | None = None) -> SystemAnswer:
        """The answer with every call, search and step of the session, which then closes."""
        with self._lock:
            self.closed = True
            steps = list(self.steps)
        chunks = best_chunks([chunk for step in steps for chunk in step.retrieved])
        searches = sum(step.kind == "search" for step in steps)
        return SystemAnswer(text, [call for step in steps for call in step.calls],
                            retrievals=searches, steps=steps, stopped=stopped, details={
                                "decision": "retrieve" if searches else "no-retrieve",
                                "retrieved": chunk_records(chunks)})


def _outcome(agent: Callable[[], Any], outcome: dict[str, Any],
             inbox: queue.SimpleQueue[_Exchange | None]) -> None:
    try:
        outcome["value"] = agent()
    except BaseException as err:  # handed to the answering thread, which raises it
        outcome["error"] = err
    finally:
        inbox.put(None)


def completion(response: LLMResponse, number: int) -> dict[str, Any]:
    """`response` as OpenAI's chat completion. A tool call's id is a hash of the conversation
    and the call, so that a framework sending it back asks the same request again next run
    (and the cache answers it)."""
    message: dict[str, Any] = {"role": "assistant", "content": response.text}
    if response.tool_name is not None:
        digest = hashlib.sha256(json.dumps(
            [response.messages, response.tool_name, response.tool_arguments],
            sort_keys=True, default=str).encode()).hexdigest()
        message["tool_calls"] = [{"id": f"call_{digest[:24]}", "type": "function", "function": {
            "name": response.tool_name, "arguments": response.tool_arguments or "{}"}}]
    usage = response.usage
    return {"id": f"chatcmpl-freshrag-{number}", "object": "chat.completion",
            "created": int(time.time()), "model": response.model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if response.tool_name else "stop"}],
            "usage": {"prompt_tokens": usage.input, "completion_tokens": usage.output,
                      "total_tokens": usage.input + usage.output}}


def chat_options(body: Any) -> dict[str, Any]:
    """A request body as `LLM.chat`'s arguments (but the role); Refused (400) naming the field
    that is missing, of the wrong type, or not forwarded."""
    if not isinstance(body, dict):
        raise Refused(400, "the body is not a JSON object")
    if (stream := body.get("stream", False)) is not False:
        raise Refused(400, "streaming is not forwarded: ask with stream false" if stream is True
                      else "stream must be true or false", "stream")
    known = ("messages", "tools", "tool_choice", "temperature", "max_tokens",
             "max_completion_tokens", "stream", *IGNORED)
    for name in body:
        if name not in known:
            raise Refused(400, f"{name} is not forwarded (freshrag forwards messages, tools, "
                               f"tool_choice, temperature and max_tokens)", name)
    if body.get("n", 1) != 1:
        raise Refused(400, "n: one choice only", "n")
    options: dict[str, Any] = {"messages": _messages(body.get("messages"))}
    if body.get("tools"):
        options["tools"] = _tools(body["tools"])
        options["tool_choice"] = tool_choice(body.get("tool_choice", "auto"))
    temperature = body.get("temperature")
    if temperature is not None:
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
                or not 0 <= temperature <= 2:
            raise Refused(400, "temperature must be a number from 0 to 2", "temperature")
        options["temperature"] = float(temperature)
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise Refused(400, f"{name} must be a whole number of 1 or more", name)
            options.setdefault("max_tokens", value)
    return options


def _messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "messages must be a non-empty list", "messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise Refused(400, f"messages[{i}] must be an object with a role", f"messages[{i}]")
        if not isinstance(message.get("content"), (str, list, type(None))):
            raise Refused(400, f"messages[{i}].content must be text, a list of parts or null",
                          f"messages[{i}].content")
    return messages


def _tools(tools: Any) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise Refused(400, "tools must be a list", "tools")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise Refused(400, f"tools[{i}] must be a function with a name",
                          f"tools[{i}].function.name")
    return tools


def tool_choice(choice: Any) -> str:
    """OpenAI's tool_choice as `LLM.chat` takes it: "auto", "none" and "required" as they are
    (freshrag's client sends them so), a named function as its name."""
    if choice in ("auto", "none", "required"):
        return str(choice)
    function = choice.get("function") if isinstance(choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or name in ("auto", "none", "required"):
        raise Refused(400, 'tool_choice must be "auto", "none", "required" or '
                           '{"type": "function", "function": {"name": ...}}', "tool_choice")
    return name


def _error(refused: Refused) -> tuple[int, dict[str, Any]]:
    return refused.status, {"error": {"message": str(refused), "type": "freshrag_forwarding",
                                      "param": refused.param, "code": None}}


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

    def open(self, llm: LLM, role: str, retriever: Retriever | None) -> Session:
        if role not in ROLES:
            raise ValueError(f"no role {role!r}: one of {', '.join(ROLES)}")
        session = Session(self, llm, role, retriever)
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


def endpoint(llm: LLM, retriever: Retriever | None) -> Callable[[str], ContextManager[Session]]:
    """`SystemContext.endpoint` of a run: a session of the process's forwarder per `with`,
    its calls made by `llm` as `role`."""

    @contextlib.contextmanager
    def session(role: str) -> Iterator[Session]:
        opened = FORWARDER.open(llm, role, retriever)
        try:
            yield opened
        finally:
            FORWARDER.end(opened)

    return session


class _HTTPServer(ThreadingHTTPServer):
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
            return _error(refused)

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
        try:
            data = json.loads(body, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise Refused(400, "the body is not JSON") from None
        exchange = _Exchange(chat_options(data))
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

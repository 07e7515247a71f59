"""One answer's session of the run's endpoint for agent frameworks (harness/llm/forward.py
serves it; docs/own-system.md#agents-of-your-own-langgraph-openai-agents-sdk): its key, the
framework run on a helper thread while each request it sends is made as `llm.chat(role, ...)`
on the answering thread itself (where the run's recorder and a dry run's planner keep the pair's
calls), and the steps it records: every call a step (`reason` when it calls a tool, `answer`
when it is text), each `search` the framework's tool asks a `search` step. An error the LLM
raised is sent to the framework as HTTP 502 and raised again by `run` once the framework has
returned; after it no call is made. A call past the most the system declares (its
`call_shape`) is refused with HTTP 400 naming the bound, and the answer is `stopped` there:
`run` raises `BoundReached` holding it if the framework gave up on the refusal."""

from __future__ import annotations

import queue
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from freshrag.core.errors import FreshragError, said
from freshrag.core.steps import best_chunks, chunk_records
from freshrag.core.types import LLM, Retriever, Step, SystemAnswer
from freshrag.llm.forward_format import Refused, completion, error_reply

T = TypeVar("T")
NOTHING_FOUND = "The search found nothing."


@dataclass
class Exchange:
    """One forwarded request, waiting for the answering thread's reply."""

    options: dict[str, Any]
    done: threading.Event = field(default_factory=threading.Event)
    # what the framework is told if the answering thread stops before it replies
    reply: tuple[int, dict[str, Any]] = field(
        default_factory=lambda: error_reply(Refused(502, "the run stopped before this call")))

    def settle(self, reply: Callable[[], tuple[int, dict[str, Any]]]) -> None:
        try:
            self.reply = reply()
        finally:
            self.done.set()


class BoundReached(FreshragError):
    """The framework gave up once a call past its system's declared most was refused: the
    answer so far, `stopped` at the bound (the runner grades it as the system's answer)."""

    def __init__(self, answer: SystemAnswer):
        super().__init__(answer.details.get("bound", "stopped at its bound"))
        self.answer = answer


class Session:
    """One answer's endpoint: its key, the LLM and role its calls go to, its steps, and the
    most calls it forwards (`most`, None: no bound but the framework's)."""

    def __init__(self, port: int, llm: LLM, role: str, retriever: Retriever | None,
                 most: int | None = None):
        self.llm, self.role, self.retriever, self.most = llm, role, retriever, most
        self.made = 0  # calls forwarded
        self.bound: str | None = None  # set once a call past `most` was refused
        self.api_key = secrets.token_urlsafe(24)
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.steps: list[Step] = []
        self.failure: BaseException | None = None  # the LLM's error: no call after it
        self.closed = False
        self._lock = threading.Lock()
        self._inbox: queue.SimpleQueue[Exchange | None] | None = None  # set while `run` runs

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
        if "error" in outcome and self.bound is not None:
            raise BoundReached(self.answer("")) from outcome["error"]
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def _stop_serving(self, inbox: queue.SimpleQueue[Exchange | None]) -> None:
        """No request is taken after this; those already waiting are refused."""
        with self._lock:
            self._inbox = None
        while not inbox.empty():
            if (exchange := inbox.get()) is not None:
                exchange.settle(lambda: error_reply(Refused(409, "the session's agent has returned")))

    def take(self, exchange: Exchange) -> None:
        """A request for the answering thread (a server thread's call)."""
        with self._lock:
            if self._inbox is None:
                raise Refused(409, "the session is not running an agent: call it inside "
                                   "session.run(...), before session.answer(...)")
            self._inbox.put(exchange)

    def _forward(self, options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.failure is not None:
            return error_reply(Refused(502, f"an earlier call failed: {said(self.failure)}"))
        if self.most is not None and self.made >= self.most:
            self.bound = (f"its call_shape declares at most {self.most} calls for one answer, "
                          f"which it has made")
            return error_reply(Refused(400, f"freshrag refused this call: {self.bound}"))
        self.made += 1
        try:
            response = self.llm.chat(self.role, **options)
        except Exception as err:  # the budget, the endpoint, the cache, a walk's stop
            self.failure = err
            return error_reply(Refused(502, said(err)))
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
        """The answer with every call, search and step of the session, which then closes;
        `stopped` at "max_steps" once a call past its bound was refused, the bound named in
        `details`."""
        with self._lock:
            self.closed = True
            steps = list(self.steps)
        chunks = best_chunks([chunk for step in steps for chunk in step.retrieved])
        searches = sum(step.kind == "search" for step in steps)
        bound = {} if self.bound is None else {"bound": self.bound}
        return SystemAnswer(text, [call for step in steps for call in step.calls],
                            retrievals=searches, steps=steps,
                            stopped=stopped or ("max_steps" if self.bound else None), details={
                                "decision": "retrieve" if searches else "no-retrieve",
                                "retrieved": chunk_records(chunks), **bound})


def _outcome(agent: Callable[[], Any], outcome: dict[str, Any],
             inbox: queue.SimpleQueue[Exchange | None]) -> None:
    try:
        outcome["value"] = agent()
    except BaseException as err:  # handed to the answering thread, which raises it
        outcome["error"] = err
    finally:
        inbox.put(None)

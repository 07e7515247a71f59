"""A burst at the run's endpoint for agent frameworks (harness/llm/forward.py): sessions that
each fire many requests at once, as LangGraph's parallel tool nodes do, from a client that never
retries (raw HTTP), so that a connection the server did not take shows as reset rather than
hidden by a retry; or from openai's client with its default retries, each counted. Used by
tests/llm/test_forward_served.py and tests/benchmarks/bench_chaos.py."""

from __future__ import annotations

import http.client
import json
import threading
from collections import Counter
from typing import Any

import httpx
import openai

from freshrag.llm.forward import Endpoint
from tests.support.fakes import ScriptedLLM


def post(base_url: str, api_key: str, body: bytes, timeout: float = 60.0) -> tuple[int, Any]:
    """One request, never retried: its status and JSON reply."""
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", "/v1/chat/completions", body=body, headers={
            "Authorization": f"Bearer {api_key}", "Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def burst(sessions: int = 3, parallel: int = 48, sdk: bool = False) -> Counter[str]:
    """`sessions` sessions at once, each firing `parallel` requests at once: how many were
    `answered` (200, the reply the session's model gave that request), `refused` (another
    status), `reset` (the connection refused, reset or closed without a reply) and `lost`
    (none of those: a wrong reply). `sdk`: sent by openai's client with its default retries,
    `retries` counting the requests it sent again."""
    outcome: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(sessions * parallel)

    def ask(session: Any, client: openai.OpenAI | None, n: int) -> None:
        messages = [{"role": "user", "content": f"request {n}"}]
        start.wait()
        try:
            if client is not None:
                reply = client.chat.completions.create(model="any", messages=messages)
                status, text = 200, reply.choices[0].message.content
            else:
                status, body = post(session.base_url, session.api_key,
                                    json.dumps({"model": "any", "messages": messages}).encode())
                text = body["choices"][0]["message"]["content"] if status == 200 else None
            kind = "refused" if status != 200 else "answered" if text == "fine" else "lost"
        except (OSError, openai.APIConnectionError):  # refused, reset or closed
            kind = "reset"
        except openai.APIStatusError:
            kind = "refused"
        with lock:
            outcome[kind] += 1

    def agent(session: Any, client: openai.OpenAI | None) -> None:
        threads = [threading.Thread(target=ask, args=(session, client, n))
                   for n in range(parallel)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def one_session() -> None:
        llm = ScriptedLLM(["fine"] * parallel)
        sent = _Counting()
        with Endpoint(llm, None)("answer") as session:
            client = openai.OpenAI(base_url=session.base_url, api_key=session.api_key,
                                   http_client=httpx.Client(transport=sent)) if sdk else None
            session.run(lambda: agent(session, client))
            session.answer("done")
        with lock:
            outcome["retries"] += max(sent.sent - parallel, 0)

    runners = [threading.Thread(target=one_session) for _ in range(sessions)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    return outcome


class _Counting(httpx.HTTPTransport):
    """openai's transport, counting every request it sends (a retry is sent again)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.sent += 1
        return super().handle_request(request)

"""A burst at the run's endpoint for agent frameworks (harness/llm/forward.py): sessions that
each fire many requests at once, as LangGraph's parallel tool nodes do, from a client that never
retries (raw HTTP), so that a connection the server did not take shows as reset rather than
hidden by a retry. Used by tests/llm/test_forward_load.py and tests/benchmarks/bench_chaos.py."""

from __future__ import annotations

import http.client
import json
import threading
from collections import Counter
from typing import Any

from freshrag.core.types import SystemContext
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


def burst(sessions: int = 3, parallel: int = 48) -> Counter[str]:
    """`sessions` sessions at once, each firing `parallel` requests at once: how many were
    `answered` (200, the reply the session's model gave that request), `refused` (another
    status), `reset` (the connection refused, reset or closed without a reply) and `lost`
    (none of those: a wrong reply)."""
    outcome: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(sessions * parallel)

    def ask(session: Any, n: int) -> None:
        body = json.dumps({"model": "any", "messages": [
            {"role": "user", "content": f"request {n}"}]}).encode()
        start.wait()
        try:
            status, reply = post(session.base_url, session.api_key, body)
            kind = "refused" if status != 200 else "answered" \
                if reply["choices"][0]["message"]["content"] == "fine" else "lost"
        except OSError:  # refused, reset or closed: http.client raises each as one
            kind = "reset"
        with lock:
            outcome[kind] += 1

    def agent(session: Any) -> None:
        threads = [threading.Thread(target=ask, args=(session, n)) for n in range(parallel)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def one_session() -> None:
        llm = ScriptedLLM(["fine"] * parallel)
        opened = SystemContext(llm=llm, articles={}, endpoint=Endpoint(llm, None)).endpoint
        assert opened is not None
        with opened("answer") as session:
            session.run(lambda: agent(session))
            session.answer("done")

    runners = [threading.Thread(target=one_session) for _ in range(sessions)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    return outcome

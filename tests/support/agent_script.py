"""A scripted agent model for the fake OpenAI server: offered a `search` tool with tool choice
"auto" (react's loop, systems/react.py), it searches a known number of times and then answers,
so that a run of an agent of known length can be checked and measured (the dry run's range,
tests/benchmarks/bench_scale.py). Every other request gets the fake server's default reply."""

from __future__ import annotations

import json
from typing import Any, Callable

from tests.support.fake_openai_server import default_reply

ANSWER = "It has 3 bridges."


def _question(request: dict[str, Any]) -> str:
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    content = users[0].get("content") if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def searches_then_answers(searches: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A reply function that searches `searches` times (the query: the first user message and
    the search's number, so no two repeat) before it answers in text."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        tools = {tool["function"]["name"] for tool in request.get("tools") or []}
        if request.get("tool_choice") == "auto" and "search" in tools:
            done = sum(message.get("role") == "tool" for message in request["messages"])
            if done < searches:
                query = f"{_question(request)[-200:]} ({done + 1})"
                return {"tool_call": {"name": "search",
                                      "arguments": json.dumps({"query": query})}}
            return {"content": ANSWER}
        return default_reply(request)

    return reply

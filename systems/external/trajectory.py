"""The trajectory a system outside freshrag reports (docs/own-system.md#steps): `steps` in the
row's own shape, or the conversation its agent had, as OpenAI chat `messages` or Ragas'
multi-turn messages, made into the answer's `Step`s. One converter for an HTTP service's reply
and an answers file's rows (Ragas' multi-turn samples among them).

A conversation becomes steps message by message: an assistant's text beside its tool calls is a
`reason` step; a tool call whose arguments hold a query (the first text of QUERY_ARGUMENTS) is a
`search`, whose `retrieved` chunks are what its tool returned when that is a JSON list of objects
with a title (or such a list under `results`); one whose arguments hold a `title` and no query is
a `read`; any other is a `reason` step naming the call. The last assistant message, without tool
calls, is the `answer`; an earlier one without tool calls is a `reason`. A step made here has no
calls of its own: the tokens are what the system reports beside it.

What cannot be read is refused naming the field (`messages[3].tool_calls must be a list`); each
route adds where (the file and line, or the service).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from freshrag.core.errors import UserError
from freshrag.core.types import STEP_KINDS, RetrievedChunk, Step

QUERY_ARGUMENTS = ("query", "q", "search_query", "input")  # a tool call's search query, first wins
STEP_KEYS = ("kind", "query", "retrieved", "title", "text")
ROW_KEYS = ("repeated", "calls", "usage", "latency_s")  # a row's own: made again where it is written
RAGAS_TYPES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


class TrajectoryError(UserError, ValueError):
    """A trajectory that cannot be read; the message names the field, each route adds where."""


@dataclass(frozen=True, eq=False)  # by identity: two equal calls each have their result
class Call:
    """One tool call of an assistant message: its function's name and parsed arguments."""

    name: str
    arguments: dict[str, Any]
    id: str | None


@dataclass(frozen=True)
class Message:
    """One message of a conversation, its role in OpenAI's words."""

    role: str
    text: str
    calls: tuple[Call, ...] = ()
    answers: str | None = None  # a tool message's tool_call_id


def reported_steps(steps: Any, messages: Any, names: tuple[str, str] = ("steps", "messages")
                   ) -> list[Step]:
    """The steps a system reported, as `steps` or as `messages` (None where not reported);
    `names` are the two fields as the source calls them, for the errors."""
    if steps is not None and messages is not None:
        raise TrajectoryError(f"gives both {names[0]} and {names[1]}; give the trajectory once")
    if steps is not None:
        return steps_from(steps, names[0])
    return [] if messages is None else steps_from_messages(messages, names[1])


def steps_from(value: Any, field: str = "steps") -> list[Step]:
    """Steps in the shape of a row's (docs/run-format.md#steps): kind, query, retrieved
    [{title, index, score}], title, text; a row's own fields (calls, usage...) are ignored."""
    if not isinstance(value, list):
        raise TrajectoryError(f"{field} must be a list of step objects, got {value!r:.80}")
    return [_step(item, f"{field}[{i}]") for i, item in enumerate(value)]


def _step(item: Any, where: str) -> Step:
    if not isinstance(item, dict):
        raise TrajectoryError(f"{where} must be a step object, got {item!r:.80}")
    if unknown := sorted(set(item) - set(STEP_KEYS) - set(ROW_KEYS)):
        raise TrajectoryError(f"{where}: unknown field(s) {unknown}; known: {', '.join(STEP_KEYS)}")
    if item.get("kind") not in STEP_KINDS:
        raise TrajectoryError(f"{where}.kind {item.get('kind')!r:.40} is not one of "
                              f"{', '.join(STEP_KINDS)}")
    for name in ("query", "title", "text"):
        if not isinstance(item.get(name), (str, type(None))):
            raise TrajectoryError(f"{where}.{name} must be text or null, got {item[name]!r:.80}")
    retrieved = item.get("retrieved") or []
    if not isinstance(retrieved, list):
        raise TrajectoryError(f"{where}.retrieved must be a list, got {retrieved!r:.80}")
    chunks = [_chunk(chunk, i) for i, chunk in enumerate(retrieved)]
    if None in chunks:
        bad = retrieved[chunks.index(None)]
        raise TrajectoryError(f"{where}.retrieved[{chunks.index(None)}] must be {{title: text, "
                              f"index: a whole number, score: a number}}, got {bad!r:.80}")
    return Step(item["kind"], query=item.get("query"), title=item.get("title"),
                text=item.get("text"), retrieved=tuple(c for c in chunks if c is not None))


def _chunk(item: Any, place: int) -> RetrievedChunk | None:
    """A chunk from {title, index, score, text}: index defaults to its place in the list, score to
    0 (a row's chunk holds a number); None when it is no such object."""
    if not isinstance(item, dict) or not isinstance(item.get("title"), str):
        return None
    index, score = item.get("index", place), item.get("score", 0.0)
    text = item.get("text", item.get("content", ""))
    if isinstance(index, bool) or not isinstance(index, int) or index < 0 \
            or isinstance(score, bool) or not isinstance(score, (int, float)) \
            or not math.isfinite(score) or not isinstance(text, str):
        return None
    return RetrievedChunk(item["title"], index, text, float(score))


def steps_from_messages(value: Any, field: str = "messages") -> list[Step]:
    """The steps of a conversation (OpenAI chat messages or Ragas' messages), as the module's
    docstring says."""
    messages = [_message(item, f"{field}[{i}]") for i, item in enumerate(_listed(value, field))]
    results = _tool_results(messages)
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    steps: list[Step] = []
    for i, message in enumerate(messages):
        if message.role != "assistant":
            continue  # the question, a system prompt, a tool's result (read with its call)
        if not message.calls:
            if i == last or message.text.strip():
                steps.append(Step("answer" if i == last else "reason", text=message.text or None))
            continue
        if message.text.strip():
            steps.append(Step("reason", text=message.text))
        steps += [_call_step(call, results.get(id(call))) for call in message.calls]
    return steps


def conversation_ends(value: Any, field: str) -> tuple[str | None, str | None]:
    """A conversation's question, the first user (Ragas: human) message's text, and its answer,
    the last assistant (ai) message's; None where there is none."""
    messages = [_message(item, f"{field}[{i}]") for i, item in enumerate(_listed(value, field))]
    users = [m.text for m in messages if m.role == "user"]
    answers = [m.text for m in messages if m.role == "assistant"]
    return (users[0] if users else None), (answers[-1] if answers else None)


def _listed(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise TrajectoryError(f"{field} must be a list of message objects, got {value!r:.80}")
    return value


def _message(item: Any, where: str) -> Message:
    kind = item.get("type") if isinstance(item, dict) else None
    role = item.get("role", RAGAS_TYPES.get(kind) if isinstance(kind, str) else None) \
        if isinstance(item, dict) else None
    if not isinstance(role, str):
        raise TrajectoryError(f"{where} must be an object with a role (or Ragas' type human, ai "
                              f"or tool), got {item!r:.80}")
    calls = item.get("tool_calls") or []
    if not isinstance(calls, list):
        raise TrajectoryError(f"{where}.tool_calls must be a list, got {calls!r:.80}")
    answers = item.get("tool_call_id")
    return Message(role, _text(item.get("content"), f"{where}.content"),
                   tuple(_call(call, f"{where}.tool_calls[{j}]") for j, call in enumerate(calls)),
                   answers if isinstance(answers, str) else None)


def _text(content: Any, where: str) -> str:
    """A message's text: text, null, or OpenAI's list of parts (its text parts joined)."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(part, dict) for part in content):
        return "".join(part["text"] for part in content if isinstance(part.get("text"), str))
    raise TrajectoryError(f"{where} must be text or a list of content parts, got {content!r:.80}")


def _call(item: Any, where: str) -> Call:
    """An OpenAI tool call {id, function: {name, arguments: JSON text}} or Ragas' {name, args}."""
    function = item.get("function", item) if isinstance(item, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or not isinstance(item, dict) or not isinstance(function, dict):
        raise TrajectoryError(f"{where} must be an object with a function's name and arguments "
                              f"(or Ragas' name and args), got {item!r:.80}")
    key = "arguments" if "function" in item or "arguments" in function else "args"
    arguments, there = function.get(key, {}), f"{where}{'.function' if 'function' in item else ''}"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            raise TrajectoryError(f"{there}.{key} is not JSON: {arguments!r:.80}") from None
    if not isinstance(arguments, dict):
        raise TrajectoryError(f"{there}.{key} must be a JSON object, got {arguments!r:.80}")
    call_id = item.get("id")
    return Call(name, arguments, call_id if isinstance(call_id, str) else None)


def _tool_results(messages: list[Message]) -> dict[int, str]:
    """What each call's tool returned, by the call's id(): a tool message answers the call its
    tool_call_id names, or, without one (Ragas'), the earliest call still unanswered."""
    pending: list[Call] = []
    results: dict[int, str] = {}
    for message in messages:
        pending += message.calls
        if message.role != "tool" or not pending:
            continue
        named = [call for call in pending if message.answers and call.id == message.answers]
        if named or message.answers is None:
            call = (named or pending)[0]
            pending.remove(call)
            results[id(call)] = message.text
    return results


def _call_step(call: Call, result: str | None) -> Step:
    query = next((call.arguments[name] for name in QUERY_ARGUMENTS
                  if isinstance(call.arguments.get(name), str) and call.arguments[name].strip()),
                 None)
    if query is not None:
        return Step("search", query=query, retrieved=_found(result))
    if isinstance(call.arguments.get("title"), str):
        return Step("read", title=call.arguments["title"])
    # default=str: a CSV's Python list may hold what JSON cannot (a set)
    arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)
    return Step("reason", text=f"{call.name}({arguments})")


def _found(result: str | None) -> tuple[RetrievedChunk, ...]:
    """The chunks a search tool returned: a JSON list of {title, index, score, text} objects, or
    one under `results`; anything else names no article, so none."""
    try:
        found = json.loads(result) if result else None
    except (ValueError, RecursionError):
        return ()
    if isinstance(found, dict):
        found = found.get("results")
    if not isinstance(found, list):
        return ()
    chunks = [_chunk(item, i) for i, item in enumerate(found)]
    return () if None in chunks else tuple(c for c in chunks if c is not None)

"""An agent's trace as an answer (docs/own-system.md#traces-made-elsewhere): the mapping from
spans to a `SystemAnswer`, the inverse of harness/reporting/otel.py's from a row to spans, for the
GenAI semantic conventions' attributes and OpenInference's alike. systems/external/traces_file.py
finds each trace's spans and question; this module makes the answer.

The agent's span asks and answers: the trace's first root that names a question, else its
earliest `invoke_agent` (OpenInference: AGENT) span that does. Below it, in start order, each
model call (`chat`; LLM) is a call with its model, tokens and duration, each tool call
(`execute_tool`; TOOL) a step (a search when its arguments hold a query, with the documents of
the retrieval inside it; a read when they hold a title; else a reason step naming the call), each
retrieval (`retrieval`; RETRIEVER) of its own a search; freshrag's own attributes
(`freshrag.step.kind`, `freshrag.role`) put each call back in its step, and the judge's calls are
left out (the run's judge grades the answer again). Other spans are looked through. A trace
whose parent ids form a cycle, or without an answer, is counted and gives none; an attribute of
the wrong type is counted, named, and read as not given (a token count: the tokens unknown).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

from freshrag.core.records import DECISIONS
from freshrag.core.types import (
    ROLES,
    STOPS,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    Usage,
)
from freshrag.systems.external.spans_read import NS, Problems, Span
from freshrag.systems.external.trajectory import QUERY_ARGUMENTS

JUDGE = "judge"
MODEL_CALLS = ("chat", "text_completion", "generate_content")
# OpenInference's span kinds as the GenAI conventions' operations
MAX_DEPTH = 200  # spans inside spans: far past any agent's, well within Python's recursion
KINDS = {"LLM": "chat", "TOOL": "execute_tool", "RETRIEVER": "retrieval", "AGENT": "invoke_agent"}

@dataclass
class Walk:
    """What a trace's spans add up to, in start order."""

    steps: list[Step] = field(default_factory=list)
    loose: list[LLMResponse] = field(default_factory=list)  # calls no step holds
    judged_ns: int = 0  # the judge's time inside the agent's span
    foreign: bool = True  # no span of freshrag's own (freshrag.step.kind)
    unknown_tokens: bool = False


def trace_answer(found: list[Span], question: Question, name: str,
                 problems: Problems) -> SystemAnswer | None:
    """The answer a trace's spans give; None (counted) when it has a cycle or no answer."""
    if not found:
        return None
    trace = found[0].trace
    by_id = {span.id: span for span in found}
    children: dict[str | None, list[Span]] = defaultdict(list)
    for span in found:
        parent = span.parent if span.parent in by_id else None
        children[parent].append(span)
    for listed in children.values():
        listed.sort(key=lambda span: span.start or 0)
    reached, depth = _reached(children)
    if reached < len(found):
        problems.add("trace(s) with a cycle in their parent ids", f"trace {trace}")
        return None
    if depth > MAX_DEPTH:  # the walk below recurses once a level
        problems.add(f"trace(s) nested deeper than {MAX_DEPTH} spans", f"trace {trace}")
        return None
    agent = _agent(children)
    text = _output(agent.attributes) if agent is not None else None
    if agent is None or text is None:
        problems.add("trace(s) without an answer", f"trace {trace}")
        return None
    walk = Walk()
    for root in children[None]:
        _walk(root if root is not agent else None, children[root.id] if root is agent else [],
              children, walk, problems, name)
    return _answer(agent, text, walk, problems, name)


def _reached(children: dict[str | None, list[Span]]) -> tuple[int, int]:
    """How many spans the roots reach (fewer than the trace holds when parents form a cycle),
    and how deep they nest."""
    reached, deepest, stack = 0, 0, [(span, 1) for span in children[None]]
    while stack:
        span, depth = stack.pop()
        reached, deepest = reached + 1, max(deepest, depth)
        stack += [(kid, depth + 1) for kid in children.get(span.id, [])]
    return reached, deepest


def _agent(children: dict[str | None, list[Span]]) -> Span | None:
    """The span that asks and answers: the first root that names a question, else the
    earliest agent span that does."""
    roots = [span for span in children[None] if question_of(span.attributes) != (None, None)]
    if roots:
        return roots[0]
    agents, stack = [], list(children[None])
    while stack:
        span = stack.pop()
        if operation(span) == "invoke_agent" and question_of(span.attributes) != (None, None):
            agents.append(span)
        stack += children.get(span.id, [])
    return min(agents, key=lambda span: span.start or 0, default=None)


def _walk(span: Span | None, kids: list[Span], children: dict[str | None, list[Span]],
          walk: Walk, problems: Problems, model: str) -> None:
    """Add `span` (None: only `kids`) to the walk: a step, a call, or its children's."""
    if span is None:
        for kid in kids:
            _walk(kid, [], children, walk, problems, model)
        return
    below = children.get(span.id, [])
    done, kind = operation(span), span.attributes.get("freshrag.step.kind")
    if kind is not None:
        walk.foreign = False
    if done in MODEL_CALLS:
        _model_call(span, walk, problems, model)
    elif done == "execute_tool":
        walk.steps.append(_tool_step(span, below, walk, problems, model))
    elif done == "retrieval":
        walk.steps.append(Step("search", query=_query(span),
                               retrieved=tuple(_documents(span, problems))))
    elif isinstance(kind, str) and kind in ("decide", "reason", "answer"):
        inner = Walk()
        for kid in below:
            _walk(kid, [], children, inner, problems, model)
        calls = tuple(inner.loose) + tuple(c for step in inner.steps for c in step.calls)
        walk.unknown_tokens |= inner.unknown_tokens
        walk.steps.append(Step(kind, calls=calls, text=_text_attribute(span, "freshrag.step.text")))
    else:  # a chain, an agent inside, a span of no known operation: looked through
        for kid in below:
            _walk(kid, [], children, walk, problems, model)


def _model_call(span: Span, walk: Walk, problems: Problems, model: str) -> None:
    call = _call(span, walk, problems, model)
    if call.role == JUDGE:
        walk.judged_ns += _duration(span)
        return
    kind = span.attributes.get("freshrag.step.kind")
    if isinstance(kind, str) and kind in ("decide", "reason", "answer"):
        walk.steps.append(Step(kind, calls=(call,), text=_text_attribute(span,
                                                                         "freshrag.step.text")))
    elif "freshrag.role" in span.attributes:  # freshrag's own call no step holds
        walk.loose.append(call)
    else:  # another tool's model call: a step of the trajectory
        walk.steps.append(Step("reason", calls=(call,), text=_output(span.attributes)))


def _call(span: Span, walk: Walk, problems: Problems, model: str) -> LLMResponse:
    attributes = span.attributes
    role = attributes.get("freshrag.role")
    counts = [_count(span, keys, problems) for keys in (
        ("gen_ai.usage.input_tokens", "llm.token_count.prompt"),
        ("gen_ai.usage.output_tokens", "llm.token_count.completion"))]
    if None in counts:
        walk.unknown_tokens = True
    named = next((attributes[key] for key in ("gen_ai.request.model", "gen_ai.response.model",
                                              "llm.model_name")
                  if isinstance(attributes.get(key), str) and attributes[key]), model)
    tool = attributes.get("freshrag.tool_name")
    return LLMResponse(
        role=role if isinstance(role, str) and role in ROLES else "answer", model=named,
        text=None, tool_name=tool if isinstance(tool, str) else None, tool_arguments=None,
        usage=Usage(counts[0] or 0, counts[1] or 0,
                    attributes.get("freshrag.usage.estimated") is True),
        latency_s=_duration(span) / NS, cache_hit=attributes.get("freshrag.cache_hit") is True,
        messages=[], batch=attributes.get("freshrag.batch") is True)


def _tool_step(span: Span, below: list[Span], walk: Walk, problems: Problems,
               model: str) -> Step:
    """A tool call's step: a search (its retrieval child's documents), a read, or a reason
    step naming the call; the model calls inside it are its calls."""
    attributes = span.attributes
    name = next((attributes[key] for key in ("gen_ai.tool.name", "tool.name")
                 if isinstance(attributes.get(key), str)), span.name)
    arguments = _arguments(span, problems)
    inner = Walk()
    found: list[RetrievedChunk] = []
    for kid in below:
        if operation(kid) == "retrieval":
            found += _documents(kid, problems)
        elif operation(kid) in MODEL_CALLS:
            inner.loose.append(_call(kid, walk, problems, model))
    calls = tuple(inner.loose)
    query = next((arguments[key] for key in QUERY_ARGUMENTS
                  if isinstance(arguments.get(key), str) and arguments[key].strip()), None)
    if query is not None:
        return Step("search", calls=calls, query=query, retrieved=tuple(found))
    if isinstance(arguments.get("title"), str):
        return Step("read", calls=calls, title=arguments["title"])
    text = f"{name}({json.dumps(arguments, ensure_ascii=False, default=str)})"
    return Step("reason", calls=calls, text=text)


def _answer(agent: Span, text: str, walk: Walk, problems: Problems, name: str) -> SystemAnswer:
    steps = walk.steps
    if walk.foreign and steps and steps[-1].kind == "reason" and steps[-1].calls \
            and steps[-1].text is not None:
        last = steps[-1]  # another tool's last model call gave the answer
        steps = [*steps[:-1], Step("answer", calls=last.calls, text=last.text)]
    calls = [call for step in steps for call in step.calls] + walk.loose
    attributes = agent.attributes
    unknown = []
    if walk.unknown_tokens or not calls:
        totals = [_count(agent, (f"gen_ai.usage.{side}_tokens",), problems)
                  for side in ("input", "output")]
        spent_in, spent_out = totals
        if calls or spent_in is None or spent_out is None:
            unknown += ["input_tokens", "output_tokens"]
            calls = []
        else:  # the agent's own totals, where no model call is traced
            calls = [LLMResponse("answer", name, text, None, None, Usage(spent_in, spent_out),
                                 0.0, False, [])]
    retrievals = _count(agent, ("freshrag.retrievals",), problems)
    if retrievals is None:
        retrievals = sum(step.kind == "search" for step in steps)
    decision = attributes.get("freshrag.decision")
    if decision not in DECISIONS:
        decision = None
        unknown.append("decision")
    details: dict[str, Any] = {"decision": decision, "unknown": unknown}
    if "freshrag.retrieved" in attributes:  # the chunks the answer saw (freshrag's own)
        details["retrieved"] = [{"title": chunk.title, "index": chunk.index,
                                 "score": chunk.score} for chunk in _documents(
                                     agent, problems, "freshrag.retrieved")]
    stopped = attributes.get("freshrag.stopped")
    latency = None if agent.end is None or agent.start is None else \
        max(0, agent.end - agent.start - walk.judged_ns) / NS
    return SystemAnswer(text, calls=calls, retrievals=retrievals,
                        details=details, latency_s=latency,
                        steps=steps, stopped=stopped if stopped in STOPS else None)


# --------------------------------------------------------------------------- attributes

def operation(span: Span) -> str | None:
    """The span's GenAI operation, from OpenInference's span kind where it names none."""
    attributes = span.attributes
    named = attributes.get("gen_ai.operation.name")
    if isinstance(named, str):
        return named
    kind = attributes.get("openinference.span.kind")
    return KINDS.get(kind.upper()) if isinstance(kind, str) else None


def question_of(attributes: dict[str, Any]) -> tuple[Any, str | None]:
    """A span's question: its id (`freshrag.question_id`, or `question_id` in OpenInference's
    `metadata`) and its text (the first user message, or `input.value`)."""
    qid = attributes.get("freshrag.question_id")
    metadata = _json(attributes.get("metadata"))
    if qid is None and isinstance(metadata, dict):
        qid = metadata.get("question_id")
    qid = attributes.get("metadata.question_id") if qid is None else qid  # Phoenix's, nested
    text = _message_text(attributes.get("gen_ai.input.messages"), "user", first=True)
    if text is None and isinstance(attributes.get("input.value"), str):
        text = attributes["input.value"]
    return (qid if isinstance(qid, (str, int)) and not isinstance(qid, bool) else None), text


def _output(attributes: dict[str, Any]) -> str | None:
    text = _message_text(attributes.get("gen_ai.output.messages"), "assistant", first=False)
    if text is None and isinstance(attributes.get("output.value"), str):
        text = attributes["output.value"]
    return text


def _message_text(value: Any, role: str, first: bool) -> str | None:
    """The text of the first (or last) message of `role` in the conventions' messages: a JSON
    text or a list of {role, parts: [{type: text, content}]} (or {role, content})."""
    messages = _json(value)
    if not isinstance(messages, list):
        return None
    texts = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role", role) != role:
            continue
        parts = message.get("parts")
        if isinstance(parts, list):
            texts.append("".join(part.get("content", "") for part in parts if isinstance(part, dict)
                                 and part.get("type", "text") == "text"
                                 and isinstance(part.get("content", ""), str)))
        elif isinstance(message.get("content"), str):
            texts.append(message["content"])
    return (texts[0] if first else texts[-1]) if texts else None


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _count(span: Span, keys: Iterable[str], problems: Problems) -> int | None:
    """A whole number from 0 at the first of `keys` the span has; one of another type is
    counted and named, and read as not given."""
    for key in keys:
        if key not in span.attributes:
            continue
        value = span.attributes[key]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**12:
            return value
        problems.add("attribute(s) of the wrong type", f"trace {span.trace} span {span.id} {key}")
        return None
    return None


def _text_attribute(span: Span, key: str) -> str | None:
    value = span.attributes.get(key)
    return value if isinstance(value, str) else None


def _query(span: Span) -> str | None:
    for key in ("gen_ai.retrieval.query.text", "input.value"):
        if isinstance(span.attributes.get(key), str):
            return span.attributes[key]
    return None


def _arguments(span: Span, problems: Problems) -> dict[str, Any]:
    for key in ("gen_ai.tool.call.arguments", "tool.parameters", "input.value"):
        if key in span.attributes:
            value = _json(span.attributes[key])
            if isinstance(value, dict):
                return value
            problems.add("attribute(s) of the wrong type",
                         f"trace {span.trace} span {span.id} {key}")
            return {}
    return {}


def _documents(span: Span, problems: Problems,
               key: str = "gen_ai.retrieval.documents") -> list[RetrievedChunk]:
    """A retrieval's documents, best first: the GenAI conventions' JSON list of {id, score}, or
    OpenInference's flattened `retrieval.documents.N.document.*`. An id `TITLE#INDEX` is a
    chunk's article and place (freshrag's own); any other id is the article, at its place."""
    listed = _json(span.attributes.get(key))
    if listed is None:
        listed, i = [], 0
        while f"retrieval.documents.{i}.document.id" in span.attributes:
            prefix = f"retrieval.documents.{i}.document."
            listed.append({"id": span.attributes[prefix + "id"],
                           "score": span.attributes.get(prefix + "score"),
                           "content": span.attributes.get(prefix + "content")})
            i += 1
    if not isinstance(listed, list):
        problems.add("attribute(s) of the wrong type",
                     f"trace {span.trace} span {span.id} {key}")
        return []
    found = []
    for place, document in enumerate(listed):
        ident = document.get("id") if isinstance(document, dict) else None
        score = document.get("score") if isinstance(document, dict) else None
        if not isinstance(ident, (str, int)) or isinstance(score, bool) or \
                not isinstance(score, (int, float, type(None))):
            problems.add("attribute(s) of the wrong type",
                         f"trace {span.trace} span {span.id} document {place}")
            continue
        title, index = _chunk_id(str(ident), place)
        content = document.get("content")
        found.append(RetrievedChunk(title, index, content if isinstance(content, str) else "",
                                    float(score or 0.0)))
    return found


def _chunk_id(ident: str, place: int) -> tuple[str, int]:
    title, mark, index = ident.rpartition("#")
    if mark and index.isdigit():
        return title, int(index)
    return ident, place


def _duration(span: Span) -> int:
    if span.start is None or span.end is None:
        return 0
    return max(0, span.end - span.start)


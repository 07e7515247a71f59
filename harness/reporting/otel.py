"""Run directories' answers as OpenTelemetry traces (docs/export.md#opentelemetry-traces): one
trace per answered pair, following the OpenTelemetry GenAI semantic conventions v0.1.0 (the first
release of the `semantic-conventions-genai` repository; status: development). Reading only the
runs' files, it makes no call.

The spans are made by the real SDK (`opentelemetry-sdk`: a TracerProvider, explicit start and
end times laid out from the row's `finished_at` and latencies, ids drawn from a generator seeded
by the run and the pair, so that the same run exports the same bytes) and encoded by the real
OTLP encoder (`opentelemetry-exporter-otlp-proto-common`), then written as OTLP/JSON by protobuf's
own `json_format`: one `ExportTraceServiceRequest` a line, as the OpenTelemetry Collector's file
exporter writes them. With `openinference`, each span also has OpenInference's attributes
(`openinference-semantic-conventions` names them), derived from its GenAI ones, for the tools that
read that dialect. The trace of a pair:

    invoke_agent SYSTEM               the pair, the judge included; gen_ai.evaluation.result events
      chat MODEL                      a step of one call (decide, reason, answer) is that call
      execute_tool search             a search step; its call (an agent's choice of query) inside
        retrieval                     what it found: gen_ai.retrieval.documents, id TITLE#INDEX
      execute_tool read               a read step
      STEP_KIND                       a step of no call or of several: its calls inside
      chat MODEL                      the judge's calls (freshrag.role judge), and any call no step
                                      holds
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator, Mapping, Sequence

from google.protobuf import json_format
from openinference.semconv.trace import DocumentAttributes as Document
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as OI
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Span, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import SpanKind

from freshrag import __version__
from freshrag.core.records import CallRecord, SampleRow, StepRecord
from freshrag.core.samples import judge_scores
from freshrag.core.summary import summary_of
from freshrag.reporting.retrieval_metrics import gold_set

SEMCONV = "0.1.0"  # the GenAI semantic conventions' release mapped here (docs/export.md)
SCOPE = "freshrag.export"
PROVIDER = "openai"  # freshrag speaks the OpenAI API, whatever serves it (gen_ai.provider.name)
JUDGE = "judge"
NS = 1_000_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# an OTLP/JSON id is hex (protobuf's own JSON would write bytes as base64)
IDS = ("traceId", "spanId", "parentSpanId")


class PairIds(IdGenerator):
    """Trace and span ids drawn from a generator seeded by the pair, for reproducible files."""

    def __init__(self) -> None:
        self._draw = random.Random(0)

    def seed(self, *parts: Any) -> None:
        key = json.dumps(parts, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
        self._draw = random.Random(hashlib.sha256(key).digest())

    def generate_span_id(self) -> int:
        return self._draw.getrandbits(64) or 1  # 0 is the invalid id

    def generate_trace_id(self) -> int:
        return self._draw.getrandbits(128) or 1


class Tracer:
    """The SDK's provider, collecting each pair's spans in memory to encode them, or handing
    them to `processor` (the live exporter's, harness/reporting/otel_live.py)."""

    def __init__(self, openinference: bool = False,
                 processor: SpanProcessor | None = None) -> None:
        self.ids, self.openinference = PairIds(), openinference
        # no limits: a search's documents and a pair's scores are written whole; the provider
        # reads nothing from the environment (sampler, resource, limits) that could change a file
        unlimited = SpanLimits.UNSET
        provider = TracerProvider(
            sampler=ALWAYS_ON, resource=Resource({"service.name": "freshrag",
                                                  "service.version": __version__}),
            shutdown_on_exit=False, id_generator=self.ids,
            span_limits=SpanLimits(max_attributes=unlimited, max_events=unlimited,
                                   max_span_attributes=unlimited,
                                   max_event_attributes=unlimited,
                                   max_attribute_length=unlimited,
                                   max_span_attribute_length=unlimited))
        self.spans = InMemorySpanExporter()
        provider.add_span_processor(processor or SimpleSpanProcessor(self.spans))
        self.tracer = provider.get_tracer(SCOPE, __version__,
                                          attributes={"gen_ai.semconv.version": SEMCONV})

    def start(self, name: str, at: int, attributes: Mapping[str, Any],
              parent: Span | None = None) -> Span:
        context = None if parent is None else trace.set_span_in_context(parent)
        if self.openinference:
            attributes = {**attributes, **openinference_attributes(attributes)}
        span = self.tracer.start_span(_text(name), context=context, kind=SpanKind.INTERNAL,
                                      attributes=_attributes(attributes), start_time=at)
        assert isinstance(span, Span)
        return span


def trace_records(rows: Iterable[SampleRow], openinference: bool = False
                  ) -> Iterator[dict[str, Any]]:
    """Each answered row's trace as one OTLP/JSON `ExportTraceServiceRequest`, made as it is
    written; with `openinference`, OpenInference's attributes beside the GenAI ones."""
    tracer = Tracer(openinference)
    for row in rows:
        seeded_trace(tracer, row)
        request = encode_spans(tracer.spans.get_finished_spans())
        tracer.spans.clear()
        yield otlp_json(json_format.MessageToDict(request, use_integers_for_enums=True))


def seeded_trace(tracer: Tracer, row: SampleRow) -> None:
    """The pair's trace, its ids drawn from a generator seeded by the run and the pair."""
    tracer.ids.seed(row.get("run"), row.get("dataset"), row["system"], row["question_id"],
                    row.get("epoch") or 1)
    pair_trace(tracer, row)


def otlp_json(value: Any) -> Any:
    """protobuf's JSON as OTLP/JSON has it: trace and span ids as hex, not base64."""
    if isinstance(value, list):
        return [otlp_json(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {key: base64.b64decode(item).hex() if key in IDS else otlp_json(item)
            for key, item in value.items()}


# --------------------------------------------------------------------------- one pair

def pair_trace(tracer: Tracer, row: SampleRow) -> None:
    """The pair's spans, ended in the tracer (children before their parent)."""
    calls = list(row.get("calls") or [])
    end = _finished_ns(row, calls)
    start = end - _ns(row.get("latency_s") or sum(_latency(call) for call in calls))
    root = tracer.start(f"invoke_agent {row['system']}", start, _agent_attributes(row))
    at, used = start, 0
    for step in row.get("steps") or []:
        count = max(0, min(int(step.get("calls") or 0), len(calls) - used))
        at = _step(tracer, root, step, calls[used:used + count], at)
        used += count
    if isinstance(row.get("answer_latency_s"), (int, float)):  # the judge after the answer
        at = max(at, start + _ns(row.get("answer_latency_s")))
    for call in calls[used:]:
        at = _chat(tracer, root, call, at)
    end = max(end, at)
    for attributes in evaluations(row):
        root.add_event("gen_ai.evaluation.result", _attributes(attributes), timestamp=end)
    root.end(end_time=end)


def _step(tracer: Tracer, root: Span, step: StepRecord, calls: Sequence[CallRecord],
          at: int) -> int:
    """A step's spans from `at`; returns where they end."""
    kind = step["kind"]
    marks = {"freshrag.step.kind": kind, "freshrag.step.text": step.get("text")}
    if kind in ("search", "read"):
        tool = _tool_attributes(step)
        span = tracer.start(f"execute_tool {tool['gen_ai.tool.name']}", at, {**tool, **marks},
                            parent=root)
        for call in calls:
            at = _chat(tracer, span, call, at)
        if kind == "search":
            tracer.start("retrieval", at, _retrieval_attributes(step), parent=span).end(at)
        span.end(at)
        return at
    if len(calls) == 1:
        return _chat(tracer, root, calls[0], at, marks)
    span = tracer.start(kind, at, marks, parent=root)
    for call in calls:
        at = _chat(tracer, span, call, at)
    span.end(at)
    return at


def _chat(tracer: Tracer, parent: Span, call: CallRecord, at: int,
          marks: Mapping[str, Any] | None = None) -> int:
    model = call.get("model") or ""
    usage = call.get("usage") or {"input": 0, "output": 0}
    attributes = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": PROVIDER,
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": usage.get("input", 0),
        "gen_ai.usage.output_tokens": usage.get("output", 0),
        "freshrag.role": call.get("role"), "freshrag.usage.estimated": usage.get("estimated"),
        "freshrag.cache_hit": call.get("cache_hit"), "freshrag.batch": call.get("batch"),
        "freshrag.tool_name": call.get("tool_name"), **(marks or {})}
    end = at + _ns(_latency(call))
    tracer.start(f"chat {model}".strip(), at, attributes, parent=parent).end(end)
    return end


# --------------------------------------------------------------------------- attributes

def _agent_attributes(row: SampleRow) -> dict[str, Any]:
    """The pair's span: the system as the agent, freshrag's identity of the pair, the system's
    tokens (every role but the judge's; none where a system outside freshrag did not report
    them), the question and the answer as the conventions' messages."""
    usage = row.get("usage") or {}
    unknown = set((row.get("details") or {}).get("unknown") or ())
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": row["system"],
        "gen_ai.input.messages": _messages("user", row.get("question") or ""),
        "gen_ai.output.messages": _messages("assistant", row.get("answer") or "",
                                            finish_reason="stop"),
        "freshrag.run": row.get("run"), "freshrag.dataset": row.get("dataset"),
        "freshrag.question_id": row["question_id"], "freshrag.epoch": row.get("epoch") or 1,
        "freshrag.gold_titles": gold_set(summary_of(row)), "freshrag.retrievals": row.get("retrievals"),
        "freshrag.stopped": row.get("stopped"),
        "freshrag.decision": (row.get("details") or {}).get("decision"),
        "freshrag.retrieved": _documents((row.get("details") or {}).get("retrieved"))}
    for side in ("input", "output"):
        if f"{side}_tokens" not in unknown:
            attributes[f"gen_ai.usage.{side}_tokens"] = sum(
                counts[side] for role, counts in usage.items() if role != JUDGE)
    return attributes


def _messages(role: str, text: str, **fields: str) -> str:
    """A message as the conventions' JSON schema has it: a role and its text part."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}], **fields}],
                      ensure_ascii=False)


def _tool_attributes(step: StepRecord) -> dict[str, Any]:
    if step["kind"] == "search":
        name, arguments = "search", {"query": step.get("query") or ""}
    else:
        name, arguments = "read", {"title": step.get("title") or ""}
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.arguments": json.dumps(arguments, ensure_ascii=False),
            "freshrag.repeated": step.get("repeated")}


def _retrieval_attributes(step: StepRecord) -> dict[str, Any]:
    return {"gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.query.text": step.get("query") or "",
            "gen_ai.retrieval.documents": _documents(step.get("retrieved") or [])}


def _documents(found: Any) -> str | None:
    """Chunks as the conventions' documents, a JSON list of {id, score}, best first; None for
    what is no list (a row that recorded none)."""
    if not isinstance(found, list):
        return None
    return json.dumps([{"id": document_id(chunk["title"], chunk.get("index")),
                        "score": chunk.get("score")} for chunk in found
                       if isinstance(chunk, dict) and isinstance(chunk.get("title"), str)],
                      ensure_ascii=False)


def document_id(title: str, index: Any) -> str:
    """A chunk's id: its article's title and its place in it."""
    return f"{title}#{index}"


def evaluations(row: SampleRow) -> list[dict[str, Any]]:
    """A `gen_ai.evaluation.result` event's attributes per score: the judge's two grades with
    its reason (an unscored answer: each grade labelled `unscored`, with why), then each
    scorer's metrics, or its status and reason where it gave none."""
    events: list[dict[str, Any]] = []
    grade = row.get("grade")
    if grade is not None:
        scores = judge_scores(summary_of(row)) or {}
        for name in ("truthfulness", "relevance"):
            value = scores.get(name)
            events.append({
                "gen_ai.evaluation.name": name, "freshrag.scorer": JUDGE,
                **({"gen_ai.evaluation.score.value": float(value)} if value is not None
                   else {"gen_ai.evaluation.score.label": "unscored"}),
                "gen_ai.evaluation.explanation": grade.get("reason") if value is not None
                else grade.get("unscored_reason"),
                "freshrag.graded_by": grade.get("graded_by")})
    for scorer, score in sorted((row.get("scores") or {}).items()):
        metrics = score.get("metrics") or {}
        for metric, value in sorted(metrics.items()):
            name = metric if metric == scorer else f"{scorer}.{metric}"
            events.append({"gen_ai.evaluation.name": name, "freshrag.scorer": scorer,
                           "gen_ai.evaluation.score.value": float(value),
                           "gen_ai.evaluation.explanation": score.get("reason")})
        if not metrics:
            events.append({"gen_ai.evaluation.name": scorer, "freshrag.scorer": scorer,
                           "gen_ai.evaluation.score.label": score.get("status"),
                           "gen_ai.evaluation.explanation": score.get("reason")})
    return events


def openinference_attributes(genai: Mapping[str, Any]) -> dict[str, Any]:
    """A span's OpenInference attributes, from its GenAI ones: the agent's question and answer,
    a model call's model and tokens, a tool's name and arguments, a retrieval's query and
    documents (flattened, as OpenInference lists them); any other span is a chain."""
    operation = genai.get("gen_ai.operation.name")
    if operation == "invoke_agent":
        return {OI.OPENINFERENCE_SPAN_KIND: Kind.AGENT.value,
                OI.AGENT_NAME: genai["gen_ai.agent.name"],
                OI.INPUT_VALUE: _message_text(genai["gen_ai.input.messages"]),
                OI.OUTPUT_VALUE: _message_text(genai["gen_ai.output.messages"])}
    if operation == "chat":
        spent = (genai["gen_ai.usage.input_tokens"], genai["gen_ai.usage.output_tokens"])
        return {OI.OPENINFERENCE_SPAN_KIND: Kind.LLM.value, OI.LLM_SYSTEM: PROVIDER,
                OI.LLM_PROVIDER: PROVIDER, OI.LLM_MODEL_NAME: genai["gen_ai.request.model"],
                OI.LLM_TOKEN_COUNT_PROMPT: spent[0], OI.LLM_TOKEN_COUNT_COMPLETION: spent[1],
                OI.LLM_TOKEN_COUNT_TOTAL: sum(spent)}
    if operation == "execute_tool":
        return {OI.OPENINFERENCE_SPAN_KIND: Kind.TOOL.value,
                OI.TOOL_NAME: genai["gen_ai.tool.name"],
                OI.TOOL_PARAMETERS: genai["gen_ai.tool.call.arguments"],
                OI.INPUT_VALUE: genai["gen_ai.tool.call.arguments"],
                OI.INPUT_MIME_TYPE: "application/json"}
    if operation == "retrieval":
        found = {OI.OPENINFERENCE_SPAN_KIND: Kind.RETRIEVER.value,
                 OI.INPUT_VALUE: genai["gen_ai.retrieval.query.text"]}
        for i, document in enumerate(json.loads(genai["gen_ai.retrieval.documents"])):
            found[f"{OI.RETRIEVAL_DOCUMENTS}.{i}.{Document.DOCUMENT_ID}"] = document["id"]
            found[f"{OI.RETRIEVAL_DOCUMENTS}.{i}.{Document.DOCUMENT_SCORE}"] = document["score"]
        return found
    return {OI.OPENINFERENCE_SPAN_KIND: Kind.CHAIN.value}


def _message_text(messages: str) -> str:
    return json.loads(messages)[0]["parts"][0]["content"]


def _attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes as OTLP holds them: null left out (an attribute is absent, never null), text
    made valid UTF-8 (a lone surrogate becomes U+FFFD), lists of text kept as lists."""
    kept: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, str):
            value = _text(value)
        elif isinstance(value, (list, tuple)):
            value = [_text(item) if isinstance(item, str) else item for item in value]
        kept[key] = value
    return kept


def _text(text: str) -> str:
    """`text` as valid UTF-8: a pair of surrogates joined, a lone one U+FFFD (as the readers of
    samples.jsonl make it)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


# --------------------------------------------------------------------------- times

def _latency(call: CallRecord) -> float:
    latency = call.get("latency_s")
    return float(latency) if isinstance(latency, (int, float)) and latency > 0 else 0.0


def _ns(seconds: Any) -> int:
    return round(float(seconds) * NS) if isinstance(seconds, (int, float)) and seconds > 0 else 0


def _finished_ns(row: SampleRow, calls: Sequence[CallRecord]) -> int:
    """When the pair finished, in nanoseconds since the epoch; a row without `finished_at` (made
    by hand, imported) ends at the epoch plus its calls' time, so that its trace is still
    reproducible."""
    text = row.get("finished_at")
    if isinstance(text, str):
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            since = moment - EPOCH  # exact: no float on the way
            return (since.days * 86_400 + since.seconds) * NS + since.microseconds * 1000
    return _ns(row.get("latency_s") or sum(_latency(call) for call in calls))

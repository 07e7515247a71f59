"""OTLP/JSON as the tests read it back: each line of a file parsed by protobuf's own json_format
into opentelemetry-proto's `ExportTraceServiceRequest` (an unknown field or a wrong type fails
it), and a span's or an event's attributes as Python values."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from freshrag.reporting import otel


def requests_in(path: Path) -> list[ExportTraceServiceRequest]:
    """Each line parsed as OTLP/JSON: hex ids back to protobuf's base64, then json_format."""
    return [json_format.ParseDict(_base64_ids(json.loads(line)), ExportTraceServiceRequest())
            for line in path.read_text(encoding="utf-8").splitlines()]


def _base64_ids(value: Any) -> Any:
    if isinstance(value, list):
        return [_base64_ids(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {key: base64.b64encode(bytes.fromhex(item)).decode() if key in otel.IDS
            else _base64_ids(item) for key, item in value.items()}


def spans_of(request: ExportTraceServiceRequest) -> list[Any]:
    return [span for resource in request.resource_spans for scope in resource.scope_spans
            for span in scope.spans]


def attrs(item: Any) -> dict[str, Any]:
    """A span's or an event's attributes as Python values."""
    found: dict[str, Any] = {}
    for attribute in item.attributes:
        value = attribute.value
        kind = value.WhichOneof("value")
        found[attribute.key] = ([getattr(v, v.WhichOneof("value")) for v in value.array_value.values]
                                if kind == "array_value" else getattr(value, kind))
    return found

"""A traces file's spans, streamed (docs/own-system.md#traces-made-elsewhere): one at a time,
whatever the file's size, from OTLP/JSON (`ExportTraceServiceRequest`s, one a line as the
OpenTelemetry Collector's file exporter and `freshrag export --format otel` write them, or one
whole document) and Arize Phoenix's span exports (its REST API's and client's span objects, one a
line, as a list, or under `data`). Each span comes out as one `Span`: its ids, its times in
nanoseconds, its attributes flat (`llm.token_count.prompt`), whichever encoding held them.

The file is parsed by ijson (its C backend), an event parser that never holds more than the span
it is reading, so a file of a million spans is read in bounded memory. What cannot be read as a
span, a span without its ids, a span without an end and an attribute of no OTLP value type are
counted in `Problems`, each named by its trace and span id, and never stop the read; a file that
is not JSON at all is refused, naming where it stopped.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from freshrag.core.errors import UserError

NS = 1_000_000_000
# where the spans sit in each encoding (ijson's prefixes; a JSON Lines file is several documents)
OTLP_SPANS = "resourceSpans.item.scopeSpans.item.spans.item"
PHOENIX_LIST, PHOENIX_DATA = "item", "data.item"
SHOWN = 5  # the names of each problem a summary lists
MAX_NESTING = 32  # levels of an attribute's value read: far past any convention's, no recursion limit
# Phoenix's span kind, as OpenInference's attribute (OTLP spans carry the attribute itself)
KIND_ATTRIBUTE = "openinference.span.kind"
OTLP_HEAD = re.compile(rb'\{\s*"resourceSpans"\s*:')  # a line that is an OTLP request


class TracesFileError(UserError, ValueError):
    """A traces file that cannot be read at all; the message names the file and where."""


@dataclass(frozen=True)
class Span:
    """One span: ids as lower-case hex, times in nanoseconds since the epoch (None: not given,
    or 0, which OTLP writes for an unended span), attributes flat."""

    trace: str
    id: str
    parent: str | None
    name: str
    start: int | None
    end: int | None
    attributes: dict[str, Any]


@dataclass
class Problems:
    """What a read or a mapping could not use, by kind: how many, and the first few named."""

    counts: Counter = field(default_factory=Counter)
    names: dict[str, list[str]] = field(default_factory=dict)

    def add(self, kind: str, name: str) -> None:
        self.counts[kind] += 1
        shown = self.names.setdefault(kind, [])
        if len(shown) < SHOWN:
            shown.append(name)

    def lines(self) -> list[str]:
        """A line a kind: "1 trace with ...", "2 traces with ..." (a kind names its noun "(s)")."""
        return [f"{count} {kind.replace('(s)', '' if count == 1 else 's', 1)}: "
                f"{', '.join(self.names[kind])}"
                f"{' ...' if count > len(self.names[kind]) else ''}"
                for kind, count in self.counts.items()]


def spans(path: Path, problems: Problems) -> Iterator[Span]:
    """Every span of the file in the file's order; what is not a usable span is counted in
    `problems` (and left out, or kept without the attribute that is wrong)."""
    prefix, ijson = _layout(path), _ijson()
    read = 0
    with open(path, "rb") as handle:
        items = ijson.items(handle, prefix, multiple_values=True, use_float=True)
        while True:
            try:
                item = next(items)
            except StopIteration:
                break
            except (ijson.JSONError, UnicodeDecodeError) as err:
                raise TracesFileError(f"{path}: not JSON past byte {handle.tell():,} "
                                      f"({_said(err)})") from None
            found = (_otlp_span if prefix == OTLP_SPANS else _phoenix_span)(item, problems)
            if found is not None:
                read += 1
                yield found
    if not read:
        raise TracesFileError(f"{path}: holds no spans: neither OTLP/JSON (resourceSpans) nor "
                              f"Phoenix's spans{''.join('; ' + line for line in problems.lines())}")


def _layout(path: Path) -> str:
    """Which encoding the file holds, from its first JSON value's start: an OTLP request (its
    first key `resourceSpans`), a Phoenix response (`data`), a list of Phoenix spans, or
    Phoenix spans one a line."""
    ijson = _ijson()
    if not path.is_file():
        raise TracesFileError(f"{path}: traces file not found")
    with open(path, "rb") as handle:
        try:
            for prefix, event, value in ijson.parse(handle, multiple_values=True):
                if prefix == "" and event == "start_array":
                    return PHOENIX_LIST
                if prefix == "" and event == "map_key":
                    return {"resourceSpans": OTLP_SPANS, "data": PHOENIX_DATA}.get(value, "")
                if prefix == "" and event != "start_map":
                    break
        except (ijson.JSONError, UnicodeDecodeError) as err:
            if handle.tell() and path.read_bytes().strip():
                raise TracesFileError(f"{path}: not JSON ({_said(err)})") from None
    raise TracesFileError(f"{path}: holds no spans: neither OTLP/JSON (resourceSpans) nor "
                          f"Phoenix's spans")


def _said(err: Exception) -> str:
    return " ".join(str(err).split())[:120]


def _ijson() -> Any:
    try:
        import ijson
    except ImportError:
        raise TracesFileError("reading traces needs the traces extra: "
                              "pip install 'freshrag[traces]'") from None
    return ijson


def sniff(path: Path) -> bool:
    """Whether a JSON Lines file holds spans rather than answers: its first line an OTLP
    request or a Phoenix span."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    except OSError:
        return False
    return bool(OTLP_HEAD.match(head)) or (
        head.startswith(b"{") and b'"context"' in head and b'"span_id"' in head)


# --------------------------------------------------------------------------- OTLP/JSON

def _otlp_span(item: Any, problems: Problems) -> Span | None:
    if not isinstance(item, dict):
        problems.add("item(s) that are no span", repr(item)[:40])
        return None
    if (ids := _ids(item, item.get("traceId"), item.get("spanId"), problems)) is None:
        return None
    trace, span_id = ids
    where = f"trace {trace} span {span_id}"
    attributes: dict[str, Any] = {}
    listed = item.get("attributes") or []
    for attribute in listed if isinstance(listed, list) else [None]:
        key = attribute.get("key") if isinstance(attribute, dict) else None
        if not isinstance(attribute, dict) or not isinstance(key, str):
            problems.add("attribute(s) that are no key and value", where)
            continue
        ok, value = _any_value(attribute.get("value"))
        if not ok:
            problems.add("attribute(s) of no OTLP value type", f"{where} {key}")
            continue
        attributes[key] = value
    parent = _hex(item.get("parentSpanId")) or None
    return _ended(Span(trace, span_id, parent, str(item.get("name") or ""),
                       _nanos(item.get("startTimeUnixNano")), _nanos(item.get("endTimeUnixNano")),
                       attributes), problems)


def _any_value(value: Any, depth: int = 0) -> tuple[bool, Any]:
    """An OTLP `AnyValue` as a Python value: (False, None) when it is none of its types, or
    nested past MAX_NESTING. A 64-bit integer comes as text in OTLP/JSON."""
    if not isinstance(value, dict) or len(value) > 1 or depth > MAX_NESTING:
        return False, None
    if not value:
        return True, None  # an empty AnyValue: OTLP's null
    (kind, held), = value.items()
    if kind == "stringValue" and isinstance(held, str):
        return True, held
    if kind == "boolValue" and isinstance(held, bool):
        return True, held
    if kind == "intValue" and not isinstance(held, bool):
        try:
            return True, int(held) if isinstance(held, (int, str)) else _whole(held)
        except ValueError:
            return False, None
    if kind == "doubleValue" and isinstance(held, (int, float, str)) and not isinstance(held, bool):
        try:
            return True, float(held)
        except ValueError:
            return False, None
    if kind == "arrayValue" and isinstance(held, dict):
        items = [_any_value(item, depth + 1) for item in held.get("values") or []]
        return (True, [item for _, item in items]) if all(ok for ok, _ in items) else (False, None)
    if kind == "kvlistValue" and isinstance(held, dict):
        pairs = [(pair.get("key"), _any_value(pair.get("value"), depth + 1))
                 for pair in held.get("values") or [] if isinstance(pair, dict)]
        if all(isinstance(key, str) and ok for key, (ok, _) in pairs):
            return True, {key: item for key, (_, item) in pairs}
        return False, None
    if kind == "bytesValue" and isinstance(held, str):
        return True, held
    return False, None


def _whole(value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError(value)


def _ids(item: dict[str, Any], trace: Any, span: Any, problems: Problems
         ) -> tuple[str, str] | None:
    """A span's trace and span ids as hex, whichever encoding held them; None, counted, when
    either is missing or unreadable."""
    trace_hex, span_hex = _hex(trace), _hex(span)
    if not trace_hex or not span_hex:
        problems.add("span(s) without a trace or span id", f"span {str(item.get('name'))[:40]!r}")
        return None
    return trace_hex, span_hex


def _hex(value: Any) -> str:
    """An id as hex: OTLP/JSON writes hex; protobuf's own JSON of the same message, base64."""
    if not isinstance(value, str) or not value:
        return ""
    text = value.strip().lower()
    if len(text) in (16, 32) and all(c in "0123456789abcdef" for c in text):
        return text
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        return ""


def _nanos(value: Any) -> int | None:
    try:
        nanos = int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else 0
    except ValueError:
        return None
    return nanos if nanos > 0 else None


def _ended(span: Span, problems: Problems) -> Span:
    if span.end is None:
        problems.add("span(s) without an end", f"trace {span.trace} span {span.id}")
    return span


# --------------------------------------------------------------------------- Phoenix

def _phoenix_span(item: Any, problems: Problems) -> Span | None:
    context = item.get("context") if isinstance(item, dict) else None
    if not isinstance(context, dict):
        problems.add("item(s) that are no span", repr(item)[:40])
        return None
    if (ids := _ids(item, context.get("trace_id"), context.get("span_id"), problems)) is None:
        return None
    trace, span_id = ids
    attributes: dict[str, Any] = {}
    held = item.get("attributes") or {}
    if isinstance(held, dict):
        _flatten(held, "", attributes)
    else:
        problems.add("attribute(s) of no OTLP value type", f"trace {trace} span {span_id}")
    if isinstance(item.get("span_kind"), str):
        attributes.setdefault(KIND_ATTRIBUTE, item["span_kind"])
    parent = item.get("parent_id")
    return _ended(Span(trace, span_id, _hex(parent) or None, str(item.get("name") or ""),
                       _iso_nanos(item.get("start_time")), _iso_nanos(item.get("end_time")),
                       attributes), problems)


def _flatten(value: dict[str, Any], prefix: str, into: dict[str, Any], depth: int = 0) -> None:
    """Phoenix's attributes, nested (`{"llm": {"model_name": ...}}`) or already flat, as flat
    keys; a list of objects (retrieval documents) by place, as OpenInference flattens them;
    what is nested past MAX_NESTING kept as it is."""
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict) and depth < MAX_NESTING:
            _flatten(item, f"{name}.", into, depth + 1)
        elif isinstance(item, list) and item and all(isinstance(x, dict) for x in item) \
                and depth < MAX_NESTING:
            for i, element in enumerate(item):
                _flatten(element, f"{name}.{i}.", into, depth + 1)
        else:
            into[name] = item


def _iso_nanos(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    since = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (since.days * 86_400 + since.seconds) * NS + since.microseconds * 1000 or None

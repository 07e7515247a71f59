"""A run's traces sent live to an OTLP endpoint as each pair finishes
(docs/export.md#live-to-an-otlp-endpoint): `--otlp-endpoint URL` on `freshrag run`, or
`otlp_endpoint=` of `freshrag.evaluate`. The spans are those `freshrag export --format otel`
writes (harness/reporting/otel.py makes both), sent by the OpenTelemetry SDK's own OTLP/HTTP
exporter (`opentelemetry-exporter-otlp-proto-http`) from its batch processor's thread, so that
no pair waits on the endpoint.

Headers come from the environment as the exporter reads them (`OTEL_EXPORTER_OTLP_HEADERS`,
`OTEL_EXPORTER_OTLP_TRACES_HEADERS`: an API key), and are never written anywhere: the run's files
know nothing of the endpoint. An endpoint that refuses, fails or hangs costs the run one bounded
wait: each export has a deadline (`TIMEOUT_S`, the exporter's retries within it); after the
first that fails the rest are not sent, the failure is said once, and the end of the run counts
the traces sent and not sent.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from freshrag.core.config import masked_url, shown_url, url_problem
from freshrag.core.errors import UserError
from freshrag.core.records import SampleRow
from freshrag.reporting.otel import Tracer, seeded_trace

TIMEOUT_S = 10.0  # one export's deadline, its retries included
PATH = "/v1/traces"  # OTLP/HTTP's traces path, added to a base URL (as OTEL_EXPORTER_OTLP_ENDPOINT)
QUEUE = 1 << 16  # spans waiting for the exporter's thread: a slow endpoint drops none below it
LOGGER = "opentelemetry.exporter.otlp.proto.http"


class OtlpEndpointError(UserError):
    """An --otlp-endpoint that is not a URL the exporter can send to."""


def traces_url(endpoint: str) -> str:
    """The URL spans are posted to: `endpoint` as given when it ends in /v1/traces, else with it."""
    if problem := url_problem(endpoint):
        raise OtlpEndpointError(f"--otlp-endpoint {masked_url(endpoint)!r}: {problem}")
    return endpoint if endpoint.rstrip("/").endswith(PATH) else endpoint.rstrip("/") + PATH


class Counted(SpanExporter):
    """The OTLP exporter, counting the traces it sent and those it did not; after its first
    failure it sends nothing more, and says so once."""

    def __init__(self, exporter: SpanExporter, shown: str) -> None:
        self.exporter, self.shown = exporter, shown
        self.sent = self.unsent = 0
        self.failure: str | None = None
        self.heard = Heard()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        traces = sum(span.parent is None for span in spans)
        if self.failure is None:
            try:
                result = self.exporter.export(spans)
            except Exception as err:  # the SDK's own; never the run's
                result, self.heard.last = SpanExportResult.FAILURE, f"{type(err).__name__}: {err}"
            if result is SpanExportResult.SUCCESS:
                self.sent += traces
                return result
            self.failure = self.heard.last or "the export failed"
            print(f"traces: {self.shown} did not take the run's traces ({self.failure}); the run "
                  f"goes on without sending them (`freshrag export --format otel` writes them)",
                  file=sys.stderr, flush=True)
        self.unsent += traces
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class Heard(logging.Handler):
    """The exporter's own log lines, kept rather than printed: its last says why it failed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.last = " ".join(record.getMessage().split())[:300]


class LiveTraces:
    """Each finished pair's trace, sent as the run goes (`send`, the runner's `on_row`); `close`
    waits a bounded time for what is queued, and returns the line the run prints."""

    def __init__(self, endpoint: str, run: str, openinference: bool = False,
                 timeout_s: float | None = None) -> None:
        url = traces_url(endpoint)
        self.shown, self.run, self.timeout_s = shown_url(url), run, timeout_s or TIMEOUT_S
        # headers=None: the exporter reads OTEL_EXPORTER_OTLP_(TRACES_)HEADERS itself
        self.counted = Counted(OTLPSpanExporter(endpoint=url, timeout=self.timeout_s), self.shown)
        self.logger = logging.getLogger(LOGGER)
        self.logger.addHandler(self.counted.heard)
        self.logger.propagate = False  # said once, by Counted, not at every retry
        self.processor = BatchSpanProcessor(self.counted, max_queue_size=QUEUE,
                                            schedule_delay_millis=200,
                                            export_timeout_millis=int(self.timeout_s * 1000))
        self.tracer = Tracer(openinference, self.processor)
        self.lock = threading.Lock()  # one pair's trace at a time: the ids' generator is shared
        self.failed = 0

    def send(self, row: SampleRow) -> None:
        """Queue an answered pair's trace (a failed pair has no answer, and no trace); never
        raises into the run."""
        if row.get("status") != "ok" or row.get("answer") is None:
            return
        try:
            with self.lock:
                seeded_trace(self.tracer, {**row, "run": self.run})
        except Exception as err:  # a row the mapping cannot make: counted, the run unharmed
            self.failed += 1
            if self.failed == 1:
                print(f"traces: a trace could not be made ({type(err).__name__}: {err})",
                      file=sys.stderr)

    def close(self) -> str:
        """Flush what is queued (within the export's deadline), stop the exporter's thread, and
        say what was sent."""
        try:
            self.processor.force_flush(int(self.timeout_s * 1000))
            self.processor.shutdown()
        finally:
            self.logger.removeHandler(self.counted.heard)
            self.logger.propagate = True
        counted = self.counted
        line = f"traces: {counted.sent} sent to {self.shown}"
        if counted.unsent or counted.failure:
            line += f", {counted.unsent} not sent ({counted.failure})"
        if self.failed:
            line += f", {self.failed} that could not be made"
        return line

"""A tiny OTLP/HTTP receiver for tests (unit and integration): collects what services
export to ``/v1/traces`` and ``/v1/metrics`` (protobuf), on a thread of the test process.
Test support only (the harness package): no service ships it. opentelemetry-proto, which
decodes the requests, comes with srm-common's OTLP exporter.

``mode`` makes it misbehave, for fault tests: ``"garbage"`` answers 200 with bytes that
are no protobuf, ``"error"`` answers 503, ``"slow"`` answers after ``delay`` seconds.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (a bounded exporter, the slow mode) is not an error: without
    this, a handler thread still sleeping when its test ends prints a BrokenPipe traceback
    into whichever test runs next."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class OtlpReceiver:
    def __init__(self, mode: str = "ok", delay: float = 5.0) -> None:
        self.mode = mode
        self.delay = delay
        self.spans: list[ReceivedSpan] = []
        self.metrics: dict[str, set[str]] = {}  # service -> metric names
        self.posts = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.posts += 1
                if receiver.mode == "slow":
                    time.sleep(receiver.delay)
                if receiver.mode == "error":
                    self.send_response(503)
                    self.end_headers()
                    return
                if receiver.mode == "ok":
                    receiver.take(self.path, body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()
                self.wfile.write(b"\xff\xfe not a protobuf" if receiver.mode == "garbage" else b"")

            def log_message(self, *args: object) -> None:
                pass

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self) -> dict[str, str]:
        """For a child process: export here, metrics every second."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.endpoint, "OTEL_METRIC_EXPORT_INTERVAL": "1000"}

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def take(self, path: str, body: bytes) -> None:
        if path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                service = _service(resource_spans.resource.attributes)
                for scope in resource_spans.scope_spans:
                    with self._lock:
                        self.spans += [
                            ReceivedSpan(
                                service,
                                s.name,
                                s.trace_id.hex(),
                                s.span_id.hex(),
                                s.parent_span_id.hex(),
                            )
                            for s in scope.spans
                        ]
        elif path == "/v1/metrics":
            request = ExportMetricsServiceRequest.FromString(body)
            for resource_metrics in request.resource_metrics:
                service = _service(resource_metrics.resource.attributes)
                names = {m.name for s in resource_metrics.scope_metrics for m in s.metrics}
                with self._lock:
                    self.metrics.setdefault(service, set()).update(names)

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self._lock:
            return [s for s in self.spans if s.trace_id == trace_id]


def _service(attributes: object) -> str:
    for attribute in attributes:  # type: ignore[attr-defined]
        if attribute.key == "service.name":
            return str(attribute.value.string_value)
    return ""

"""OpenTelemetry for every SRM process: traces and service metrics, exported by OTLP/HTTP
when the standard environment says where, to nothing otherwise.

:func:`setup` is called once by each command's entry point with its service name
(``srm-control``, ``srm-api-gateway``, ``srm-coordinator``, ``srm-driver``,
``srm-metrics-aggregator``) and an instance id. What it builds follows the standard
variables only, as every OpenTelemetry SDK reads them (so a collector sidecar or an
operator's injected environment works unchanged, and no SRM configuration key is needed):

* ``OTEL_SDK_DISABLED=true``: nothing at all; no span, no trace context sent on.
* ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``/v1/traces``, ``/v1/metrics`` appended) or
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``..._METRICS_ENDPOINT``: spans go out in
  batches from a bounded queue (2048 spans; beyond that new spans are dropped), metrics
  every ``OTEL_METRIC_EXPORT_INTERVAL`` ms (default 60000); each export gives up after
  ``OTEL_EXPORTER_OTLP_TIMEOUT`` (default here 2 s, not the SDK's 10). Exports run on
  the SDK's own threads: a collector that is down, slow or answers garbage costs a
  warning in the log, never a command or a copied record.
* neither: spans are still made (with ids, so the trace context still travels in
  headers and events and log lines name the trace) but go nowhere; metrics are no-ops.
  No exporter, no thread, nothing printed.

OpenTelemetry is imported here and in :mod:`srm_common.adapters.http_tracing` only.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from opentelemetry import metrics, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from srm_common.tracecontext import TraceContext, parse_trace

log = logging.getLogger(__name__)

SERVICES = (
    "srm-control",
    "srm-api-gateway",
    "srm-coordinator",
    "srm-driver",
    "srm-metrics-aggregator",
)
EXPORT_TIMEOUT_S = 2.0
MAX_QUEUE = 2048
_PROPAGATOR = TraceContextTextMapPropagator()


@dataclass
class Telemetry:
    """What :func:`setup` built: where spans and metrics go (``exporting``)."""

    service: str
    tracer_provider: trace.TracerProvider
    meter_provider: metrics.MeterProvider
    exporting: bool = False
    _tracer: trace.Tracer | None = field(default=None, repr=False)

    @property
    def tracer(self) -> trace.Tracer:
        if self._tracer is None:
            self._tracer = self.tracer_provider.get_tracer(self.service)
        return self._tracer

    @property
    def meter(self) -> metrics.Meter:
        return self.meter_provider.get_meter(self.service)

    def flush(self, timeout_s: float = EXPORT_TIMEOUT_S) -> None:
        """Send what is queued, waiting at most ``timeout_s`` (a short-lived command
        calls it before it exits; what is not sent by then is dropped)."""
        flush = getattr(self.tracer_provider, "force_flush", None)
        if flush is not None and self.exporting:
            _bounded(lambda: flush(int(timeout_s * 1000)), timeout_s)

    def shutdown(self, timeout_s: float = 2 * EXPORT_TIMEOUT_S) -> None:
        """Flush and stop the exporters, waiting at most ``timeout_s``."""
        for provider in (self.tracer_provider, self.meter_provider):
            stop = getattr(provider, "shutdown", None)
            if stop is not None:
                _bounded(stop, timeout_s)


def _bounded(work: Callable[[], object], timeout_s: float) -> None:
    """Run ``work`` on a daemon thread and wait for it at most ``timeout_s``: an export
    to a collector that hangs must not hold a process that is ending."""

    def run() -> None:
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - never fail because of telemetry
            log.warning("telemetry: %s", exc)

    thread = threading.Thread(target=run, name="telemetry-flush", daemon=True)
    thread.start()
    thread.join(timeout_s)


_current: Telemetry | None = None


def _disabled(env: Mapping[str, str]) -> bool:
    return env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def _endpoint(env: Mapping[str, str], signal: str) -> str | None:
    """Where ``signal`` (``TRACES``, ``METRICS``) goes, as the SDK's exporters read it."""
    own = env.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if own:
        return own
    return f"{base.rstrip('/')}/v1/{signal.lower()}" if base else None


def setup(
    service: str, instance: str | None = None, env: Mapping[str, str] | None = None
) -> Telemetry:
    """Build this process's telemetry (replacing any earlier one); see the module."""
    global _current
    env = os.environ if env is None else env
    if _current is not None:
        _current.shutdown(timeout_s=0.5)
    if _disabled(env):
        _current = Telemetry(service, trace.NoOpTracerProvider(), metrics.NoOpMeterProvider())
        return _current
    resource = Resource.create(
        {
            "service.name": service,
            "service.instance.id": instance or f"{socket.gethostname()}-{os.getpid()}",
        }
    )
    timeout = None if env.get("OTEL_EXPORTER_OTLP_TIMEOUT") else EXPORT_TIMEOUT_S
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    exporting = False
    traces, metrics_at = _endpoint(env, "TRACES"), _endpoint(env, "METRICS")
    if traces:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        processor = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=traces, timeout=timeout),
            max_queue_size=MAX_QUEUE,
            schedule_delay_millis=1000,
            export_timeout_millis=int((timeout or 10) * 1000),
        )
        tracer_provider.add_span_processor(processor)
        exporting = True
    meter_provider: metrics.MeterProvider = metrics.NoOpMeterProvider()
    if metrics_at:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=metrics_at, timeout=timeout),
            export_timeout_millis=(timeout or 10) * 1000,
        )
        meter_provider = MeterProvider(
            resource=resource, metric_readers=[reader], shutdown_on_exit=False
        )
        exporting = True
    _current = Telemetry(service, tracer_provider, meter_provider, exporting)
    return _current


def current() -> Telemetry:
    """The process's telemetry; before :func:`setup`, one that makes spans and exports
    nothing (library code and unit tests need no set-up)."""
    global _current
    if _current is None:
        _current = setup("srm", env={})
    return _current


def meter() -> metrics.Meter:
    return current().meter


@contextmanager
def span(
    name: str,
    *,
    parent: TraceContext | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Mapping[str, str | int | bool] | None = None,
) -> Iterator[Span]:
    """A span around the block, child of ``parent`` (a context read from a request or
    an event) or else of the current span; an exception marks it failed and goes on."""
    context = _PROPAGATOR.extract(parent.headers()) if parent is not None else None
    with current().tracer.start_as_current_span(
        name, context=context, kind=kind, attributes=dict(attributes or {})
    ) as active:
        yield active


def mark_failed(active: Span, why: str) -> None:
    active.set_status(Status(StatusCode.ERROR, why))


def context_now() -> TraceContext | None:
    """The current span's context, to send on (headers) or store (an event)."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return parse_trace(carrier)


def headers_now() -> dict[str, str]:
    """``traceparent`` (and ``tracestate``) of the current span; {} without one."""
    context = context_now()
    return context.headers() if context is not None else {}


def trace_id_now() -> str | None:
    context = context_now()
    return context.trace_id if context is not None else None

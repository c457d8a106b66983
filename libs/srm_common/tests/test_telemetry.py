"""Telemetry set-up: nothing by default, OTLP when configured, and a collector that is
down, slow or answers garbage never breaks or slows the caller."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from srm_common import telemetry
from srm_common.adapters.http_server import HttpServer
from srm_common.adapters.http_tracing import Tracing
from srm_common.tracecontext import TraceContext
from srm_harness.otlp_receiver import OtlpReceiver

PARENT = TraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    telemetry.setup("srm-test", env={})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_is_exported_and_no_thread_started_when_no_endpoint_is_set() -> None:
    before = set(threading.enumerate())
    built = telemetry.setup("srm-driver", "d1", env={})
    assert not built.exporting
    with telemetry.span("work"):
        trace_id = telemetry.trace_id_now()
    assert trace_id is not None and len(trace_id) == 32  # still propagated and logged
    assert set(threading.enumerate()) == before


def test_no_span_of_its_own_when_the_sdk_is_disabled() -> None:
    env = {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}
    assert not telemetry.setup("srm-driver", env=env).exporting
    with telemetry.span("work"):
        assert telemetry.context_now() is None
    assert telemetry.headers_now() == {}
    with telemetry.span("work", parent=PARENT):  # a caller's context passes through as is
        assert telemetry.context_now() == PARENT


def test_a_span_continues_the_trace_of_its_parent_context() -> None:
    telemetry.setup("srm-coordinator", env={})
    with telemetry.span("apply", parent=PARENT):
        context = telemetry.context_now()
    assert context is not None and context.trace_id == PARENT.trace_id
    assert context.traceparent != PARENT.traceparent  # a new span id


def test_spans_and_metrics_reach_an_otlp_receiver_when_the_endpoint_is_set() -> None:
    with OtlpReceiver() as receiver:
        built = telemetry.setup("srm-coordinator", "c1", env=receiver.env())
        assert built.exporting
        with telemetry.span("apply", parent=PARENT):
            pass
        telemetry.meter().create_counter("srm.test.things").add(3, {"outcome": "applied"})
        built.flush()
        built.meter_provider.force_flush(2000)  # type: ignore[attr-defined]
        spans = receiver.trace(PARENT.trace_id)
        assert [(s.service, s.name, s.parent_id) for s in spans] == [
            ("srm-coordinator", "apply", "00f067aa0ba902b7")
        ]
        assert "srm.test.things" in receiver.metrics["srm-coordinator"]


@pytest.mark.parametrize("mode", ["down", "garbage", "error", "slow"])
def test_spans_cost_the_caller_nothing_when_the_collector_is_broken(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spans go into a bounded queue and are exported on threads that are not the
    caller's; an export that hangs (``slow``: it does not return until the test ends)
    holds neither the caller making spans nor ``flush`` nor ``shutdown``. Shown by where
    exports run and what is still running when each call returns, not by a clock."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    caller = threading.current_thread()
    exporting_threads: list[threading.Thread] = []
    in_flight: list[int] = []  # one entry per export that began and has not returned
    began = threading.Event()
    release = threading.Event()  # a hung export returns once the test is over
    real_export = OTLPSpanExporter.export

    def export(self, spans):  # type: ignore[no-untyped-def]
        exporting_threads.append(threading.current_thread())
        if threading.current_thread() is caller:
            return SpanExportResult.FAILURE  # failed below, without waiting on the collector
        in_flight.append(1)
        began.set()
        try:
            if mode == "slow" and len(exporting_threads) == 1:
                release.wait(60)  # the first export hangs: longer than any bound below
            return real_export(self, spans)
        finally:
            in_flight.pop()

    monkeypatch.setattr(OTLPSpanExporter, "export", export)
    receiver = OtlpReceiver("ok" if mode == "down" else mode, delay=5)
    with receiver:
        endpoint = f"http://127.0.0.1:{_closed_port()}" if mode == "down" else receiver.endpoint
        built = telemetry.setup("srm-driver", env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
        try:
            for i in range(5000):  # more than the queue holds: the rest are dropped
                with telemetry.span(f"s{i}"):
                    pass
            telemetry.meter().create_counter("srm.test.things").add(1)
            assert caller not in exporting_threads, f"{mode}: the caller's thread exported"
            # 5,000 spans are more than a batch: the SDK's thread has begun exporting.
            assert began.wait(30), f"{mode}: no export began"
            built.flush(1.0)
            if mode == "slow":
                assert in_flight, "flush returned only once the hung export did"
            built.shutdown(timeout_s=1.0)
            if mode == "slow":
                assert in_flight, "shutdown returned only once the hung export did"
        finally:
            release.set()
            # Exports still retrying end before the next test, whose log they would join.
            deadline = time.monotonic() + 60
            while in_flight and time.monotonic() < deadline:
                time.sleep(0.05)
    assert exporting_threads, f"{mode}: nothing was exported"
    assert caller not in exporting_threads, f"{mode}: the caller's thread exported spans"


def test_the_middleware_continues_the_callers_trace_and_names_the_route() -> None:
    telemetry.setup("srm-api-gateway", env={})
    exporter = InMemorySpanExporter()
    provider = telemetry.current().tracer_provider
    assert isinstance(provider, TracerProvider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = FastAPI()

    @app.get("/v1/things/{name}")
    def thing(name: str) -> dict[str, str]:
        return {"trace": telemetry.trace_id_now() or ""}

    app.add_middleware(Tracing)
    server = HttpServer(app, host="127.0.0.1", port=0, name="test")
    server.start()
    try:
        answer = _get(f"{server.url}/v1/things/a", PARENT.headers())
        assert answer["trace"] == PARENT.trace_id
        garbled = _get(f"{server.url}/v1/things/b", {"traceparent": "00-garbage"})
        assert garbled["trace"] not in ("", PARENT.trace_id)  # a new trace, not an error
        with pytest.raises(urllib.error.HTTPError):
            _get(f"{server.url}/nowhere", {})
    finally:
        server.stop()
    names = [s.name for s in exporter.get_finished_spans()]
    assert names == ["GET /v1/things/{name}", "GET /v1/things/{name}", "GET unmatched"]
    first = exporter.get_finished_spans()[0]
    assert first.parent is not None and f"{first.parent.span_id:016x}" == "00f067aa0ba902b7"


def _get(url: str, headers: dict[str, str]) -> dict[str, str]:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())

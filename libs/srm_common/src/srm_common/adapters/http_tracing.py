"""Tracing and request metrics for every service's HTTP API (ASGI middleware).

Each request runs inside a server span that continues the caller's trace when it sent a
well-formed ``traceparent`` (a garbled one starts a new trace, as if none were sent),
named after the route it matched (``POST /v1/commands/{verb}``), with its status. Two
instruments count what was answered: ``srm.http.server.requests`` (by method, route and
status) and ``srm.http.server.duration`` (seconds). Both go nowhere unless telemetry
exports (:mod:`srm_common.telemetry`).
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry.trace import SpanKind

from srm_common import telemetry
from srm_common.tracecontext import parse_trace

ASGIApp = Any
Message = dict[str, Any]


class Tracing:
    """ASGI middleware; add it last, so that it wraps every other middleware."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        meter = telemetry.meter()
        self._requests = meter.create_counter(
            "srm.http.server.requests", description="HTTP requests answered, by route and status"
        )
        self._duration = meter.create_histogram(
            "srm.http.server.duration", unit="s", description="time to answer a request"
        )

    async def __call__(self, scope: Message, receive: ASGIApp, send: ASGIApp) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        parent = parse_trace(headers)
        method = scope.get("method", "GET")
        status = [500]  # an exception before the answer started

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        started = time.monotonic()
        with telemetry.span(
            f"{method} {scope.get('path', '')}", parent=parent, kind=SpanKind.SERVER
        ) as span:
            try:
                await self.app(scope, receive, sending)
            finally:
                route = getattr(scope.get("route"), "path", None) or "unmatched"
                span.update_name(f"{method} {route}")
                span.set_attribute("http.request.method", method)
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status[0])
                if status[0] >= 500:
                    telemetry.mark_failed(span, f"HTTP {status[0]}")
                labels = {"method": method, "route": route, "status": status[0]}
                self._requests.add(1, labels)
                self._duration.record(time.monotonic() - started, labels)

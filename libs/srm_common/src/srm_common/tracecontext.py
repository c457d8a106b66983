"""W3C trace context as SRM carries it: in HTTP headers and in control events.

Pure (no OpenTelemetry here, :mod:`srm_common.telemetry` owns that): a
:class:`TraceContext` is the ``traceparent`` header (``00-<32 hex trace id>-<16 hex span
id>-<2 hex flags>``) and the optional ``tracestate``. :func:`parse_trace` accepts only
well-formed values, so a garbled context read from the log or a request is dropped,
never passed on or allowed to break what it came with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
MAX_TRACESTATE = 512  # the W3C limit is 32 members; a longer one is not worth storing


@dataclass(frozen=True)
class TraceContext:
    traceparent: str
    tracestate: str = ""

    @property
    def trace_id(self) -> str:
        """The 32 hex digits every span of one trace shares."""
        return self.traceparent.split("-")[1]

    def headers(self) -> dict[str, str]:
        """As HTTP headers (and as stored in an event)."""
        headers = {"traceparent": self.traceparent}
        if self.tracestate:
            headers["tracestate"] = self.tracestate
        return headers


def parse_trace(carrier: Mapping[str, object] | None) -> TraceContext | None:
    """The context in ``carrier`` (header names in lower case), or None when there is
    none or it is not well formed (version ff, an all-zero trace or span id)."""
    if not carrier:
        return None
    parent = carrier.get("traceparent")
    if not isinstance(parent, str):
        return None
    match = _TRACEPARENT.match(parent.strip())
    if match is None:
        return None
    version, trace_id, span_id, _flags = match.groups()
    if version == "ff" or trace_id == "0" * 32 or span_id == "0" * 16:
        return None
    state = carrier.get("tracestate")
    state = state.strip() if isinstance(state, str) and len(state) <= MAX_TRACESTATE else ""
    return TraceContext(parent.strip(), state)

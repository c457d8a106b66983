"""W3C trace context parsing: well-formed contexts kept, anything else dropped."""

from __future__ import annotations

import pytest
from srm_common.tracecontext import TraceContext, parse_trace

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_well_formed_traceparent_is_parsed_with_its_trace_id() -> None:
    context = parse_trace({"traceparent": PARENT, "tracestate": "congo=t61rcWkgMzE"})
    assert context == TraceContext(PARENT, "congo=t61rcWkgMzE")
    assert context.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert context.headers() == {"traceparent": PARENT, "tracestate": "congo=t61rcWkgMzE"}


def test_headers_leave_out_an_empty_tracestate() -> None:
    assert TraceContext(PARENT).headers() == {"traceparent": PARENT}


@pytest.mark.parametrize(
    "carrier",
    [
        None,
        {},
        {"tracestate": "a=b"},
        {"traceparent": None},
        {"traceparent": 12},
        {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"},
        {"traceparent": PARENT.upper()},
        {"traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
        {"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
        {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"},
        {"traceparent": PARENT + "-extra"},
    ],
)
def test_a_malformed_traceparent_is_none_when_garbled(carrier: object) -> None:
    assert parse_trace(carrier) is None  # type: ignore[arg-type]


def test_an_oversized_tracestate_is_dropped_and_the_parent_kept() -> None:
    context = parse_trace({"traceparent": PARENT, "tracestate": "a=" + "x" * 600})
    assert context == TraceContext(PARENT, "")

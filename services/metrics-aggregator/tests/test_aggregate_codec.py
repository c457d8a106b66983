"""The aggregated record codec (srm_common.metrics.aggregate): released bytes read back
to the same aggregates and are written the same; bad records say why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from srm_common.metrics import aggregate
from srm_common.metrics.aggregate import Aggregate, AggregateError, Figures
from srm_common.metrics.raw import TopicMapping, encode

GOLDEN = Path(__file__).parent / "golden" / "aggregate_v1.json"


def test_golden_bytes_read_back_and_encode_the_same() -> None:
    for record in json.loads(GOLDEN.read_text())["records"]:
        value = record["value"].encode()
        decoded = aggregate.decode(value)
        assert decoded.level == record["level"]
        assert decoded.key().decode() == record["key"]
        assert aggregate.encode(decoded) == value
        assert aggregate.read(value) == decoded


def test_derived_figures() -> None:
    first = aggregate.decode(json.loads(GOLDEN.read_text())["records"][0]["value"].encode())
    assert first.figures.derived(first.window_ms) == {
        "records_per_s": 2.0,
        "bytes_per_s": 2048.0,
        "latency_avg_ms": 53.2,
        "latency_p50_ms": 5,
        "latency_p99_ms": 500,
        "checkpoint_latency_avg_ms": None,
    }


def test_mappings_are_read_from_the_same_topic() -> None:
    mapping = TopicMapping(
        id="m", at_ms=1, interval_ms=0, flow="a->b", topic="orders", remote_topic="a.orders"
    )
    assert aggregate.read(encode(mapping)) == mapping
    assert aggregate.mapping_key(mapping) == b"mapping|a->b|orders"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"{", "not JSON"),
        (b'{"kind":"aggregate","v":2}', "version 2"),
        (b'{"kind":"other","v":1}', "not an aggregate record"),
        (b'{"kind":"aggregate","v":1,"level":"topic"}', "missing or wrong 'subject'"),
    ],
)
def test_unreadable_records_say_why(value: bytes, reason: str) -> None:
    with pytest.raises(AggregateError, match=reason):
        aggregate.read(value)


def test_subjects_and_windows_are_checked() -> None:
    with pytest.raises(AggregateError, match="unknown level"):
        Aggregate("driver", 1000, 0, {"flow": "a->b"}, False, Figures())
    with pytest.raises(AggregateError, match="needs"):
        Aggregate("topic", 1000, 0, {"flow": "a->b"}, False, Figures())
    with pytest.raises(AggregateError, match="not aligned"):
        Aggregate("flow", 1000, 5, {"flow": "a->b"}, False, Figures())

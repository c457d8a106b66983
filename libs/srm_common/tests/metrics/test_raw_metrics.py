"""Raw metric records: released bytes, round trips, histograms, and one clear reason for
every record that is not one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.metrics.raw import (
    LATENCY_BOUNDS_MS,
    Histogram,
    PartitionSample,
    RawMetricError,
    decode,
    encode,
)

GOLDEN = json.loads((Path(__file__).parents[1] / "golden" / "raw_metrics_v1.json").read_text())[
    "records"
]


@pytest.mark.parametrize("record", GOLDEN, ids=lambda r: r["kind"])
def test_released_bytes_decode_and_encode_to_the_same_bytes(record: dict[str, str]) -> None:
    sample = decode(record["value"].encode())
    assert sample.KIND == record["kind"]
    assert encode(sample) == record["value"].encode()


def test_every_kind_has_a_golden_record() -> None:
    from srm_common.metrics.raw import KINDS

    assert {r["kind"] for r in GOLDEN} == set(KINDS)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (b"junk", "not JSON"),
        (b"[1]", "not a JSON object"),
        (b'{"v":2,"kind":"partition"}', "version 2"),
        (b'{"v":1,"kind":"gauge"}', "unknown kind 'gauge'"),
        (b'{"v":1,"kind":"partition","id":"x","at_ms":1,"interval_ms":1}', "flow"),
        (
            b'{"v":1,"kind":"partition","id":"x","at_ms":1,"interval_ms":1,"flow":"a->b",'
            b'"records":"many"}',
            "records = 'many': not a whole number",
        ),
        (
            b'{"v":1,"kind":"partition","id":"x","at_ms":1,"interval_ms":1,"flow":"a->b",'
            b'"latency":[1,2]}',
            "latency histogram of 2 buckets",
        ),
    ],
)
def test_a_record_that_is_no_sample_is_refused_with_the_reason(value: bytes, why: str) -> None:
    with pytest.raises(RawMetricError, match=why):
        decode(value)


def test_the_key_keeps_one_partitions_samples_together() -> None:
    sample = PartitionSample("i", 1, 1, "a->b", topic="orders", partition=3)
    assert sample.key() == b"a->b|orders|3"
    assert (sample.source, sample.target) == ("a", "b")


latencies = st.lists(st.integers(min_value=0, max_value=120_000), max_size=200)


@given(latencies, latencies)
def test_histograms_add_up_and_quantiles_never_understate(a: list[int], b: list[int]) -> None:
    both = Histogram.of(a) + Histogram.of(b)
    assert both == Histogram.of(a + b) and both.total == len(a) + len(b)
    for q in (0.5, 0.99):
        estimate = both.quantile(q)
        if not a + b:
            assert estimate is None
            continue
        truth = sorted(a + b)[max(0, int(q * len(a + b) + 0.999999) - 1)]
        assert estimate >= min(truth, LATENCY_BOUNDS_MS[-1])

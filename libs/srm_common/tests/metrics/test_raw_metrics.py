"""Raw metric records: released bytes, round trips, histograms, and one clear reason for
every record that is not one."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from srm_common.metrics import grouping
from srm_common.metrics.grouping import GROUP_BYTES, grouped, raw_partition
from srm_common.metrics.raw import (
    LATENCY_BOUNDS_MS,
    MAX_REASON,
    Histogram,
    PartitionSample,
    PartitionsSample,
    RawMetricError,
    decode,
    encode,
    member_fields,
)

FOLDER = Path(__file__).parents[1] / "golden"
GOLDEN_V1 = json.loads((FOLDER / "raw_metrics_v1.json").read_text())["records"]
GOLDEN_V2 = json.loads((FOLDER / "raw_metrics_v2.json").read_text())["records"]
GOLDEN = GOLDEN_V1 + GOLDEN_V2


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
        (b'{"v":3,"kind":"partition"}', "version 3"),
        (b'{"v":1,"kind":"partitions"}', "partitions records of version 1 do not exist"),
        (b'{"v":2,"kind":"partition"}', "partition records of version 2 do not exist"),
        (
            b'{"v":2,"kind":"partitions","id":"x","at_ms":1,"interval_ms":1,"flow":"a->b"}',
            "without topics",
        ),
        (
            b'{"v":2,"kind":"partitions","id":"x","at_ms":1,"interval_ms":1,"flow":"a->b",'
            b'"topics":[{"topic":"t","remote_topic":"t","partitions":[{"partition":1},'
            b'{"partition":1}]}]}',
            "t-1 twice",
        ),
        (
            b'{"v":2,"kind":"partitions","id":"x","at_ms":1,"interval_ms":1,"flow":"a->b",'
            b'"topics":[{"topic":"t","remote_topic":"t","partitions":[{"partition":1,'
            b'"lost":"some"}]}]}',
            "lost = 'some': not a whole number",
        ),
        (
            b'{"v":2,"kind":"partitions","id":"x","at_ms":1,"interval_ms":1,"flow":"a->b",'
            b'"topics":[{"topic":"t","remote_topic":"t","partitions":[7]}]}',
            "no JSON object",
        ),
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


def test_a_group_reads_as_the_partition_samples_it_holds() -> None:
    group = decode(GOLDEN_V2[0]["value"].encode())
    assert isinstance(group, PartitionsSample)
    members = {(m.topic, m.partition): m for m in group.partitions}
    assert set(members) == {("orders", 3), ("orders", 4), ("payments", 0), ("payments", 1)}
    assert all(
        (m.id, m.at_ms, m.flow) == (group.id, group.at_ms, group.flow) for m in members.values()
    )
    busy, idle = members[("orders", 3)], members[("orders", 4)]
    assert (busy.records, busy.latency.total, busy.latency_max_ms) == (120, 5, 250)
    assert (idle.records, idle.lag_records, idle.status, idle.latency_min_ms) == (
        0,
        0,
        "running",
        None,
    )
    halted = members[("payments", 0)]
    assert (halted.status, halted.lost, halted.lag_records) == ("halted", 3, None)
    assert halted.halt_reason == "conflict: another writer at remote offset 7"
    assert [(m.topic, m.remote_topic) for m in group.mappings()] == [
        ("orders", "primary.orders"),
        ("payments", "primary.payments"),
    ]


def member(i: int, *, topics: int, busy: bool, reason: int = 0) -> PartitionSample:
    topic = f"topic-{i % topics:05d}"
    return PartitionSample(
        f"d1/inc/{i}",
        1_700_000_060_000,
        10_000,
        "primary->backup",
        topic=topic,
        partition=i // topics,
        remote_topic=f"primary.{topic}",
        records=37 * busy,
        bytes=3700 * busy,
        latency=Histogram.of([4] * 30 + [900] * 7) if busy else Histogram(),
        latency_sum_ms=(120 + 6300) * busy,
        latency_min_ms=4 if busy else None,
        latency_max_ms=900 if busy else None,
        lag_records=i % 7,
        lag_ms=i % 7 * 10,
        status="halted" if reason else "running",
        halt_reason="x" * reason if reason else None,
    )


@settings(max_examples=20, deadline=None)
@given(
    st.integers(min_value=1, max_value=600),
    st.integers(min_value=1, max_value=200),
    st.integers(min_value=1, max_value=12),
    st.booleans(),
    st.integers(min_value=0, max_value=5000),
)
def test_groups_hold_every_partition_once_within_the_cap_where_its_own_key_goes(
    count: int, topics: int, raw: int, busy: bool, reason: int
) -> None:
    samples = [
        member(i, topics=topics, busy=busy, reason=reason * (i % 50 == 0)) for i in range(count)
    ]
    groups = grouped(samples, raw, max_bytes=16 * 1024)
    ids = [g.id for _p, g in groups]
    assert len(ids) == len(set(ids)), "a group's id is no other group's"
    seen = []
    for partition, group in groups:
        record = encode(group)
        assert len(record) <= 16 * 1024 or len(group.partitions) == 1
        assert decode(record) == group
        for m in group.partitions:
            assert raw_partition(m.key(), raw) == partition
            seen.append((m.topic, m.partition))
    assert sorted(seen) == sorted((s.topic, s.partition) for s in samples)
    by_member = {(m.topic, m.partition): m for _p, g in groups for m in g.partitions}
    for s in samples:
        m = by_member[(s.topic, s.partition)]
        assert (m.records, m.bytes, m.latency, m.lag_records, m.status) == (
            s.records,
            s.bytes,
            s.latency,
            s.lag_records,
            s.status,
        )
        assert m.halt_reason == (None if s.halt_reason is None else s.halt_reason[:MAX_REASON])


def test_ten_thousand_partitions_are_a_few_records_of_at_most_the_cap() -> None:
    for busy in (False, True):
        samples = [member(i, topics=1000, busy=busy) for i in range(10_000)]
        groups = grouped(samples, 6)
        sizes = [len(encode(g)) for _p, g in groups]
        print(
            f"\n10,000 partitions, busy={busy}: {len(groups)} records, largest {max(sizes)} bytes"
        )
        assert len(groups) <= 24 and max(sizes) <= GROUP_BYTES
        assert {p for p, _g in groups} == set(range(6))


def test_the_raw_partition_is_librdkafkas_for_the_key() -> None:
    # librdkafka's default ("consistent_random") partitioner: CRC-32 of the key.
    assert raw_partition(b"primary->backup|orders|3", 6) == 934585917 % 6 == 3


def test_a_partition_sampled_twice_in_an_interval_goes_in_two_groups() -> None:
    twice = [
        member(0, topics=1, busy=True),
        replace(member(0, topics=1, busy=False), id="d1/inc/9"),
    ]
    groups = grouped(twice, 1)
    assert [len(g.partitions) for _p, g in groups] == [1, 1]
    assert all(decode(encode(g)) == g for _p, g in groups)


def test_grouping_ten_thousand_idle_partitions_writes_no_json_to_size_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A driver groups every partition's sample every interval: sizing each member with a
    ``json.dumps`` (and copying it through the dataclass constructor) was most of the
    ~150 ms that took at 10,000. The entries of idle partitions (numbers and nulls) are
    sized without writing them; the groups stay within the cap."""
    samples = [member(i, topics=1000, busy=False) for i in range(10_000)]
    calls = [0]
    dumps = grouping.json.dumps

    def counting(*args: object, **kwargs: object) -> str:
        calls[0] += 1
        return dumps(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(grouping.json, "dumps", counting)
    groups = grouped(samples, 6)
    assert calls[0] == 0
    monkeypatch.setattr(grouping.json, "dumps", dumps)
    assert max(len(encode(g)) for _p, g in groups) <= GROUP_BYTES


@settings(max_examples=50, deadline=None)
@given(
    st.booleans(),
    st.one_of(st.none(), st.text(max_size=40)),
    st.sampled_from(["running", "pending", "halted", "stopped"]),
    st.one_of(st.none(), st.integers(min_value=-(2**40), max_value=2**40)),
)
def test_a_members_size_is_that_of_its_entry_as_written(
    busy: bool, reason: str | None, status: str, lag: int | None
) -> None:
    sample = replace(
        member(7, topics=3, busy=busy), halt_reason=reason, status=status, lag_records=lag
    )
    assert grouping._member_bytes(sample) == len(grouping._json(member_fields(sample)))

"""Raw metrics on real clusters and a real Spark: a standalone driver copies exactly N
records and its samples on the target's raw metrics topic add up to exactly N.

Other tests' drivers write to the same raw topic of the shared clusters: only this
driver incarnation's samples (their id) and this test's topic count.
"""

from __future__ import annotations

import time

import pytest
from srm_common.metrics.grouping import raw_partition
from srm_common.metrics.raw import (
    RAW_TOPIC,
    FlowSample,
    PartitionSample,
    PartitionsSample,
    RawMetricError,
    Sample,
    decode,
)
from srm_harness.clients import consume_all, end_offsets, produce
from srm_harness.compare import copied
from srm_harness.control import write_config
from srm_harness.log_batches import log_batches, log_bytes
from srm_harness.records import Record
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

FLOW = "primary->backup"


@pytest.mark.parametrize("batches", [True, False], ids=["batch-copy", "record-copy"])
def test_the_samples_of_a_copy_add_up_to_exactly_what_was_copied(
    kafka, run_driver, tmp_path, unique_name, batches
):  # type: ignore[no-untyped-def]
    """Records and latencies add up to N on both copy paths; bytes are the records' value
    bytes on the record copy (MirrorMaker 2's byte-count) and the batches' bytes as the
    target's log holds them on the batch copy (which never decodes a record)."""
    topic = kafka.create_topic("primary", unique_name("metered"), partitions=3)
    remote = f"primary.{topic}"
    first = [Record(f"k{i}".encode(), b"v" * (i % 50), (), None, i % 3) for i in range(700)]
    produce(kafka["primary"], topic, first)
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={FLOW: {"enabled": True, "topics": [topic], "srm.copy.batches": batches}},
        replication={"srm.metrics.interval.ms": 1000},
    )
    driver = run_driver(config)
    wait_until(lambda: end_offsets(kafka["backup"], remote), 60, "remote topic")
    time.sleep(2.5)  # a few intervals while copying
    second = [Record(f"m{i}".encode(), b"w" * 20, (), None, i % 3) for i in range(555)]
    produce(kafka["primary"], topic, second)
    wait_until(lambda: copied(kafka["primary"], topic, kafka["backup"], remote), 90, "copied")
    runtime = driver.driver.runtime
    assert runtime is not None and runtime.metrics is not None
    prefix = f"{runtime.metrics.sampler.driver_id}/{runtime.metrics.sampler.instance}/"
    driver.stop()

    raw = consume_all(kafka["backup"], RAW_TOPIC)
    assert len(raw) == 6, "created with several partitions, for aggregators to share"
    mine: list[Sample] = []
    for partition, records in raw.items():
        for record in records:
            try:
                sample = decode(record.value)
            except RawMetricError:
                continue  # other tests share the topic (the aggregator's feeds it garbage)
            if sample.id.startswith(prefix):
                assert record.key == sample.key()
                # Where librdkafka's partitioner put a keyed record, and where a group
                # goes: each partition's samples stay on one raw partition either way.
                assert raw_partition(sample.key(), len(raw)) == partition
                mine.append(sample)
    ids = [s.id for s in mine]
    assert len(ids) == len(set(ids)), "every record's id is unique"
    groups = [s for s in mine if isinstance(s, PartitionsSample)]
    assert groups and not any(isinstance(s, PartitionSample) for s in mine), "grouped"
    parts = [m for g in groups for m in g.partitions if m.topic == topic]
    n = len(first) + len(second)
    sampled = sum(s.records for s in parts)
    latencies = sum(s.latency.total for s in parts)
    print(
        f"\nraw metrics: N={n} records produced; sum of records over {len(parts)} partition"
        f" samples (in {len(groups)} grouped records) = {sampled}; latency histogram total ="
        f" {latencies}; {len(mine)} records of this driver in all"
    )
    assert sampled == n
    assert latencies == n
    if batches:
        assert sum(s.bytes for s in parts) == log_bytes(log_batches(kafka["backup"], remote))
    else:
        assert sum(s.bytes for s in parts) == sum(len(r.value or b"") for r in first + second)
    assert {s.partition for s in parts} == {0, 1, 2}
    assert all(s.remote_topic == remote and s.flow == FLOW for s in parts)
    assert all(
        s.latency_sum_ms >= 0 and s.status in ("pending", "running", "stopped") for s in parts
    )
    with_copies = [s for s in parts if s.records]
    assert all(s.latency_max_ms is not None and s.latency_min_ms is not None for s in with_copies)
    assert all(s.latency_min_ms <= s.latency_max_ms for s in with_copies)  # type: ignore[operator]
    lags = [(s.partition, s.status, s.lag_records, s.lag_ms) for s in parts]
    print(f"lags (partition, status, records, ms): {lags}")
    assert all(s.lag_records is None or s.lag_records >= 0 for s in parts)
    mappings = {(m.topic, m.remote_topic) for g in groups for m in g.mappings()}
    assert (topic, remote) in mappings
    flows = [s for s in mine if isinstance(s, FlowSample) and s.flow == FLOW]
    assert flows and all(s.driver == runtime.metrics.sampler.driver_id for s in flows)
    assert any(s.tasks.get("running") for s in flows)
    assert any(s.heartbeat_age_ms is not None for s in flows)
    assert max(s.at_ms for s in mine) - min(s.at_ms for s in mine) >= 1000, "several intervals"

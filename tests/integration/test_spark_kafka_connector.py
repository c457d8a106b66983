"""Spark's Kafka source and sink on real clusters: what the connector does with each field.

The driver does not use them (its copy slots run their own Kafka clients inside Spark
tasks); these pin down one of the reasons, the sink dropping the record timestamp, and
fail the day an upgrade changes it (see docs/spark-kafka-connector.md).
"""

from __future__ import annotations

import json

import pytest
from srm_harness.clients import consume_all, produce
from srm_harness.records import RECENT_MS, Record

pytestmark = [pytest.mark.integration, pytest.mark.spark]

RECORDS = [
    Record(b"k1", b"v1", (("h", b"1"), ("h", b"2")), RECENT_MS + 0, partition=0),
    Record(None, b"null-key", (), RECENT_MS + 1, partition=0),
    Record(b"k3", b"v3", (), RECENT_MS + 2, partition=0),
    Record(b"tombstone", None, (("bin", bytes(range(256))),), RECENT_MS + 3, partition=1),
    Record(b"k5", b"", (("empty", b""), ("none", None)), RECENT_MS + 4, partition=1),
]


def _copy_with_spark(spark, kafka, source, target, ending):
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka["primary"])
        .option("assign", json.dumps({source: [0, 1]}))
        .option("startingOffsets", json.dumps({source: {"0": 0, "1": 0}}))
        .option("endingOffsets", json.dumps({source: ending}))
        .option("includeHeaders", "true")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    (
        frame.selectExpr("key", "value", "headers", "partition", "timestamp")
        .write.format("kafka")
        .option("kafka.bootstrap.servers", kafka["backup"])
        .option("topic", target)
        .option("includeHeaders", "true")
        .save()
    )
    return consume_all(kafka["backup"], target)


@pytest.fixture
def copied(kafka, spark, unique_name):
    source = kafka.create_topic("primary", unique_name("src"), partitions=2)
    target = kafka.create_topic("backup", unique_name("dst"), partitions=2)
    produce(kafka["primary"], source, RECORDS)
    # Explicit ranges: partition 0 only up to offset 2 (exclusive), partition 1 fully.
    return _copy_with_spark(spark, kafka, source, target, {"0": 2, "1": 2})


def test_spark_copies_keys_values_headers_and_partitions_in_order_when_ranges_are_explicit(
    copied,
):
    expected = {0: RECORDS[:2], 1: RECORDS[3:]}
    for partition, records in expected.items():
        got = [(r.key, r.value, r.headers) for r in copied[partition]]
        want = [(r.key, r.value, r.headers) for r in records]
        assert got == want, f"partition {partition} was not copied faithfully: {got} != {want}"


def test_spark_sink_stamps_write_time_not_source_timestamp_when_timestamp_column_is_given(
    copied,
):
    # Spark 4.0's Kafka sink ignores a `timestamp` column: the target gets the producer's
    # clock. If this starts failing, an upgrade made the sink keep timestamps and the
    # driver can drop its own timestamp handling.
    source_timestamps = {r.timestamp_ms for r in RECORDS}
    written = [r.timestamp_ms for records in copied.values() for r in records]
    assert written and not source_timestamps.intersection(written), (
        f"expected Spark's sink to replace source timestamps, got {written}"
    )

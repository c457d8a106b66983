"""The copy on real clusters and a real Spark: every record, as it was.

A standalone driver in the test process copies one topic; the full content of every
source partition is compared with its remote twin.
"""

from __future__ import annotations

import pytest
from srm_harness.clients import consume_all, produce
from srm_harness.compare import content, copied
from srm_harness.control import write_config
from srm_harness.records import RECENT_MS, Record
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_copies_every_record_with_key_value_headers_timestamp(
    kafka, run_driver, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    # Old CreateTimes: without retention.ms=-1 the broker could delete them mid-test.
    topic = kafka.create_topic(
        "primary", unique_name("fidelity"), partitions=3, config={"retention.ms": "-1"}
    )
    remote = kafka.create_topic("backup", f"primary.{topic}", partitions=3)
    records = [
        Record(
            b"k1",
            b"v1",
            (("h", b"1"), ("h", b"2"), ("bin", bytes(range(256)))),
            RECENT_MS,
            0,
        ),
        Record(None, b"no key", (), RECENT_MS + 1, 0),
        Record(b"tombstone", None, (("null-header", None),), RECENT_MS + 2, 1),
        Record(b"", b"", (), 1_500_000_000_000, 1),
        *[
            Record(f"k{i}".encode(), f"value {i}".encode() * 10, (), RECENT_MS + 10 + i, i % 2)
            for i in range(500)
        ],
    ]
    produce(kafka["primary"], topic, records)
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={"primary->backup": {"enabled": True, "topics": [topic]}},
    )
    driver = run_driver(config)
    wait_until(lambda: copied(kafka["primary"], topic, kafka["backup"], remote), 90, "copied")
    driver.stop()
    source = consume_all(kafka["primary"], topic)
    target = consume_all(kafka["backup"], remote)
    for partition in range(3):
        assert content(target[partition]) == content(source[partition])
    assert sum(len(v) for v in target.values()) == len(records)
    assert not target[2] and not source[2]  # the empty partition stays empty

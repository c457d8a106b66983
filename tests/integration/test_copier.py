"""The copy on real clusters and a real Spark: every record, as it was.

A standalone driver in the test process copies one topic; the full content of every
source partition is compared with its remote twin.
"""

from __future__ import annotations

import pytest
from srm_local import testing
from srm_local.testing import Record, content

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
            testing.RECENT_MS,
            0,
        ),
        Record(None, b"no key", (), testing.RECENT_MS + 1, 0),
        Record(b"tombstone", None, (("null-header", None),), testing.RECENT_MS + 2, 1),
        Record(b"", b"", (), 1_500_000_000_000, 1),
        *[
            Record(
                f"k{i}".encode(), f"value {i}".encode() * 10, (), testing.RECENT_MS + 10 + i, i % 2
            )
            for i in range(500)
        ],
    ]
    testing.produce(kafka["primary"], topic, records)
    config = testing.write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={"primary->backup": {"enabled": True, "topics": [topic]}},
    )
    driver = run_driver(config)
    testing.wait_until(
        lambda: testing.copied(kafka["primary"], topic, kafka["backup"], remote), 90, "copied"
    )
    driver.stop()
    source = testing.consume_all(kafka["primary"], topic)
    target = testing.consume_all(kafka["backup"], remote)
    for partition in range(3):
        assert content(target[partition]) == content(source[partition])
    assert sum(len(v) for v in target.values()) == len(records)
    assert not target[2] and not source[2]  # the empty partition stays empty

"""Source tasks on real clusters and a real Spark: what a batch copies, and its resume.

Each test builds one flow from a YAML file, runs ``FlowCopier`` batches until nothing is
left, and compares the full content of every source partition with its remote twin.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_common.config import load_config
from srm_driver.copier import FlowCopier
from srm_local import testing
from srm_local.testing import Record, content

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _copier(kafka, spark, tmp_path: Path, **flow_keys: object) -> FlowCopier:  # type: ignore[no-untyped-def]
    path = testing.write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={"primary->backup": {"enabled": True, **flow_keys}},
    )
    flow = load_config(path).flow("primary", "backup")
    copier = FlowCopier(flow, spark, max_records=flow_keys.get("max", 1000), progress_partitions=3)  # type: ignore[arg-type]
    copier.prepare()
    return copier


def _drain(copier: FlowCopier) -> int:
    batches = 0
    while copier.run_batch() is not None:
        batches += 1
        assert batches < 200
    return batches


def _mirror(kafka, topic: str, partitions: int, remote: str | None = None) -> str:  # type: ignore[no-untyped-def]
    remote = remote or f"primary.{topic}"
    kafka.create_topic("backup", remote, partitions=partitions)
    return remote


def test_copies_every_record_with_key_value_headers_timestamp(kafka, spark, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    # Old CreateTimes: without retention.ms=-1 the broker could delete them mid-test.
    topic = kafka.create_topic(
        "primary", unique_name("fidelity"), partitions=3, config={"retention.ms": "-1"}
    )
    remote = _mirror(kafka, topic, 3)
    records = [
        Record(
            b"k1",
            b"v1",
            (("h", b"1"), ("h", b"2"), ("bin", bytes(range(256)))),
            1_600_000_000_000,
            0,
        ),
        Record(None, b"no key", (), 1_600_000_000_001, 0),
        Record(b"tombstone", None, (("null-header", None),), 1_600_000_000_002, 1),
        Record(b"", b"", (), 1_500_000_000_000, 1),
        *[
            Record(f"k{i}".encode(), f"value {i}".encode() * 10, (), 1_700_000_000_000 + i, i % 2)
            for i in range(500)
        ],
    ]
    testing.produce(kafka["primary"], topic, records)
    copier = _copier(kafka, spark, tmp_path)
    copier.assign({(topic, p): remote for p in range(3)})
    _drain(copier)
    source = testing.consume_all(kafka["primary"], topic)
    target = testing.consume_all(kafka["backup"], remote)
    for partition in range(3):
        assert content(target[partition]) == content(source[partition])
    assert sum(len(v) for v in target.values()) == len(records)
    assert not target[2] and not source[2]  # the empty partition stays empty

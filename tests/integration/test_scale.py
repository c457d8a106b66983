"""A few thousand partitions on real clusters: the remote topics created in several
requests under the records limit, every record of every partition copied as it was.

300 topics x 10 partitions with ``srm.admin.max.records: 1000`` (KRaft's own cap is
10,000; a lower limit here makes the 3,300-record creation take four requests without
a ten-thousand-partition test). The larger runs, against MirrorMaker 2, are
``make bench-scale`` (docs/benchmark.md, Scale).
"""

from __future__ import annotations

import logging
import re
import time

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec
from srm_common.adapters.kafka_reader import read_partitions
from srm_common.domain.metadata_batches import chunks, new_topic_records
from srm_harness.clients import admin
from srm_harness.control import write_config
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TOPICS = 300
PARTITIONS = 10
RECORDS = 4  # a partition; 12,000 records in all


def test_three_thousand_partitions_are_created_in_chunks_and_copied_record_for_record(
    kafka, run_driver, tmp_path, unique_name, caplog
):  # type: ignore[no-untyped-def]
    prefix = unique_name("scale").replace("-", "_")
    names = [f"{prefix}.t{i:03d}" for i in range(TOPICS)]
    source = admin(kafka["primary"])
    cost = new_topic_records(PARTITIONS, 0)
    for chunk in chunks(names, lambda _name: cost, 10_000):
        for future in source.create_topics(
            [NewTopic(n, PARTITIONS, 1) for n in chunk], operation_timeout=60
        ).values():
            future.result(120)
    kafka.created.extend(("primary", n) for n in names)
    kafka.created.extend(("backup", f"primary.{n}") for n in names)
    wait_until(lambda: _all_led(source, names), 120, "the source partitions have leaders")
    _produce(kafka["primary"], names)
    config = write_config(
        tmp_path,
        {"primary": kafka["primary"], "backup": kafka["backup"]},
        flows={
            "primary->backup": {
                "enabled": True,
                "topics": [rf"{re.escape(prefix)}\..*"],
                "srm.admin.max.records": 1000,
                "tasks.max": 4,
            }
        },
    )
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="srm_driver.topic_sync"):
        driver = run_driver(config)
        upstream = [(n, p) for n in names for p in range(PARTITIONS)]
        remote = [(f"primary.{n}", p) for n, p in upstream]
        target = admin(kafka["backup"])
        wait_until(
            lambda: _ends(target, remote) == dict.fromkeys(remote, RECORDS),
            240,
            "every partition copied",
        )
        copied_after = time.monotonic() - started
        driver.stop()
    created = [r.getMessage() for r in caplog.records if "remote topics on" in r.getMessage()]
    assert any(
        re.search(rf"created {TOPICS} of {TOPICS} remote topics on 'backup' in [4-9] requests", m)
        for m in created
    ), created
    originals = _read(kafka["primary"], upstream)
    copies = _read(kafka["backup"], remote)
    assert len(originals) == TOPICS * PARTITIONS == len(copies)
    for (topic, partition), messages in originals.items():
        assert copies[(f"primary.{topic}", partition)] == messages, f"{topic}-{partition}"
    print(f"3,000 partitions copied {copied_after:.1f} s after the driver started")


def _produce(bootstrap: str, names: list[str]) -> None:
    """RECORDS records in every partition, each naming its topic, partition and index."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    errors: list[object] = []
    # Timestamps of now, kept by the copies: older ones (a fixed date) are past the
    # source's 7-day retention, which then deletes them before they are copied.
    now_ms = int(time.time() * 1000)
    for name in names:
        for partition in range(PARTITIONS):
            for i in range(RECORDS):
                producer.produce(
                    name,
                    key=f"k{partition}-{i}".encode(),
                    value=f"{name}/{partition}/{i}".encode() * 3,
                    headers=[("n", str(i).encode())],
                    timestamp=now_ms + i,
                    partition=partition,
                    on_delivery=lambda err, _m: errors.append(err) if err else None,
                )
        producer.poll(0)
    left = producer.flush(180)
    assert left == 0 and not errors, f"{left} unacknowledged, {errors[:3]}"


def _all_led(admin, names: list[str]) -> bool:  # type: ignore[no-untyped-def]
    listed = admin.list_topics(timeout=30).topics
    return all(
        name in listed
        and len(listed[name].partitions) == PARTITIONS
        and all(p.leader >= 0 for p in listed[name].partitions.values())
        for name in names
    )


def _ends(admin, partitions):  # type: ignore[no-untyped-def]
    """High watermarks, one ListOffsets for all; a partition not there yet is left out."""
    try:
        admin.list_topics(timeout=10)  # new topics' metadata, for librdkafka's cache
        futures = admin.list_offsets(
            {TopicPartition(t, p): OffsetSpec.latest() for t, p in partitions},
            request_timeout=30,
        )
    except Exception:  # noqa: BLE001 - not there yet: asked again
        return {}
    ends = {}
    for tp, future in futures.items():
        try:
            ends[(tp.topic, tp.partition)] = future.result(30).offset
        except Exception:  # noqa: BLE001 - a partition without a leader yet
            continue
    return ends


def _read(bootstrap, partitions):  # type: ignore[no-untyped-def]
    """Every record of every partition, as (key, value, headers, timestamp), with one
    consumer for all of them."""
    found = {tp: [] for tp in partitions}
    for message in read_partitions(
        {"bootstrap.servers": bootstrap},
        dict.fromkeys(partitions, 0),
        what="reading the scale topics",
        timeout=120,
    ):
        found[(message.topic(), message.partition())].append(
            (message.key(), message.value(), message.headers(), message.timestamp()[1])
        )
    return found

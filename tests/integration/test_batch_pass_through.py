"""The batch pass-through prototype (``make bench --batch-copy``) on real brokers.

It is a benchmark's prototype, not the copy slot, but the figures it gives are only
worth quoting if the copy it makes is right: every record as it was, the source's codec
kept batch for batch (never decompressed), transaction markers left out, and the
target's broker accepting the re-stamped batches (CRC, producer id, sequences).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from confluent_kafka import Producer
from srm_harness.clients import consume_all
from srm_harness.compare import content
from srm_harness.log_batches import log_batches
from srm_harness.records import RECENT_MS
from srm_harness.waits import wait_until
from srm_local.paths import project_root

pytestmark = [pytest.mark.integration]


def _produce(bootstrap: str, topic: str) -> int:
    plain = Producer({"bootstrap.servers": bootstrap, "compression.type": "zstd", "linger.ms": 50})
    for n in range(3_000):
        plain.produce(
            topic, value=b'{"n": %d, "pad": "%s"}' % (n, b"x" * (n % 300)),
            key=b"k%d" % (n % 97), partition=n % 3, timestamp=RECENT_MS + n,
            headers=[("origin", b"test"), ("n", str(n).encode())],
        )  # fmt: skip
    assert plain.flush(30) == 0
    transactional = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"{topic}-tx",
            "compression.type": "zstd",
        }  # fmt: skip
    )
    transactional.init_transactions(30)
    transactional.begin_transaction()
    for n in range(200):
        transactional.produce(topic, value=b"committed %d" % n, partition=n % 3)
    transactional.commit_transaction(30)
    return 3_200


def test_batches_pass_through_with_every_record_and_the_source_codec(kafka, unique_name, tmp_path):  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("primary", unique_name("batches"), partitions=3)
    remote = kafka.create_topic("backup", f"primary.{topic}", partitions=3)
    records = _produce(kafka["primary"], topic)
    env = {**os.environ, "PYTHONPATH": str(project_root() / "bench")}
    said = tmp_path / "batch-loop.log"
    loop = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "srm_bench.batch_loop",
            "--source",
            kafka["primary"],
            "--target",
            kafka["backup"],
            "--topic",
            topic,
            "--remote",
            remote,
            "--partitions",
            "3",
            "--records",
            str(records),
        ],  # fmt: skip
        env=env,
        stdout=said.open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: loop.poll() is not None or "copied" in said.read_text(), 120, "done")
        assert "every record copied" in said.read_text(), said.read_text()
    finally:
        loop.terminate()
        loop.wait(30)
    source, target = consume_all(kafka["primary"], topic), consume_all(kafka["backup"], remote)
    for partition in range(3):
        assert content(target[partition]) == content(source[partition])
    assert sum(len(records) for records in target.values()) == records
    wait_until(lambda: log_batches(kafka["backup"], remote), 30, "the target's log readable")
    source_log = log_batches(kafka["primary"], topic)
    target_log = log_batches(kafka["backup"], remote)
    for partition in range(3):
        data = [b for b in source_log[partition] if not b.control]
        assert [(b.codec, b.size, b.records) for b in target_log[partition]] == [
            (b.codec, b.size, b.records) for b in data
        ]
        assert {b.codec for b in data} == {"zstd"}

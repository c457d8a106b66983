"""The batch pass-through prototype (``make bench --batch-copy``) and the copy slot's own
protocol layer it runs on (:mod:`srm_driver.copier.wire`), on real brokers.

The prototype is a benchmark's, not the copy slot, but the figures it gives are only
worth quoting if the copy it makes is right: every record as it was, the source's codec
kept batch for batch (never decompressed), transaction markers left out, and the
target's broker accepting the re-stamped batches (CRC, producer id, sequences). The layer
itself: a broker's refusal named with the broker, the partition and Kafka's error code; a
batch's base offset on the target as the Produce answer gives it (the fence's proof per
batch); and the same copy over mutual TLS.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from confluent_kafka import Producer
from srm_common.adapters import kafka_clients
from srm_common.config.security import read_security
from srm_driver.copier.wire import apis, messages, sasl
from srm_driver.copier.wire.batches import record_count, restamp, split
from srm_driver.copier.wire.cluster import Cluster
from srm_driver.copier.wire.errors import BrokerError
from srm_driver.copier.wire.fetch import fetch_request, fetch_response
from srm_driver.copier.wire.fetch import raise_refusal as fetch_refusal
from srm_driver.copier.wire.produce import produce_request, produce_response
from srm_driver.copier.wire.produce import raise_refusal as produce_refusal
from srm_driver.testing import record_batch
from srm_harness.clients import consume_all, produce
from srm_harness.compare import content
from srm_harness.log_batches import log_batches
from srm_harness.records import RECENT_MS, Record
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


def _batch(count: int) -> memoryview:
    return memoryview(bytearray(record_batch(0, count, timestamp=RECENT_MS)))


def _latest(cluster: Cluster, topic: str) -> int:
    connection = cluster.leader(topic, 0)
    body = [messages.list_offsets_request(topic, {0: messages.LATEST})]
    (error, offset), *_ = messages.list_offsets_response(
        cluster.request(connection, apis.LIST_OFFSETS, body)
    ).values()
    assert error == 0
    return offset


def test_a_refused_batch_names_the_broker_partition_and_code_and_a_good_one_lands_at_its_offset(
    kafka, unique_name
):  # type: ignore[no-untyped-def]
    topic = kafka.create_topic("backup", unique_name("refused"), partitions=1)
    target = Cluster(kafka["backup"], client_id="srm-test-wire", timeout=30)
    try:
        target.refresh([topic])
        writer = target.leader(topic, 0)
        producer_id, epoch = target.init_producer_id(writer)
        header, rest, after = restamp(_batch(7), producer_id, epoch, 0)
        corrupt = bytearray(rest)
        corrupt[-1] ^= 0xFF  # the CRC no longer holds
        answer = target.request(
            writer,
            apis.PRODUCE,
            produce_request({topic: [(0, [header, corrupt])]}, timeout_ms=30_000),
        )
        with pytest.raises(BrokerError) as refused:
            produce_refusal(writer.broker, produce_response(answer))
        assert str(refused.value).startswith(
            f"broker {writer.broker}: Produce to {topic}-0: error 2 CORRUPT_MESSAGE"
        ), str(refused.value)
        for sequence, count in ((0, 7), (after, 5)):
            header, rest, _ = restamp(_batch(count), producer_id, epoch, sequence)
            body = produce_request({topic: [(0, [header, rest])]}, timeout_ms=30_000)
            (landed,) = produce_response(target.request(writer, apis.PRODUCE, body))
            assert (landed.error, landed.base_offset) == (0, 0 if sequence == 0 else 7)
        assert _latest(target, topic) == 12
    finally:
        target.close()


def test_batches_pass_through_over_mutual_tls(kafka_secured, unique_name):  # type: ignore[no-untyped-def]
    cluster = kafka_secured["primary"]
    topic = kafka_secured.create_topic("primary", unique_name("tls"))
    remote = kafka_secured.create_topic("primary", f"backup.{topic}")
    cluster.allow("User:srm-client", "topic", topic, "READ", "DESCRIBE")
    cluster.allow("User:srm-client", "topic", remote, "WRITE", "DESCRIBE")
    records = [Record(b"k%d" % n, b"v" * 1000 + b"%d" % n, timestamp_ms=RECENT_MS + n)
               for n in range(3_000)]  # fmt: skip
    produce(cluster.bootstrap_servers, topic, records, config=cluster.client_config())
    tls = cluster.tls
    context = kafka_clients.ssl_context(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls.ca_pem),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(tls.client_keystore_p12),
            "ssl.keystore.password": tls.password,
        }
    )
    wire = Cluster(cluster.ssl_bootstrap_servers, client_id="srm-test-wire", ssl_context=context)
    try:
        wire.refresh([topic, remote])
        reader, writer = wire.leader(topic, 0), wire.leader(remote, 0)
        producer_id, epoch = wire.init_producer_id(writer)
        offset = sequence = copied = 0
        while copied < len(records):
            body = fetch_request({topic: [(0, offset)]}, max_wait_ms=500, min_bytes=1,
                                 max_bytes=1 << 20, partition_max_bytes=1 << 20)  # fmt: skip
            error, fetched = fetch_response(wire.request(reader, apis.FETCH, [body]))
            fetch_refusal(reader.broker, error, fetched)
            batches, next_offset = split(fetched[0].records)
            for batch in batches:
                header, rest, sequence = restamp(batch, producer_id, epoch, sequence)
                request = produce_request({remote: [(0, [header, rest])]}, timeout_ms=30_000)
                produce_refusal(
                    writer.broker, produce_response(wire.request(writer, apis.PRODUCE, request))
                )
                copied += record_count(batch)
            offset = max(offset, next_offset)
        assert _latest(wire, remote) == len(records)
    finally:
        wire.close()
    source = consume_all(cluster.bootstrap_servers, topic, client=cluster.client_config())
    target = consume_all(cluster.bootstrap_servers, remote, client=cluster.client_config())
    assert content(target[0]) == content(source[0])


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_sasl_logins_from_the_operators_keys_and_a_refused_one_named(
    kafka_secured, unique_name, mechanism
):  # type: ignore[no-untyped-def]
    cluster = kafka_secured["primary"]
    topic = kafka_secured.create_topic("primary", unique_name("sasl"))
    produce(
        cluster.bootstrap_servers, topic, [Record(b"k", b"v")] * 3, config=cluster.client_config()
    )
    keys = cluster.mm2_keys(cluster.admin.with_mechanism(mechanism))
    security = read_security(keys)
    login = sasl.Sasl(mechanism, security.username or "", security.password or "")
    context = kafka_clients.ssl_context(keys)
    wire = Cluster(
        keys["bootstrap.servers"], client_id="srm-test-wire", ssl_context=context, login=login
    )
    try:
        wire.refresh([topic])
        assert _latest(wire, topic) == 3
    finally:
        wire.close()
    wrong = sasl.Sasl(mechanism, login.username, login.password + "x")
    refused = Cluster(
        keys["bootstrap.servers"], client_id="srm-test-wire", ssl_context=context, login=wrong
    )
    with pytest.raises(BrokerError, match=f"SaslAuthenticate as {login.username}: error 58 SASL_"):
        refused.refresh([topic])
    refused.close()

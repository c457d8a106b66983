"""The secured local clusters themselves (srm_local.secured): who gets in and who is
refused, with librdkafka clients that do not depend on the product."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient
from srm_harness.clients import consume_all, produce
from srm_harness.records import Record

pytestmark = pytest.mark.integration


def _delivery_errors(config: dict[str, str], topic: str) -> list[KafkaError | None]:
    outcomes: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 10_000})
    producer.produce(topic, b"value", on_delivery=lambda err, _msg: outcomes.append(err))
    producer.flush(20)
    return outcomes


def _first_poll(config: dict[str, str], group: str, topic: str) -> str:
    """The first record's value, or the name of the error the first poll returns."""
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        message = consumer.poll(15)
    finally:
        consumer.close()
    assert message is not None, "neither a record nor an error within 15 s"
    if message.error() is not None:
        return message.error().name()
    return message.value().decode()


def _metadata_error(config: dict[str, str]) -> str:
    """'' when the client logs in and reads metadata, else the error."""
    try:
        AdminClient({**config, "log_level": 0}).list_topics(timeout=5)
    except Exception as exc:  # noqa: BLE001 - the error is what the test looks at
        return str(exc)
    return ""


def test_scram_user_needs_acls_to_write_and_read(kafka_secured, unique_name) -> None:
    primary = kafka_secured["primary"]
    topic = kafka_secured.create_topic("primary", unique_name("orders"))
    # Made with Kafka's own kafka-configs, as docs/security.md tells an operator to.
    alice = primary.create_user(unique_name("alice"), "alice-password-1", with_kafka_configs=True)

    refused = _delivery_errors(primary.client_config(alice), topic)
    assert [e.code() for e in refused if e] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]

    primary.allow(alice.principal, "topic", topic, "WRITE", "DESCRIBE")
    assert _delivery_errors(primary.client_config(alice), topic) == [None]

    # Reading needs READ on the group and on the topic; the admin (super user) reads all.
    group = unique_name("g")
    assert _first_poll(primary.client_config(alice), group, topic) == "GROUP_AUTHORIZATION_FAILED"
    primary.allow(alice.principal, "group", group, "READ")
    assert _first_poll(primary.client_config(alice), group, topic) == "TOPIC_AUTHORIZATION_FAILED"
    primary.allow(alice.principal, "topic", topic, "READ")
    assert _first_poll(primary.client_config(alice), group, topic) == "value"
    found = consume_all(primary.bootstrap_servers, topic, client=primary.client_config())
    assert [r.value for r in found[0]] == [b"value"]
    names = {(b.name, b.operation.name) for b in primary.acls() if b.principal == alice.principal}
    assert names == {(topic, "WRITE"), (topic, "DESCRIBE"), (topic, "READ"), (group, "READ")}
    print(f"\nalice without ACLs: {refused[0]}; with WRITE, DESCRIBE: delivered")


def test_every_listener_and_mechanism_logs_in(kafka_secured, unique_name) -> None:
    cluster = kafka_secured["backup"]
    tls = cluster.tls
    bob = cluster.create_user(unique_name("bob"), "bob-password-2", "SCRAM-SHA-256")
    admin = cluster.admin
    sasl_plaintext = {
        "bootstrap.servers": cluster.sasl_plaintext_bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": admin.username,
        "sasl.password": admin.password,
    }
    mutual_tls = {
        "bootstrap.servers": cluster.ssl_bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.ca.location": str(tls.ca_pem),
        "ssl.certificate.location": str(tls.client_pem),
        "ssl.key.location": str(tls.client_key_encrypted),
        "ssl.key.password": tls.password,
    }
    assert _metadata_error(cluster.client_config(bob)) == ""
    assert _metadata_error(sasl_plaintext) == ""
    assert _metadata_error(mutual_tls) == ""

    without_certificate = {k: v for k, v in mutual_tls.items() if not k.startswith("ssl.key")}
    without_certificate.pop("ssl.certificate.location")
    assert _metadata_error(without_certificate) != ""
    assert _metadata_error({**cluster.client_config(bob), "sasl.password": "wrong"}) != ""
    stranger = {**cluster.client_config(bob), "ssl.ca.location": str(tls.stranger_ca_pem)}
    assert _metadata_error(stranger) != ""


def test_client_certificate_maps_to_its_common_name(kafka_secured, unique_name) -> None:
    cluster = kafka_secured["primary"]
    topic = kafka_secured.create_topic("primary", unique_name("mtls"))
    tls = cluster.tls
    mutual_tls = {
        "bootstrap.servers": cluster.ssl_bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.ca.location": str(tls.ca_pem),
        "ssl.certificate.location": str(tls.client_pem),
        "ssl.key.location": str(tls.client_key),
    }
    refused = _delivery_errors(mutual_tls, topic)
    assert [e.code() for e in refused if e] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    cluster.allow("User:srm-client", "topic", topic, "WRITE", "DESCRIBE")
    produce(cluster.ssl_bootstrap_servers, topic, [Record(b"k", b"v")], config=mutual_tls)
    found = consume_all(cluster.bootstrap_servers, topic, client=cluster.client_config())
    assert [r.key for r in found[0]] == [b"k"]

"""The product's Python clients on secured brokers, configured only in MM2's Java keys.

Each case writes an MM2 properties file (secrets through ``${file:...}`` and
``${env:...}``), loads it with ``load_config`` and builds librdkafka, aiokafka and Faust
credentials from the loaded model with ``srm_common.adapters.kafka_clients``: what the
services do. The data is checked with the harness's own librdkafka clients
(``srm_local.secured``'s ``client_config``), which do not depend on the code under test.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from srm_common.adapters import kafka_clients
from srm_common.adapters.cluster_probe import refused_clusters
from srm_common.config import load_config
from srm_common.errors import ConfigError
from srm_harness.clients import consume_all
from srm_local.secured import Credential

pytestmark = pytest.mark.integration

JAAS_KEY = "primary.jaas"


def _config(tmp_path: Path, keys: dict[str, str]) -> Path:
    """An MM2 file for ``primary`` with ``keys``; the JAAS line and the store password go
    through a secrets file and the environment, as an operator would keep them."""
    secrets = tmp_path / "secrets.properties"
    lines = []
    body = ["clusters = primary, backup", "backup.bootstrap.servers = 127.0.0.1:1"]
    for key, value in keys.items():
        if key == "sasl.jaas.config":
            lines.append(f"{JAAS_KEY} = {value}")
            value = f"${{file:{secrets}:{JAAS_KEY}}}"
        body.append(f"primary.{key} = {value}")
    secrets.write_text("\n".join(lines) + "\n")
    secrets.chmod(0o600)
    path = tmp_path / f"mm2-{uuid.uuid4().hex[:6]}.properties"
    path.write_text("\n".join(body) + "\n")
    return path


def _round_trip(cluster, keys: dict[str, str], topic: str, tmp_path: Path) -> None:
    """Produce with the product's producer built from the loaded config; read back with
    the harness's consumer."""
    client = load_config(_config(tmp_path, keys)).clusters["primary"].client_config("producer")
    admin = kafka_clients.admin(client)
    assert topic in admin.list_topics(timeout=20).topics
    producer = kafka_clients.producer(client, **{"message.timeout.ms": 20_000})
    errors: list[object] = []
    producer.produce(topic, b"v", key=b"k", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(30)
    assert errors == [None], f"the product's producer could not write: {errors}"
    found = consume_all(cluster.bootstrap_servers, topic, client=cluster.client_config())
    assert [r.key for part in found.values() for r in part] == [b"k"]


@pytest.mark.parametrize(
    ("mechanism", "truststore"),
    [("SCRAM-SHA-512", "JKS"), ("SCRAM-SHA-256", "PKCS12"), ("PLAIN", "JKS")],
)
def test_sasl_ssl_clients_work_when_configured_in_java_keys(
    kafka_secured, unique_name, tmp_path: Path, mechanism: str, truststore: str
) -> None:
    cluster = kafka_secured["primary"]
    topic = kafka_secured.create_topic("primary", unique_name("sasl"))
    user = cluster.admin.with_mechanism(mechanism)
    _round_trip(cluster, cluster.mm2_keys(user, truststore=truststore), topic, tmp_path)


@pytest.mark.parametrize("store", ["JKS", "PKCS12", "PEM-file", "PEM-text"])
def test_mutual_tls_clients_work_when_the_key_store_is_a_java_or_pem_store(
    kafka_secured, unique_name, tmp_path: Path, store: str
) -> None:
    cluster = kafka_secured["primary"]
    topic = kafka_secured.create_topic("primary", unique_name("mtls"))
    cluster.allow("User:srm-client", "topic", topic, "WRITE", "DESCRIBE")
    tls = cluster.tls
    keys = {
        "bootstrap.servers": cluster.ssl_bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca_pem),
    }
    if store in ("JKS", "PKCS12"):
        path = tls.client_keystore_jks if store == "JKS" else tls.client_keystore_p12
        keys |= {
            "ssl.keystore.type": store,
            "ssl.keystore.location": str(path),
            "ssl.keystore.password": tls.password,
        }
    elif store == "PEM-file":
        bundle = tmp_path / "client-bundle.pem"
        bundle.write_text(tls.client_key_encrypted.read_text() + tls.client_pem.read_text())
        keys |= {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(bundle),
            "ssl.key.password": tls.password,
        }
    else:
        keys |= {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": tls.client_key.read_text().replace("\n", "\\n"),
            "ssl.keystore.certificate.chain": tls.client_pem.read_text().replace("\n", "\\n"),
        }
    _round_trip(cluster, keys, topic, tmp_path)


def test_aiokafka_reads_with_the_translated_settings(
    kafka_secured, unique_name, tmp_path: Path
) -> None:
    from aiokafka import AIOKafkaConsumer
    from srm_harness.clients import produce
    from srm_harness.records import Record

    cluster = kafka_secured["primary"]
    topic = kafka_secured.create_topic("primary", unique_name("aio"))
    produce(cluster.bootstrap_servers, topic, [Record(b"k", b"v")], config=cluster.client_config())
    keys = load_config(_config(tmp_path, cluster.mm2_keys(cluster.admin))).clusters["primary"]

    async def read() -> list[bytes]:
        client = keys.client_config("consumer")
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=client["bootstrap.servers"],
            auto_offset_reset="earliest",
            **kafka_clients.aiokafka_security(client),
        )
        await consumer.start()
        try:
            batches = await consumer.getmany(timeout_ms=15_000)
            return [r.key for records in batches.values() for r in records]
        finally:
            await consumer.stop()

    assert asyncio.run(read()) == [b"k"]


def test_a_wrong_password_is_one_line_without_the_password(kafka_secured, tmp_path: Path) -> None:
    cluster = kafka_secured["primary"]
    wrong = Credential(cluster.admin.username, "Wr0ng-pa55word")
    config = load_config(_config(tmp_path, cluster.mm2_keys(wrong)))
    started = time.monotonic()
    lines = refused_clusters(config, ["primary", "backup"])
    print(f"\nwrong password ({time.monotonic() - started:.1f} s): {lines}")
    assert len(lines) == 1, "only primary refuses; backup (127.0.0.1:1) is down, not refusing"
    assert lines[0].startswith("cluster 'primary'") and "authentication failed" in lines[0]
    assert "primary.sasl.jaas.config" in lines[0]
    assert "Wr0ng-pa55word" not in lines[0]


def test_an_untrusted_broker_certificate_is_one_line_naming_the_trust_store(
    kafka_secured, tmp_path: Path
) -> None:
    cluster = kafka_secured["primary"]
    keys = cluster.mm2_keys(cluster.admin)
    keys["ssl.truststore.location"] = str(cluster.tls.stranger_truststore_jks)
    config = load_config(_config(tmp_path, keys))
    lines = refused_clusters(config, ["primary"])
    print(f"\nuntrusted certificate: {lines}")
    assert len(lines) == 1 and "certificate verify failed" in lines[0]
    assert "primary.ssl.truststore" in lines[0]


def test_good_credentials_are_not_refused(kafka_secured, tmp_path: Path) -> None:
    cluster = kafka_secured["primary"]
    config = load_config(_config(tmp_path, cluster.mm2_keys(cluster.admin)))
    assert refused_clusters(config, ["primary"]) == []


def test_a_store_with_a_wrong_password_is_one_line_naming_the_key(
    kafka_secured, tmp_path: Path
) -> None:
    cluster = kafka_secured["primary"]
    keys = cluster.mm2_keys(cluster.admin)
    keys["ssl.truststore.password"] = "not-the-store-password"
    client = load_config(_config(tmp_path, keys)).clusters["primary"].client_config("admin")
    with pytest.raises(ConfigError) as caught:
        kafka_clients.admin(client)
    message = str(caught.value)
    print(f"\nwrong store password: {message}")
    assert "ssl.truststore.location" in message and "\n" not in message
    assert "not-the-store-password" not in message

"""Security settings in MM2's keys: what loads, what librdkafka gets, what is refused (one
line naming <alias>.<key>, never a secret)."""

from __future__ import annotations

import pytest
from srm_common.adapters.kafka_clients import librdkafka_config, librdkafka_security
from srm_common.adapters.key_stores import KeyFiles
from srm_common.config import parse_properties_text
from srm_common.config.security import Security, read_security
from srm_common.errors import ConfigError

BASE = (
    "clusters = primary, backup\n"
    "primary.bootstrap.servers = p:9092\nbackup.bootstrap.servers = b:9092\n"
)
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
JAAS = f'{SCRAM} required username="srm" password="pw-Secret-1";'


def load(body: str):
    return parse_properties_text(BASE + body, "mm2.properties")


def refusal(body: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(body)
    return str(caught.value)


def test_sasl_ssl_scram_loads_when_written_in_mm2_keys() -> None:
    config = load(
        "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = SCRAM-SHA-512\n"
        f"primary.sasl.jaas.config = {JAAS}\n"
    )
    keys = config.flows[("primary", "backup")].source_consumer
    assert keys["sasl.jaas.config"] == JAAS, "the Java clients get the keys unchanged"
    security = read_security(keys)
    assert (security.mechanism, security.username, security.password) == (
        "SCRAM-SHA-512",
        "srm",
        "pw-Secret-1",
    )


@pytest.mark.parametrize(
    ("body", "key", "why"),
    [
        # Unset is Kafka's default, GSSAPI, which then needs its Kerberos login.
        ("primary.security.protocol = SASL_SSL\n", "primary.sasl.jaas.config", "GSSAPI needs"),
        (
            "primary.security.protocol = SASL_PLAINTEXT\nprimary.sasl.mechanism = GSSAPI\n",
            "primary.sasl.jaas.config",
            "Krb5LoginModule required useKeyTab=true",
        ),
        (
            "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = OAUTHBEARER\n",
            "primary.sasl.mechanism",
            "OAUTHBEARER is not supported",
        ),
        (
            "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = scram-sha-512\n",
            "primary.sasl.mechanism",
            "case sensitive",
        ),
        (
            "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = PLAIN\n",
            "primary.sasl.jaas.config",
            "PLAIN needs the login",
        ),
        (
            "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = PLAIN\n"
            f"primary.sasl.jaas.config = {JAAS}\n",
            "primary.sasl.jaas.config",
            "needs the login module " + PLAIN,
        ),
        (
            "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = SCRAM-SHA-256\n"
            f'primary.sasl.jaas.config = {SCRAM} required username="u";\n',
            "primary.sasl.jaas.config",
            'no password="..."',
        ),
        (
            "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = SCRAM-SHA-256\n"
            f'primary.sasl.jaas.config = {SCRAM} required username="u" password="p"'
            " tokenauth=true;\n",
            "primary.sasl.jaas.config",
            "delegation tokens",
        ),
        (
            "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = PLAIN\n"
            "primary.sasl.username = u\n",
            "primary.sasl.username",
            "librdkafka's key",
        ),
        (
            "primary.security.protocol = SSL\nprimary.ssl.ca.location = /ca.pem\n",
            "primary.ssl.ca.location",
            "ssl.truststore.location with ssl.truststore.type=PEM",
        ),
        (
            "primary.security.protocol = SSL\nprimary.ssl.truststore.type = BKS\n",
            "primary.ssl.truststore.type",
            "JKS, PKCS12, PEM",
        ),
        (
            "primary.security.protocol = SSL\nprimary.ssl.truststore.type = PEM\n"
            "primary.ssl.truststore.location = /ca.pem\nprimary.ssl.truststore.password = x\n",
            "primary.ssl.truststore.password",
            "PEM trust store has no password",
        ),
        (
            "primary.security.protocol = SSL\nprimary.ssl.keystore.location = /k.p12\n"
            "primary.ssl.keystore.type = PKCS12\n",
            "primary.ssl.keystore.password",
            "needs its password",
        ),
        (
            "primary.security.protocol = SSL\nprimary.ssl.keystore.type = PEM\n"
            "primary.ssl.keystore.key = -----BEGIN PRIVATE KEY-----\n",
            "primary.ssl.keystore.certificate.chain",
            "both the key and the chain",
        ),
        (
            "primary.security.protocol = SSL\nprimary.ssl.cipher.suites = TLS_AES_128_GCM_SHA256\n",
            "primary.ssl.cipher.suites",
            "not OpenSSL's",
        ),
        (
            "primary.security.protocol = SSL\nprimary.ssl.endpoint.identification.algorithm = x\n",
            "primary.ssl.endpoint.identification.algorithm",
            "expected https",
        ),
        (
            "primary.security.protocol = SSL\nprimary.ssl.engine.factory.class = a.B\n",
            "primary.ssl.engine.factory.class",
            "cannot run Java classes",
        ),
        (
            "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = PLAIN\n"
            f"primary.sasl.jaas.config = {PLAIN} required username=u password=p;\n"
            "primary.consumer.sasl.mechanism = OAUTHBEARER\n",
            "primary.consumer.sasl.mechanism",
            "OAUTHBEARER",
        ),
    ],
)
def test_a_setting_one_stack_cannot_honour_is_one_line_naming_the_key(
    body: str, key: str, why: str
) -> None:
    message = refusal(body)
    assert "\n" not in message, f"one line expected, got {message!r}"
    assert f"key '{key}'" in message, message
    assert why in message, message
    assert "pw-Secret-1" not in message


def test_ssl_keys_are_ignored_when_the_protocol_does_not_use_tls() -> None:
    config = load(
        "primary.security.protocol = SASL_PLAINTEXT\nprimary.sasl.mechanism = PLAIN\n"
        f"primary.sasl.jaas.config = {PLAIN} required username=u password=p;\n"
        "primary.ssl.cipher.suites = X\n"
    )
    keys = librdkafka_config(config.clusters["primary"].client_config("admin"))
    assert not [k for k in keys if k.startswith("ssl.")]


def test_a_malformed_jaas_config_never_shows_its_value_when_refused() -> None:
    message = refusal(
        "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = SCRAM-SHA-512\n"
        f'primary.sasl.jaas.config = {SCRAM} required username="srm" password="pw-Secret-1"\n'
    )
    assert "does not end with ';'" in message and "pw-Secret-1" not in message


def test_the_librdkafka_table_maps_each_java_key_when_translated() -> None:
    security = Security(
        protocol="SASL_SSL",
        mechanism="SCRAM-SHA-256",
        username="u",
        password="p",
        verify_hostname=False,
    )
    own = KeyFiles(certificate="/d/chain.pem", key="/d/key.pem", key_password="kp")
    assert librdkafka_security(security, ca="/d/ca.pem", own=own) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "u",
        "sasl.password": "p",
        "ssl.endpoint.identification.algorithm": "none",
        "ssl.ca.location": "/d/ca.pem",
        "ssl.certificate.location": "/d/chain.pem",
        "ssl.key.location": "/d/key.pem",
        "ssl.key.password": "kp",
    }


def test_java_only_keys_are_dropped_and_others_kept_when_translated() -> None:
    keys = {
        "bootstrap.servers": "h:1",
        "security.protocol": "SSL",
        "ssl.protocol": "TLSv1.3",
        "ssl.enabled.protocols": "TLSv1.3,TLSv1.2",
        "ssl.keymanager.algorithm": "SunX509",
        "ssl.endpoint.identification.algorithm": "https",
        "client.id": "x",
        "enable.auto.commit": False,
    }
    assert librdkafka_config(keys) == {
        "bootstrap.servers": "h:1",
        "client.id": "x",
        "enable.auto.commit": False,
        "security.protocol": "SSL",
        "ssl.endpoint.identification.algorithm": "https",
    }


def test_plaintext_keeps_the_config_as_it_is_when_translated() -> None:
    keys = {"bootstrap.servers": "h:1", "acks": "all"}
    assert librdkafka_config(keys) == {**keys, "security.protocol": "PLAINTEXT"}

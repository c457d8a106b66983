"""The start-up probe's lines for librdkafka's authentication and TLS errors."""

from __future__ import annotations

from confluent_kafka import KafkaError
from srm_common.adapters.cluster_probe import _explain, _security_error

KEYS = {
    "bootstrap.servers": "kafka-p1:9093",
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required"
    ' username="srm" password="Pr0be-secret";',
}


def test_an_authentication_error_names_the_alias_the_user_and_the_key() -> None:
    error = KafkaError(
        KafkaError._AUTHENTICATION,
        "sasl_ssl://kafka-p1:9093/bootstrap: SASL authentication error: Authentication failed"
        " during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
        " (after 362ms in state AUTH_REQ)",
    )
    line = _explain("primary", KEYS, error)
    assert line == (
        "cluster 'primary' (kafka-p1:9093): authentication failed: SASL authentication error:"
        " Authentication failed during authentication due to invalid credentials with SASL"
        " mechanism SCRAM-SHA-512; check the user and password in primary.sasl.jaas.config"
        " (SCRAM-SHA-512 login as 'srm')"
    )
    assert "Pr0be-secret" not in line


def test_a_tls_error_names_the_trust_store_keys() -> None:
    error = KafkaError(
        KafkaError._SSL,
        "ssl://kafka-p1:9093/bootstrap: SSL handshake failed: error:0A000086:SSL"
        " routines::certificate verify failed: broker certificate could not be verified,"
        " verify that ssl.ca.location is correctly configured or root CA certificates are"
        " installed (install ca-certificates package) (after 11ms in state SSL_HANDSHAKE)",
    )
    line = _explain("backup", {**KEYS, "security.protocol": "SSL"}, error)
    assert line.startswith("cluster 'backup' (kafka-p1:9093): TLS handshake failed (SSL):")
    assert "certificate verify failed: broker certificate could not be verified;" in line
    assert "ssl.ca.location" not in line, "librdkafka's key means nothing to an MM2 user"
    assert line.endswith(
        "check that backup.ssl.truststore.* holds the CA that signed the broker's certificate"
    )


def test_only_authentication_and_tls_errors_refuse() -> None:
    down = [KafkaError(KafkaError._TRANSPORT, "refused"), KafkaError(KafkaError._ALL_BROKERS_DOWN)]
    assert _security_error(down) is None


def test_a_refused_kerberos_login_names_the_principal_and_the_service() -> None:
    keys = {
        "bootstrap.servers": "kafka-p1:9092",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required"
        ' useKeyTab=true keyTab="/k/srm.keytab" principal="srm@EX.COM";',
    }
    error = KafkaError(
        KafkaError._AUTHENTICATION,
        "sasl_plaintext://kafka-p1:9092/bootstrap: SASL authentication error:"
        " Authentication failed (after 20ms in state AUTH_REQ)",
    )
    line = _explain("primary", keys, error)
    assert line == (
        "cluster 'primary' (kafka-p1:9092): authentication failed: SASL authentication error:"
        " Authentication failed; check principal= in primary.sasl.jaas.config and"
        " primary.sasl.kerberos.service.name (GSSAPI login as 'srm@EX.COM' to the brokers'"
        " service 'kafka')"
    )


def test_a_first_handshake_reported_as_a_transport_error_is_still_a_tls_refusal() -> None:
    # librdkafka at times reports the first failed handshake without its _SSL code (seen in
    # CI: _TRANSPORT, _ALL_BROKERS_DOWN, then _SSL); the probe must not call that "down".
    errors = [
        KafkaError(
            KafkaError._TRANSPORT,
            "sasl_ssl://127.0.0.1:30999/bootstrap: error:0A000086:SSL routines::certificate"
            " verify failed (after 2ms in state SSL_HANDSHAKE)",
        ),
        KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"),
    ]
    error = _security_error(errors)
    assert error is errors[0]
    line = _explain("primary", {**KEYS, "bootstrap.servers": "127.0.0.1:30999"}, error)
    assert line == (
        "cluster 'primary' (127.0.0.1:30999): TLS handshake failed (SSL): error:0A000086:SSL"
        " routines::certificate verify failed; check that primary.ssl.truststore.* holds the"
        " CA that signed the broker's certificate"
    )


def test_a_coded_tls_error_is_preferred_to_a_transport_error_naming_openssl() -> None:
    transport = KafkaError(KafkaError._TRANSPORT, "error:0A000086:SSL routines::x")
    coded = KafkaError(KafkaError._SSL, "SSL handshake failed: error:0A000086:SSL routines::x")
    assert _security_error([transport, coded]) is coded

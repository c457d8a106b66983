"""Faust gets the aggregated cluster's SASL and TLS settings from MM2's keys."""

from __future__ import annotations

import faust
from srm_metrics_aggregator.credentials import broker_credentials

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required"
    ' username="agg" password="agg-secret";'
)


def test_no_credentials_when_the_cluster_is_plaintext() -> None:
    assert broker_credentials({"bootstrap.servers": "h:1"}) is None


def test_sasl_credentials_carry_the_jaas_login_when_sasl_plaintext() -> None:
    keys = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": JAAS,
    }
    credentials = broker_credentials(keys)
    assert isinstance(credentials, faust.SASLCredentials)
    assert (credentials.username, credentials.password) == ("agg", "agg-secret")
    assert credentials.mechanism.value == "SCRAM-SHA-512"
    assert credentials.protocol.value == "SASL_PLAINTEXT"
    assert credentials.ssl_context is None


def test_sasl_ssl_credentials_have_a_tls_context_that_checks_host_names() -> None:
    keys = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": JAAS.replace("scram.ScramLoginModule", "plain.PlainLoginModule"),
    }
    credentials = broker_credentials(keys)
    assert isinstance(credentials, faust.SASLCredentials)
    assert credentials.protocol.value == "SASL_SSL"
    assert credentials.ssl_context is not None and credentials.ssl_context.check_hostname


def test_tls_only_gives_ssl_credentials_without_host_check_when_disabled() -> None:
    keys = {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""}
    credentials = broker_credentials(keys)
    assert isinstance(credentials, faust.SSLCredentials)
    assert credentials.context.check_hostname is False

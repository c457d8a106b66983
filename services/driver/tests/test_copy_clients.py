"""What the copy loops' clients are given: the configuration's tuning, and what the copy's
guarantees force whatever it says."""

from __future__ import annotations

import logging

import pytest
from srm_common.config import parse_yaml_text
from srm_driver.copying.clients import (
    REQUEST_OVERHEAD,
    UnitSettings,
    copier_consumer,
    copier_producer,
    sized_for_records,
    sized_for_round_trip,
    unit_settings,
)


def test_the_producer_is_idempotent_with_bounded_writes_and_no_linger_whatever_the_config_says(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        config = copier_producer(
            {
                "bootstrap.servers": "b:9092",
                "max.in.flight.requests.per.connection": "50",
                "enable.idempotence": "false",
                "linger.ms": "50",
                "batch.size": "65536",
                "delivery.timeout.ms": "600000",
            },
            write_timeout_ms=10_000,
        )
    # At most 5 (idempotence keeps a partition's batches in sequence on the broker).
    assert config["max.in.flight.requests.per.connection"] == "5"
    assert config["enable.idempotence"] == "true" and config["acks"] == "all"
    assert config["linger.ms"] == "0", "a lingering batch could leave after the lease ended"
    assert config["delivery.timeout.ms"] == "10000", "the leader waits this out; never longer"
    assert int(config["request.timeout.ms"]) <= 5000
    assert int(config["max.block.ms"]) <= 2500
    assert config["batch.size"] == "65536", "tuning stays the user's"
    assert "linger.ms = 50 is replaced by 0" in caplog.text


def test_connect_defaults_are_replaced_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        copier_producer(
            {"delivery.timeout.ms": str(2**31 - 1), "max.block.ms": str(2**63 - 1)}, 10_000
        )
    assert not caplog.text


def test_the_consumer_never_commits_nor_resets_and_reads_committed() -> None:
    config = copier_consumer(
        {
            "bootstrap.servers": "a:9092",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "true",
            "group.id": "mine",
            "client.id": "x",
            "security.protocol": "SSL",
        }
    )
    assert config["auto.offset.reset"] == "none", "out of range is the driver's decision"
    assert config["enable.auto.commit"] == "false"
    assert "group.id" not in config and "client.id" not in config
    assert config["isolation.level"] == "read_committed"
    assert config["security.protocol"] == "SSL"


def test_isolation_level_from_the_configuration_wins() -> None:
    config = copier_consumer({"isolation.level": "read_uncommitted"})
    assert config["isolation.level"] == "read_uncommitted"


def test_the_copy_loop_waits_srm_idle_wait_ms_for_source_records() -> None:
    config = parse_yaml_text(
        "clusters:\n"
        '  primary: {bootstrap.servers: "127.0.0.1:9"}\n'
        '  backup: {bootstrap.servers: "127.0.0.1:8"}\n'
        "flows:\n  primary->backup: {enabled: true, srm.idle.wait.ms: 250}\n"
    )
    settings = unit_settings(config.flow("primary", "backup"), write_timeout_ms=10_000)
    assert settings.poll_ms == 250 and settings.to_json()["poll_ms"] == 250


def test_the_copy_loop_gets_provider_placeholders_not_secrets(tmp_path, monkeypatch) -> None:
    from srm_common.config import load_config

    secrets = tmp_path / "s.properties"
    secrets.write_text(
        "jaas = org.apache.kafka.common.security.scram.ScramLoginModule required"
        ' username="srm" password="Fr0m-file-pw";\n'
    )
    monkeypatch.setenv("SRM_TEST_COPY_TRUST_PW", "Fr0m-env-pw")
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters = primary, backup\n"
        "primary.bootstrap.servers = 127.0.0.1:9\nbackup.bootstrap.servers = 127.0.0.1:8\n"
        "security.protocol = SASL_SSL\nsasl.mechanism = SCRAM-SHA-512\n"
        f"sasl.jaas.config = ${{file:{secrets}:jaas}}\n"
        "ssl.truststore.location = /t.jks\n"
        "backup.ssl.truststore.password = ${env:SRM_TEST_COPY_TRUST_PW}\n"
        "primary->backup.enabled = true\n"
    )
    flow = load_config(path).flow("primary", "backup")
    assert "Fr0m-file-pw" in flow.source_consumer["sasl.jaas.config"], "Python clients: resolved"
    answer = str(unit_settings(flow, write_timeout_ms=10_000).to_json())
    assert "Fr0m-file-pw" not in answer and "Fr0m-env-pw" not in answer
    settings = unit_settings(flow, write_timeout_ms=10_000)
    assert settings.consumer["sasl.jaas.config"] == f"${{file:{secrets}:jaas}}"
    assert settings.consumer["config.providers"] == "file"
    assert settings.producer["ssl.truststore.password"] == "${env:SRM_TEST_COPY_TRUST_PW}"
    assert settings.producer["config.providers"] == "env,file"
    assert settings.producer["config.providers.env.class"].endswith("EnvVarConfigProvider")


def _settings(**producer: str) -> UnitSettings:
    return UnitSettings(
        consumer=copier_consumer({}),
        producer=copier_producer(producer, write_timeout_ms=10_000),
        origin_header=None,
        copy_header=None,
        source="primary",
        target="backup",
        poll_ms=100,
    )


def test_clients_are_sized_for_the_largest_record_a_source_topic_allows() -> None:
    """A topic allowing 20 MiB batches: requests, fetches and responses carry one, with
    room for the request around it; the rest of the settings stay as they were."""
    settings = _settings()
    sized = sized_for_records(settings, 20 * 1024 * 1024)
    carried = 20 * 1024 * 1024 + REQUEST_OVERHEAD
    assert int(sized.producer["max.request.size"]) == carried
    assert int(sized.consumer["max.partition.fetch.bytes"]) == carried
    assert int(sized.consumer["fetch.max.bytes"]) == carried
    # librdkafka's own limit on a response (100 MB) already carries it
    assert "receive.message.max.bytes" not in sized.consumer
    huge = sized_for_records(settings, 200 * 1024 * 1024)
    fetch = int(huge.consumer["fetch.max.bytes"])
    assert int(huge.consumer["receive.message.max.bytes"]) >= fetch + 512
    assert {k: v for k, v in sized.producer.items() if k != "max.request.size"} == {
        k: v for k, v in settings.producer.items() if k != "max.request.size"
    }


def test_sizes_only_grow_and_what_is_large_enough_is_the_same_settings() -> None:
    """Topics at Kafka's default limit (about 1 MB) need nothing beyond the defaults (the
    very same object comes back, so the slots get no new settings); a larger setting by
    hand is kept; a placeholder is left alone."""
    settings = _settings()
    assert sized_for_records(settings, 1_048_588) is settings
    assert sized_for_records(settings, 0) is settings
    by_hand = _settings(**{"max.request.size": str(64 * 1024 * 1024)})
    sized = sized_for_records(by_hand, 20 * 1024 * 1024)
    assert sized.producer["max.request.size"] == str(64 * 1024 * 1024)
    provided = _settings(**{"max.request.size": "${file:/etc/sizes:request}"})
    sized = sized_for_records(provided, 20 * 1024 * 1024)
    assert sized.producer["max.request.size"] == "${file:/etc/sizes:request}"


def test_fetch_sizes_follow_the_round_trip_past_what_the_defaults_carry() -> None:
    """One fetch in flight per unit and broker: at 256 ms a response carries 256 MiB/s
    and a partition 64 MiB/s; on loopback and up to about 60 ms the defaults carry that
    already, so nothing changes (the same object: the slots get nothing new)."""
    settings = _settings()
    assert sized_for_round_trip(settings, 1) is settings
    assert sized_for_round_trip(settings, 32) is settings
    assert sized_for_round_trip(settings, 0) is settings
    far = sized_for_round_trip(settings, 256)
    assert int(far.consumer["max.partition.fetch.bytes"]) == 64 * 1024 * 1024 * 256 // 1000
    assert int(far.consumer["fetch.max.bytes"]) == 256 * 1024 * 1024 * 256 // 1000
    assert far.producer == settings.producer, "writes stay local: nothing to follow"
    very_far = sized_for_round_trip(settings, 1024)  # a 256 MiB response
    fetch = int(very_far.consumer["fetch.max.bytes"])
    assert int(very_far.consumer["receive.message.max.bytes"]) >= fetch + 512

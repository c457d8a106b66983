"""Secrets from config providers on secured clusters: the stack replicates with the SCRAM
login in a secrets file (``${file:...}``) and the trust store password in the environment
(``${env:...}``), and the copy slots resolve both where they run: the copy channel's
answers carry the placeholders, never the values.

The configuration is MM2's keys; the test's own clients are librdkafka with the harness's
keys (``srm_local.secured``), so the data checked never depends on the product.
"""

from __future__ import annotations

import time
import uuid

import pytest
from srm_harness.clients import consume_all, end_offsets, produce
from srm_harness.compare import count_copy
from srm_harness.processes import CoordinatorProcess, DriverProcess, log_tails
from srm_harness.records import Record
from srm_harness.waits import wait_until
from srm_local.secured import write_mm2_properties

pytestmark = [pytest.mark.integration, pytest.mark.spark]

COUNT = 300
ENV = "SRM_TEST_TRUSTSTORE_PASSWORD"


def test_replicates_when_secrets_come_from_a_file_and_the_environment(
    kafka_secured, tmp_path, unique_name
):  # type: ignore[no-untyped-def]
    primary, backup = kafka_secured["primary"], kafka_secured["backup"]
    secret = f"Pr0vided-{uuid.uuid4().hex[:10]}"
    user = unique_name("prov")[:60]
    secrets = tmp_path / "secrets.properties"
    lines, keys = [], {}
    for cluster in (primary, backup):
        credential = cluster.create_user(user, secret)
        for resource, name in (("topic", "*"), ("group", "*"), ("transactional_id", "*")):
            cluster.allow(credential.principal, resource, name, "ALL")
        cluster.allow(credential.principal, "cluster", "kafka-cluster", "ALL")
        mm2 = cluster.mm2_keys(credential)
        lines.append(f"{cluster.alias}.jaas = {mm2['sasl.jaas.config']}")
        mm2["sasl.jaas.config"] = f"${{file:{secrets}:{cluster.alias}.jaas}}"
        mm2["ssl.truststore.password"] = f"${{env:{ENV}}}"
        keys[cluster.alias] = mm2
    secrets.write_text("\n".join(lines) + "\n")
    secrets.chmod(0o600)
    topic = kafka_secured.create_topic("primary", unique_name("prov"), partitions=2)
    remote = f"primary.{topic}"
    kafka_secured.created.append(("backup", remote))
    records = [Record(f"k{n}".encode(), f"v{n}".encode(), (), None, n % 2) for n in range(COUNT)]
    produce(primary.bootstrap_servers, topic, records, config=primary.client_config())
    prefix = unique_name("prv")
    config = write_mm2_properties(
        tmp_path / "srm.properties",
        keys,
        {
            "primary->backup.enabled": True,
            "primary->backup.topics": topic,
            "backup->primary.enabled": False,
            "replication.factor": 1,
            "heartbeats.topic.replication.factor": 1,
            "checkpoints.topic.replication.factor": 1,
            "offset-syncs.topic.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "refresh.topics.interval.seconds": 2,
            "srm.control.topic.prefix": prefix,
        },
    )
    assert secret not in config.read_text(), "the configuration file holds no secret"
    coordinator = CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--state-file", str(tmp_path / "c1.json")
    )
    driver = DriverProcess(
        config, tmp_path / "d1.log", spark_master="local[1]", args=["--id", "d1"]
    )
    for process in (coordinator, driver):
        process.env[ENV] = primary.tls.password
    driver.env["SPARK_LOCAL_DIRS"] = str(tmp_path / "spark-local")
    logs = log_tails([coordinator, driver], 3000)
    started = time.monotonic()
    try:
        coordinator.start()
        driver.start()
        wait_until(
            lambda: (
                end_offsets(backup.bootstrap_servers, remote, backup.client_config())
                == end_offsets(primary.bootstrap_servers, topic, primary.client_config())
            ),
            300,
            "the copy slots, resolving the placeholders themselves, copy everything",
            step=2,
            detail=logs,
        )
        source = consume_all(primary.bootstrap_servers, topic, client=primary.client_config())
        target = consume_all(backup.bootstrap_servers, remote, client=backup.client_config())
        count = count_copy(source, target)
        print(f"\nreplication with provided secrets ({time.monotonic() - started:.0f} s): {count}")
        assert (count.produced, count.missing, count.duplicated) == (COUNT, 0, 0)
        written = coordinator.log_text() + driver.log_text()
        assert secret not in written and primary.tls.password not in written
    finally:
        driver.stop(60)
        coordinator.stop(30)

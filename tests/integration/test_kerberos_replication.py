"""Replication between two clusters whose clients log in with Kerberos (SASL/GSSAPI).

A real MIT KDC (Debian's krb5-kdc, :mod:`srm_harness.kdc`) and two single-node clusters
with a GSSAPI listener and StandardAuthorizer (:mod:`srm_harness.kerberized`: only the
product's principal ``srm@SRM.LOCAL`` is let in). The stack (a coordinator, a driver
copying in PySpark's workers, the metrics aggregator on Faust and the gateway on aiokafka) is
configured as an MM2 user writes it: ``security.protocol=SASL_PLAINTEXT``,
``sasl.mechanism=GSSAPI``, ``sasl.kerberos.service.name=kafka`` and ``sasl.jaas.config``
with ``Krb5LoginModule``, a keytab and a principal. The test's own clients use the
clusters' PLAINTEXT listener, so the data checked never depends on the product.

Needs ``make kerberos`` (the KDC's packages and the GSSAPI-capable Python clients);
skipped with one line without them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from srm_harness.clients import consume_all, create_topic, end_offsets, list_topics, produce
from srm_harness.compare import content, copied, count_copy
from srm_harness.control import write_config
from srm_harness.kerberized import KerberizedCluster, KerberosPool
from srm_harness.processes import (
    ChildProcess,
    CoordinatorProcess,
    DriverProcess,
    GatewayProcess,
    log_tails,
)
from srm_harness.records import Record
from srm_harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
FIRST, SECOND = 600, 450
SRM_CONTROL = str(Path(sys.executable).parent / "srm-control")


def _unsupported() -> str | None:
    from srm_harness.kdc import DEBIAN_PACKAGES, missing_tools

    missing = missing_tools()
    if missing:
        return (
            f"no MIT KDC here ({', '.join(missing)} missing: Debian's {DEBIAN_PACKAGES});"
            " run `make kerberos` as root"
        )
    from srm_common.adapters.kerberos import missing_support

    return missing_support()


@pytest.fixture(scope="module")
def kerberos() -> Iterator[KerberosPool]:
    why = _unsupported()
    if why is not None:
        pytest.skip(f"Kerberos test skipped: {why}")
    from srm_local.paths import run_dir

    pool = KerberosPool(run_dir() / f"test-{os.getpid()}" / "kerberos")
    try:
        pool.start("primary", "backup")
        yield pool
    finally:
        pool.stop_all()


def _config(
    folder: Path, pool: KerberosPool, flow: Mapping[str, object], **cluster_keys: str | Path
) -> Path:
    """srm.yaml for the pool's clusters as an SRM user writes it for Kerberos (GSSAPI
    listeners, ``mm2_keys``), short intervals so checkpoints and metrics come soon."""
    return write_config(
        folder,
        {alias: cluster.gssapi_bootstrap_servers for alias, cluster in pool.started.items()},
        flows={"primary->backup": {"enabled": True, **flow}, "backup->primary": {"enabled": False}},
        replication={
            "emit.checkpoints.interval.seconds": 1,
            "refresh.groups.interval.seconds": 1,
            "srm.metrics.windows": "2000ms, 10000ms",
            "srm.metrics.grace.ms": 1000,
            "srm.metrics.update.ms": 500,
            "srm.metrics.interval.ms": 1000,
            "srm.control.topic.prefix": f"krb-{uuid.uuid4().hex[:8]}",
        },
        cluster_keys={
            alias: cluster.mm2_keys(**cluster_keys) for alias, cluster in pool.started.items()
        },
    )


def _records(start: int, count: int) -> list[Record]:
    now = int(time.time() * 1000)
    return [
        Record(
            f"k{n}".encode(),
            f"value {n} ".encode() * (1 + n % 7),
            (("seq", str(n).encode()), ("empty", None)),
            now - 1000 + n,
            n % PARTITIONS,
        )
        for n in range(start, start + count)
    ]


def _commit(cluster: KerberizedCluster, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        consumer.commit(
            offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()


def _checkpoints(backup: KerberizedCluster, group: str) -> dict[tuple[str, int], tuple[int, int]]:
    from srm_common.domain.records import Checkpoint

    found: dict[tuple[str, int], tuple[int, int]] = {}
    topic = "primary.checkpoints.internal"
    if topic not in list_topics(backup.bootstrap_servers):
        return found
    for partition in consume_all(backup.bootstrap_servers, topic).values():
        for record in partition:
            checkpoint = Checkpoint.decode(record.key, record.value)
            if checkpoint.consumer_group_id == group:
                key = (checkpoint.topic, checkpoint.partition)
                found[key] = (checkpoint.upstream_offset, checkpoint.downstream_offset)
    return found


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except (urllib.error.URLError, OSError):
        return 0


def _srm_control(
    config: Path, env: Mapping[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SRM_CONTROL, "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env={**os.environ, **env},
    )


def test_replicates_with_kerberos_logins(kerberos, tmp_path, unique_name):  # type: ignore[no-untyped-def]
    primary, backup = kerberos.started["primary"], kerberos.started["backup"]
    topic = unique_name("orders")
    create_topic(primary.bootstrap_servers, topic, partitions=PARTITIONS)
    remote = f"primary.{topic}"
    produce(primary.bootstrap_servers, topic, _records(0, FIRST))
    group = unique_name("app")
    commits = {(topic, p): 50 + 20 * p for p in range(PARTITIONS)}
    _commit(primary, group, commits)

    config = _config(tmp_path, kerberos, {"topics": [topic], "groups": [group]})
    env = kerberos.env()
    coordinator = CoordinatorProcess(
        config, tmp_path / "coordinator.log", "c1", "--state-file", str(tmp_path / "c1.json")
    )
    driver = DriverProcess(
        config, tmp_path / "d1.log", spark_master="local[1]", args=["--id", "d1"]
    )
    driver.env["SPARK_LOCAL_DIRS"] = str(tmp_path / "spark-local")
    aggregator = ChildProcess(
        "srm_metrics_aggregator",
        ["--config", str(config), "--cluster", "backup", "--data-dir", str(tmp_path / "faust")],
        tmp_path / "aggregator.log",
    )
    gateway = GatewayProcess(
        config, tmp_path / "gateway.log", f"sqlite:///{tmp_path / 'gateway.db'}"
    )
    services = [coordinator, driver, aggregator, gateway]
    for service in services:
        service.env.update(env)
    logs = log_tails(services, 3000)
    try:
        for service in services:
            service.start()
        wait_until(
            lambda: sum(end_offsets(backup.bootstrap_servers, remote).values()) > 0,
            300,
            "the driver copies into the remote topic",
            step=2,
            detail=logs,
        )
        produce(primary.bootstrap_servers, topic, _records(FIRST, SECOND))
        wait_until(
            lambda: copied(primary.bootstrap_servers, topic, backup.bootstrap_servers, remote),
            180,
            "the copy catches up",
            step=1,
            detail=logs,
        )
        source = consume_all(primary.bootstrap_servers, topic)
        target = consume_all(backup.bootstrap_servers, remote, isolation_level="read_uncommitted")
        count = count_copy(source, target)
        print(f"\nKerberos replication (SASL_PLAINTEXT, GSSAPI, StandardAuthorizer): {count}")
        assert count.produced == FIRST + SECOND
        assert (count.missing, count.duplicated) == (0, 0)
        for partition in range(PARTITIONS):
            assert content(target[partition]) == content(source[partition])

        expected = {(f"primary.{t}", p): o for (t, p), o in commits.items()}
        wait_until(
            lambda: {k: up for k, (up, _down) in _checkpoints(backup, group).items()} == expected,
            120,
            "checkpoints of the group",
            detail=logs,
        )
        translated = _checkpoints(backup, group)
        print(f"checkpoints of {group}: (upstream, downstream) {sorted(translated.items())}")
        for upstream, downstream in translated.values():
            assert 0 <= downstream <= upstream

        aggregated = "srm-metrics-aggregated.internal"
        wait_until(
            lambda: sum(end_offsets(backup.bootstrap_servers, aggregated).values()) > 0,
            120,
            "aggregated metrics on backup (the aggregator, Faust, logged in with Kerberos)",
            detail=logs,
        )
        gateway_url = gateway.url()
        assert gateway_url is not None, gateway.log_text()[-2000:]
        wait_until(lambda: _get(f"{gateway_url}/v2/replications") == 200, 60, "the gateway answers")
        listed = _srm_control(
            config, env, "topics", "--source", "primary", "--target", "backup", "--list"
        )
        assert listed.returncode == 0, listed.stderr
        print(f"srm-control topics --list (Kerberos login): {listed.stdout.strip()}")
    finally:
        for service in reversed(services):
            if service.alive():
                service.stop()
    for service in services:
        assert "Traceback" not in service.log_text(), service.log_path.name
    principal = primary.principal
    print(
        f"every service logged in as {principal}; the brokers' authorizer lets only"
        f" User:{principal.split('@')[0]} in on the GSSAPI listener"
    )


def test_a_wrong_keytab_is_one_line_at_start(kerberos, tmp_path):  # type: ignore[no-untyped-def]
    """A keytab whose key the KDC no longer has (a key rotated since it was exported)."""
    kerberos.kdc.add_principal("srm-rotated")
    stale = kerberos.kdc.stale_keytab("srm-rotated")
    principal = kerberos.kdc.principal("srm-rotated")
    config = _config(tmp_path, kerberos, {"topics": ["orders"]}, principal=principal, keytab=stale)
    done = _srm_control(
        config, kerberos.env(), "topics", "--source", "primary", "--target", "backup", "--list"
    )
    lines = done.stderr.strip().splitlines()
    print(f"\nsrm-control with a stale keytab: exit {done.returncode}: {done.stderr.strip()}")
    assert done.returncode != 0
    assert len(lines) == 1, done.stderr
    assert f"Kerberos login as {principal} (keytab {stale}) failed" in lines[0]
    assert "Traceback" not in done.stderr

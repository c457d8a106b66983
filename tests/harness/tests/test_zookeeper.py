"""The ZooKeeper-mode test cluster's files (no process started: the cluster itself runs in
tests/integration/test_older_clusters.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_harness.zookeeper import ZooKeeperKafkaCluster
from srm_local.clusters import ClusterSpec, _listener_port
from srm_local.secured import ClusterSecurity, Credential
from srm_local.tls_files import TlsFiles


def test_broker_properties_point_at_its_zookeeper(tmp_path: Path) -> None:
    cluster = ZooKeeperKafkaCluster(
        ClusterSpec("kafka-3.6-zk", 9501, version="3.6.2"), tmp_path / "zk"
    )
    cluster._write_files()
    path = tmp_path / "zk" / "server.properties"
    lines = set(path.read_text().splitlines())
    assert {
        "broker.id=1",
        "listeners=PLAINTEXT://127.0.0.1:9501",
        "zookeeper.connect=127.0.0.1:9502",  # the pair's second port is ZooKeeper's
        "auto.create.topics.enable=false",
    } <= lines
    assert not any(line.startswith(("process.roles", "controller.")) for line in lines)
    assert _listener_port(path) == 9501  # `make down` finds it like a KRaft one
    assert cluster.zookeeper.port == 9502
    assert cluster.zookeeper.folder == tmp_path / "zk" / "zookeeper"
    assert cluster.stop() is False  # nothing started, nothing to stop


def test_secured_zookeeper_mode_is_refused(tmp_path: Path) -> None:
    security = ClusterSecurity(
        tls=TlsFiles(Path("/tls"), "pw"),
        admin=Credential("admin", "admin-pw"),
        ssl_port=9603,
        sasl_plaintext_port=9604,
    )
    with pytest.raises(ValueError, match="plaintext only"):
        ZooKeeperKafkaCluster(ClusterSpec("zk", 9601, security=security), tmp_path)

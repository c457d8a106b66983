"""The local KRaft clusters and Kafka's tools, as `make kafka-up` and the fixtures use them."""

from __future__ import annotations

import socket

import pytest
from srm_harness.clients import list_topics
from srm_local.clusters import ClusterSpec, ClusterStartError, LocalKafkaCluster, find_clusters
from srm_local.ports import free_port_pair
from srm_local.tools import run_tool

pytestmark = pytest.mark.integration


def test_cluster_starts_keeps_topics_across_restart_and_stops_without_leftovers(tmp_path):
    port = free_port_pair()
    cluster = LocalKafkaCluster(ClusterSpec("lifecycle", port), tmp_path / "kafka" / "lifecycle")
    try:
        seconds = cluster.start()
        assert seconds > 0 and cluster.is_running(), "start() returns once the broker answers"
        run_tool(
            "kafka-topics",
            [
                "--bootstrap-server",
                cluster.bootstrap_servers,
                "--create",
                "--topic",
                "kept",
                "--partitions",
                "3",
            ],
        )
        pid = cluster.pid()
        assert cluster.stop() and not cluster.is_running()
        assert not _pid_alive(pid), f"broker pid {pid} still alive after stop()"

        cluster.start()
        assert "kept" in list_topics(cluster.bootstrap_servers), "data must survive a restart"
        found = [(c.alias, c.bootstrap_servers, c.is_running()) for c in find_clusters(tmp_path)]
        assert found == [("lifecycle", f"127.0.0.1:{port}", True)], (
            f"`make down` must find the running cluster from its run folder, found {found}"
        )
    finally:
        cluster.stop()
    assert not cluster.pid_file.exists(), "stop() removes the pid file"


def test_start_fails_with_a_clear_message_when_the_port_is_taken(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        cluster = LocalKafkaCluster(ClusterSpec("busy", port), tmp_path / "busy")
        with pytest.raises(ClusterStartError, match=f"port {port} on 127.0.0.1 is already in use"):
            cluster.start()
    assert not cluster.is_running()


def test_kafka_tools_run_from_the_cache_when_given_bootstrap_servers(kafka, unique_name):
    topic = kafka.create_topic("primary", unique_name("tools"), partitions=2)
    described = run_tool(
        "kafka-topics", ["--bootstrap-server", kafka["primary"], "--describe", "--topic", topic]
    )
    assert f"Topic: {topic}" in described.stdout and "PartitionCount: 2" in described.stdout, (
        described.stdout + described.stderr
    )
    perf = run_tool(
        "kafka-producer-perf-test",
        [
            "--topic",
            topic,
            "--num-records",
            "1000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={kafka['primary']}",
        ],
    )
    assert "1000 records sent" in perf.stdout, perf.stdout + perf.stderr


def _pid_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False

"""The benchmark's two clusters: ``primary`` (holds the data set) and ``backup`` (target).

Both are single-node KRaft clusters under ``.run/bench-<timestamp>/kafka/``. The target
is wiped and restarted before every measurement, so each one starts from an identical
empty cluster: no remote or internal topics, groups or pending log deletions left by
the previous one. The source keeps the data set (and its page cache) for all of them.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from srm_local.clusters import DEFAULT_HEAP, ClusterSpec, LocalKafkaCluster, start_clusters
from srm_local.ports import free_port_pair, free_ports

from srm_bench.nodes import NodeGroup
from srm_bench.toxiproxy import stop_orphan

SOURCE = "primary"
TARGET = "backup"

# Deleted topics go away after 1 s instead of 60 s, so a clean-up's disk work does not
# land in the middle of the next measurement.
BROKER_PROPERTIES = {"file.delete.delay.ms": "1000"}


class BenchStack:
    """Source and target clusters of one benchmark run."""

    def __init__(
        self, folder: Path, heap: str | None = None, *, wan: bool = False, brokers: int = 1
    ) -> None:
        self.folder = folder
        # --wan: the source has a second listener, WAN, that advertises the port of the
        # proxy in front of it (wan_ports: the broker's WAN port, the proxy's port).
        self.wan_ports = tuple(free_ports(2)) if wan else None
        self.source = _cluster(SOURCE, folder, heap, self.wan_ports, brokers)
        self.target = _cluster(TARGET, folder, heap, brokers=brokers)

    @property
    def source_wan_bootstrap(self) -> str:
        """The source as a replicator across the WAN sees it: through the proxy, whose
        listener every broker advertises, so metadata redirects stay behind it too."""
        assert self.wan_ports is not None
        return f"{self.source.spec.host}:{self.wan_ports[1]}"

    def start(self) -> None:
        for cluster in (self.source, self.target):
            _wipe(cluster)
        start_clusters([self.source, self.target])

    def reset_target(self) -> float:
        """Stop the target, wipe its data and start it again; returns the seconds taken."""
        started = time.monotonic()
        self.target.stop()
        _wipe(self.target)
        self.target.start()
        return time.monotonic() - started

    def stop(self, *, keep_data: bool) -> None:
        for cluster in (self.source, self.target):
            cluster.stop()
            nodes = cluster.nodes if isinstance(cluster, NodeGroup) else [cluster]
            for node in nodes if not keep_data else ():
                shutil.rmtree(node.folder / "data", ignore_errors=True)

    def source_admin(self) -> AdminClient:
        return admin_client(self.source.bootstrap_servers)

    def target_admin(self) -> AdminClient:
        return admin_client(self.target.bootstrap_servers)


def admin_client(bootstrap: str) -> AdminClient:
    # librdkafka logs every refused connection (the target restarts between
    # measurements); failures that matter surface as exceptions.
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})


def create_topic(admin: AdminClient, name: str, partitions: int, timeout: float = 30) -> None:
    """Create ``name`` and wait until its metadata shows every partition."""
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout)
    wait_for_topic(admin, name, partitions, timeout)


def wait_for_topic(admin: AdminClient, name: str, partitions: int, timeout: float) -> bool:
    """True once ``name`` has ``partitions`` partitions, False after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        topic = admin.list_topics(name, timeout=5).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            return True
        time.sleep(0.2)
    return False


def delete_topics_except(admin: AdminClient, keep: set[str], timeout: float = 60) -> list[str]:
    """Delete every topic but ``keep`` and Kafka's own (``__*``); wait until gone."""
    doomed = [
        name
        for name in admin.list_topics(timeout=10).topics
        if name not in keep and name[:2] != "__"
    ]
    if not doomed:
        return []
    for future in admin.delete_topics(doomed, operation_timeout=timeout).values():
        future.result(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = set(admin.list_topics(timeout=10).topics) & set(doomed)
        if not left:
            time.sleep(2)  # file.delete.delay.ms plus the deletion itself
            return doomed
        time.sleep(0.2)
    raise TimeoutError(f"topics {sorted(doomed)} were still listed after {timeout:.0f} s")


def delete_consumer_groups(admin: AdminClient, timeout: float = 30) -> list[str]:
    """Delete every consumer group (the raw consumer's, a replicator's), so none is
    checkpointed by the next replicator."""
    listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout)
    groups = [group.group_id for group in listed.valid]
    if groups:
        for future in admin.delete_consumer_groups(groups, request_timeout=timeout).values():
            future.result(timeout)
    return groups


def stop_orphaned_stacks(run_root: Path) -> list[str]:
    """Stop clusters of earlier bench runs whose bench process is gone (killed runs)."""
    stopped = []
    for folder in sorted(run_root.glob("bench-*")):
        owner = folder / "bench.pid"
        if not owner.exists() or _is_alive(owner.read_text().strip()):
            continue
        if stop_orphan(folder):  # a WAN run's proxy
            stopped.append(str(folder / "toxiproxy"))
        for pid_file in (pid for where in _NODE_FOLDERS for pid in folder.glob(where)):
            cluster = LocalKafkaCluster(ClusterSpec(pid_file.parent.name, 0), pid_file.parent)
            if cluster.stop():  # (only a process running that folder's server.properties)
                stopped.append(str(pid_file.parent))
    return stopped


# Where a run's brokers keep their pid files: make bench's clusters, bench-scale's per
# point (p<N>), and the nodes of clusters of several brokers (srm_bench.nodes).
_NODE_FOLDERS = (
    "kafka/*/kafka.pid",
    "kafka/*/node*/kafka.pid",
    "p*/kafka/*/kafka.pid",
    "p*/kafka/*/node*/kafka.pid",
)


def _wipe(cluster: LocalKafkaCluster) -> None:
    """An empty cluster folder: the next start formats fresh storage."""
    shutil.rmtree(cluster.folder, ignore_errors=True)
    cluster.folder.mkdir(parents=True)


def _cluster(
    alias: str,
    folder: Path,
    heap: str | None,
    wan_ports: tuple[int, ...] | None = None,
    brokers: int = 1,
) -> LocalKafkaCluster | NodeGroup:
    if brokers > 1:  # (--brokers is refused with --wan: srm_bench.options)
        return NodeGroup(alias, folder / "kafka" / alias, heap or DEFAULT_HEAP, brokers,
                         BROKER_PROPERTIES)  # fmt: skip
    port = free_port_pair()
    properties = dict(BROKER_PROPERTIES)
    if wan_ports is not None:
        properties.update(wan_listener_properties("127.0.0.1", port, *wan_ports))
    spec = ClusterSpec(alias, port, properties=properties)
    if heap is None:
        return LocalKafkaCluster(spec, folder / "kafka" / alias)
    return LocalKafkaCluster(spec, folder / "kafka" / alias, heap=heap)


def wan_listener_properties(host: str, port: int, wan_port: int, proxy_port: int) -> dict[str, str]:
    """A broker's listeners with a WAN listener on ``wan_port`` that advertises
    ``proxy_port`` (the proxy forwards there); PLAINTEXT stays the direct one, for the
    bench's own clients and the broker itself."""
    return {
        "listeners": f"PLAINTEXT://{host}:{port},WAN://{host}:{wan_port},"
        f"CONTROLLER://{host}:{port + 1}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port},WAN://{host}:{proxy_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,WAN:PLAINTEXT,CONTROLLER:PLAINTEXT",
    }


def _is_alive(pid_text: str) -> bool:
    try:
        os.kill(int(pid_text), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True

"""Bench clusters of several brokers (``make bench-scale --brokers N``).

Each broker keeps one open file and two memory maps per partition it holds, and this host
lets a process open at most 20,000 files (docs/benchmark.md, "Scale"): 30,000 partitions
fit only when a cluster spreads them over brokers. A :class:`NodeGroup` is one KRaft node
that is broker and controller (the single-node cluster of every other bench and test) and
``N - 1`` broker-only nodes that join its quorum, each a JVM of its own with its own ports
and folder. It answers where the bench uses a cluster: ``alias``, ``spec`` (the first
node's), ``folder``, ``bootstrap_servers`` (every node), ``start`` and ``stop``. Topics of
replication factor 1 spread their partitions over the brokers, as Kafka places them.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from srm_local.clusters import ClusterSpec, LocalKafkaCluster, start_clusters
from srm_local.ports import free_port_pair


class BrokerNode(LocalKafkaCluster):
    """A broker-only node (``node.id`` 2 and on) of ``controller``'s cluster."""

    def __init__(
        self,
        spec: ClusterSpec,
        folder: Path,
        heap: str,
        *,
        node_id: int,
        controller: LocalKafkaCluster,
    ) -> None:
        super().__init__(spec, folder, heap)
        self.node_id = node_id
        self.controller = controller

    def _mode_properties(self) -> dict[str, str]:
        host, port = self.spec.host, self.spec.port
        quorum = self.controller.spec
        return {
            "process.roles": "broker",
            "node.id": str(self.node_id),
            "listeners": f"PLAINTEXT://{host}:{port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.quorum.voters": f"1@{quorum.host}:{quorum.quorum_port}",
        }

    def _format_storage(self) -> None:
        """Formatted with the controller's cluster id (a node of another id is refused)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.controller.folder / "cluster.id", self.folder / "cluster.id")
        super()._format_storage()


class NodeGroup:
    """One cluster of ``count`` brokers; see the module docstring."""

    def __init__(
        self,
        alias: str,
        folder: Path,
        heap: str,
        count: int,
        properties: Mapping[str, str],
    ) -> None:
        if count < 2:
            raise ValueError("a node group has at least two brokers (one is a plain cluster)")
        self.folder = folder
        first = LocalKafkaCluster(
            ClusterSpec(alias, free_port_pair(), properties=properties), folder / "node1", heap
        )
        self.nodes: list[LocalKafkaCluster] = [first]
        for node_id in range(2, count + 1):
            spec = ClusterSpec(f"{alias}-{node_id}", free_port_pair(), properties=properties)
            self.nodes.append(
                BrokerNode(spec, folder / f"node{node_id}", heap, node_id=node_id, controller=first)
            )

    @property
    def alias(self) -> str:
        return self.nodes[0].alias

    @property
    def spec(self) -> ClusterSpec:
        return self.nodes[0].spec

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.bootstrap_servers for node in self.nodes)

    def start(self, *, timeout: float = 90.0, fresh: bool = False) -> float:
        """The controller node first (it formats the cluster id the others take), then the
        brokers side by side; seconds until all answered."""
        started = time.monotonic()
        self.nodes[0].start(timeout=timeout, fresh=fresh)
        start_clusters(self.nodes[1:], timeout=timeout, fresh=fresh)
        return time.monotonic() - started

    def stop(self, *, timeout: float = 30.0) -> bool:
        """The brokers, then the controller (a broker stopping after its controller waits
        out its controlled shutdown)."""
        stopped = [node.stop(timeout=timeout) for node in self.nodes[1:]]
        return self.nodes[0].stop(timeout=timeout) or any(stopped)

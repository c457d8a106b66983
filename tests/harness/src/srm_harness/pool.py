"""Clusters under test: a lazily started pool of local single-node Kafka clusters by alias
(the session's ``kafka`` fixture, older Kafka versions, ZooKeeper mode).

Environment:
    SRM_TEST_<ALIAS>_BOOTSTRAP  use an existing cluster for that alias instead of starting
                                one (e.g. SRM_TEST_PRIMARY_BOOTSTRAP=broker1:9092)
    SRM_TEST_RUN_DIR            where started clusters keep data (default .run/test-<pid>)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from srm_local.clusters import ClusterSpec, ClusterStartError, LocalKafkaCluster, start_clusters
from srm_local.paths import run_dir
from srm_local.ports import free_port_pair

from srm_harness.zookeeper import ZooKeeperKafkaCluster

START_ATTEMPTS = 3


OLDER_KAFKA: Mapping[str, str] = {
    "kafka-3.9": "3.9.1",
    "kafka-3.6": "3.6.2",
    "kafka-3.6-zk": "3.6.2",
}
"""Aliases of older single-node clusters a test may ask the pool for, and their Kafka
versions (jars fetched with Maven the first time one is asked for): docs/compatibility.md."""


ZOOKEEPER_MODE: frozenset[str] = frozenset({"kafka-3.6-zk"})
"""Those of OLDER_KAFKA that keep their metadata in ZooKeeper (the others run KRaft)."""


@dataclass
class ClusterPool:
    """Clusters by alias, started on first use and stopped together at the end."""

    folder: Path = field(default_factory=lambda: run_dir() / f"test-{os.getpid()}")
    started: dict[str, LocalKafkaCluster] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def bootstrap(self, *aliases: str) -> dict[str, str]:
        """Bootstrap servers per alias, starting (in parallel) those not yet running."""
        with self._lock:
            missing = [a for a in aliases if a not in self.started and not _external(a)]
            if missing:
                started = time.monotonic()
                clusters = start_on_fresh_ports(
                    lambda: [
                        (ZooKeeperKafkaCluster if alias in ZOOKEEPER_MODE else LocalKafkaCluster)(
                            ClusterSpec(alias, free_port_pair(), version=OLDER_KAFKA.get(alias)),
                            self.folder / "kafka" / alias,
                        )
                        for alias in missing
                    ],
                    self.timings,
                )
                self.timings["+".join(missing)] = time.monotonic() - started
                self.started.update({c.alias: c for c in clusters})
        return {a: _external(a) or self.started[a].bootstrap_servers for a in aliases}

    def stop_all(self) -> None:
        for cluster in self.started.values():
            cluster.stop()
        self.started.clear()


def start_on_fresh_ports(
    make: Callable[[], list[LocalKafkaCluster]],
    timings: dict[str, float],
    attempts: int = START_ATTEMPTS,
) -> list[LocalKafkaCluster]:
    """Start the clusters ``make`` builds, in parallel, adding seconds to ready per alias
    to ``timings``. When one cannot start, all are stopped and ``make`` builds them again
    (new ports, fresh data), up to ``attempts`` times: ports are probed free, then bound
    by the JVM seconds later, and another process may take one in between."""
    for attempt in range(1, attempts + 1):
        clusters = make()
        try:
            timings.update(start_clusters(clusters, fresh=True))
            return clusters
        except ClusterStartError:
            for cluster in clusters:
                cluster.stop()
            if attempt == attempts:
                raise
    raise ValueError(f"attempts must be at least 1, not {attempts}")


def _external(alias: str) -> str | None:
    return os.environ.get(f"SRM_TEST_{alias.upper()}_BOOTSTRAP") or None

"""A ZooKeeper-mode Kafka cluster for compatibility tests: one ZooKeeper server and one
broker with ``zookeeper.connect`` (Kafka 3.x can still keep its metadata in ZooKeeper
instead of KRaft).

:class:`ZooKeeperKafkaCluster` is a :class:`srm_local.clusters.LocalKafkaCluster` whose
controller port is the ZooKeeper server's client port; starting it starts the server
first, stopping it stops the broker, then the server. The server is
``ZooKeeperServerMain`` from the jars of the broker's version (ZooKeeper 3.8.4 for Kafka
3.6), in the cluster's folder::

    <cluster folder>/zookeeper/
        zoo.cfg        loopback client port, no admin server
        data/          snapshots and transaction logs
        logs/          server.log, console.log
        zookeeper.pid
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from srm_local.clusters import (
    DEFAULT_HEAP,
    ClusterSpec,
    ClusterStartError,
    LocalKafkaCluster,
)
from srm_local.jars import kafka_classpath
from srm_local.ports import port_open
from srm_local.processes import log_tails, pid_running_with, stop_process


class ZooKeeperKafkaCluster(LocalKafkaCluster):
    """A broker in ZooKeeper mode and its own ZooKeeper server; see the module docstring."""

    def __init__(self, spec: ClusterSpec, folder: Path, heap: str = DEFAULT_HEAP) -> None:
        if spec.security is not None:
            raise ValueError("a ZooKeeper-mode test cluster runs plaintext only")
        super().__init__(spec, folder, heap)
        self.zookeeper = LocalZooKeeper(
            folder / "zookeeper", spec.host, spec.quorum_port, spec.version
        )

    def stop(self, *, timeout: float = 30.0) -> bool:
        stopped = super().stop(timeout=timeout)  # the broker first: it deregisters in ZK
        return self.zookeeper.stop() or stopped

    def _before_launch(self) -> None:
        self.zookeeper.start()

    def _format_storage(self) -> None:
        """Nothing to format: a ZooKeeper-mode broker makes its log dirs itself."""

    def _mode_properties(self) -> dict[str, str]:
        host, port = self.spec.host, self.spec.port
        return {
            "broker.id": "1",
            "listeners": f"PLAINTEXT://{host}:{port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "zookeeper.connect": f"{host}:{self.spec.quorum_port}",
            "zookeeper.connection.timeout.ms": "30000",
        }


class LocalZooKeeper:
    """One standalone ZooKeeper server on ``host:port``; see the module docstring."""

    def __init__(self, folder: Path, host: str, port: int, version: str | None) -> None:
        self.folder = folder
        self.host = host
        self.port = port
        self.version = version

    @property
    def pid_file(self) -> Path:
        return self.folder / "zookeeper.pid"

    @property
    def config(self) -> Path:
        return self.folder / "zoo.cfg"

    def pid(self) -> int | None:
        """The server's pid if it runs from this folder (stale pid files are ignored)."""
        return pid_running_with(self.pid_file, self.config)

    def start(self, *, timeout: float = 60.0) -> None:
        """Start the server and wait until its client port accepts connections."""
        if self.pid() is not None:
            return
        for sub in ("data", "logs"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        self.config.write_text(
            f"dataDir={self.folder / 'data'}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            "tickTime=2000\n"  # sessions up to 40 s: a loaded machine does not expire them
            "maxClientCnxns=0\n"
            "admin.enableServer=false\n"  # else it takes port 8080
        )
        logs = self.folder / "logs"
        (self.folder / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, server\n"
            "log4j.appender.server=org.apache.log4j.FileAppender\n"
            f"log4j.appender.server.File={logs / 'server.log'}\n"
            "log4j.appender.server.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.server.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        )
        with (logs / "console.log").open("ab") as console:
            process = subprocess.Popen(
                [
                    "java",
                    "-Xmx256m",
                    "-Djava.awt.headless=true",
                    f"-Dlog4j.configuration=file:{self.folder / 'log4j.properties'}",
                    "-cp",
                    kafka_classpath(self.version),
                    "org.apache.zookeeper.server.ZooKeeperServerMain",
                    str(self.config),
                ],
                stdout=console,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # stopped by our launcher, like the brokers
            )
        self.pid_file.write_text(f"{process.pid}\n")
        deadline = time.monotonic() + timeout
        while not port_open(self.host, self.port):
            if process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                why = (
                    f"exited with code {process.returncode}"
                    if process.returncode is not None
                    else f"no answer on {self.host}:{self.port} after {timeout:.0f} s"
                )
                raise ClusterStartError(f"ZooKeeper {why}\n{self.log_tail()}")
            time.sleep(0.2)

    def stop(self, *, timeout: float = 15.0) -> bool:
        """SIGTERM, SIGKILL after ``timeout``; True when a running server was stopped."""
        return stop_process(self.pid(), self.pid_file, timeout)

    def log_tail(self, lines: int = 20) -> str:
        logs = self.folder / "logs"
        return log_tails((logs / "console.log", logs / "server.log"), lines)

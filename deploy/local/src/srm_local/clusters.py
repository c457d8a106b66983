"""Single-node Apache Kafka clusters in KRaft mode, run as local JVM processes.

Each cluster is one JVM acting as broker and controller on loopback, with its own
ports, cluster id and run folder::

    <run dir>/kafka/<alias>/
        server.properties   generated from the spec below
        log4j2.properties   broker logs go to logs/server.log
        data/               the log dirs (kept across restarts unless fresh=True)
        logs/               server.log, console.log
        kafka.pid           written at start, removed at stop

Two of these on one machine are two independent clusters, which is exactly what
replication needs. ``start`` returns once an admin client can list topics.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from srm_local.errors import ClusterSpecError, ClusterStartError
from srm_local.jars import kafka_classpath
from srm_local.ports import port_open
from srm_local.processes import log_tails, pid_running_with, stop_process

DEFAULT_HEAP = os.environ.get("SRM_KAFKA_HEAP", "768m")


# Broker settings for a single node: replication factor 1 everywhere, fast group joins,
# few internal partitions (start-up time), and no auto-created topics, so a replicator
# bug cannot hide behind a topic the broker made up.
SINGLE_NODE_PROPERTIES: Mapping[str, str] = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "5",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
}


_LOG4J2 = """\
status = warn
appender.server.type = File
appender.server.name = server
appender.server.fileName = ${sys:kafka.logs.dir}/server.log
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.server.ref = server
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
"""


# Kafka 3.x logs through Log4j 1 (reload4j): the same file, the same pattern.
_LOG4J1 = """\
log4j.rootLogger=INFO, server
log4j.appender.server=org.apache.log4j.FileAppender
log4j.appender.server.File=${kafka.logs.dir}/server.log
log4j.appender.server.layout=org.apache.log4j.PatternLayout
log4j.appender.server.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


def parse_cluster_spec(text: str) -> ClusterSpec:
    """``"dr=9292"`` -> ClusterSpec("dr", 9292); ClusterSpecError with an example if not."""
    alias, sep, port = text.partition("=")
    if not sep or not alias or not port.isdigit() or not 1024 <= int(port) < 65535:
        raise ClusterSpecError(f"'{text}' is not ALIAS=PORT (for example dr=9292, port 1024-65534)")
    return ClusterSpec(alias, int(port))


class BrokerSecurity(Protocol):
    """What a cluster needs of its security (:class:`srm_local.secured.ClusterSecurity`):
    declared here so that this module does not import the one that builds on it."""

    ssl_port: int
    sasl_plaintext_port: int

    def broker_properties(self, host: str, port: int, controller_port: int) -> dict[str, str]:
        """server.properties entries replacing the plaintext listeners."""
        ...

    def format_arguments(self) -> list[str]:
        """``kafka-storage format`` arguments (SCRAM users)."""
        ...

    def client_config(self, bootstrap: str) -> dict[str, str]:
        """librdkafka keys of the admin client."""
        ...


@dataclass(frozen=True)
class ClusterSpec:
    """What a local cluster is: its alias and loopback ports."""

    alias: str
    port: int
    controller_port: int | None = None
    host: str = "127.0.0.1"
    properties: Mapping[str, str] = field(default_factory=dict)
    # SASL_SSL, mutual TLS and an authorizer (srm_local.secured); None: plaintext.
    security: BrokerSecurity | None = None
    # An older Kafka (3.x, KRaft) for compatibility tests; None: the pom's (4.1).
    version: str | None = None
    # More JVM options for the broker (the test harness's Kerberized clusters: krb5.conf).
    jvm_options: tuple[str, ...] = ()

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def quorum_port(self) -> int:
        return self.controller_port if self.controller_port is not None else self.port + 1


class LocalKafkaCluster:
    """One KRaft node (broker + controller) in its own JVM; see the module docstring."""

    def __init__(self, spec: ClusterSpec, folder: Path, heap: str = DEFAULT_HEAP) -> None:
        self.spec = spec
        self.folder = folder
        self.heap = heap
        self.startup_seconds: float | None = None

    @property
    def alias(self) -> str:
        return self.spec.alias

    @property
    def bootstrap_servers(self) -> str:
        return self.spec.bootstrap_servers

    @property
    def pid_file(self) -> Path:
        return self.folder / "kafka.pid"

    @property
    def server_log(self) -> Path:
        return self.folder / "logs" / "server.log"

    def pid(self) -> int | None:
        """The broker's pid if it runs from this folder (stale pid files are ignored)."""
        return pid_running_with(self.pid_file, self._properties_path())

    def is_running(self) -> bool:
        return self.pid() is not None

    def start(self, *, timeout: float = 90.0, fresh: bool = False) -> float:
        """Start the node (or adopt the one already running) and wait until it answers.

        Returns the seconds from launch until the cluster answered.
        """
        started = time.monotonic()
        if self.is_running():
            wait_until_answering(
                self.bootstrap_servers, timeout, process=None, client=self._client_config()
            )
            self.startup_seconds = time.monotonic() - started
            return self.startup_seconds
        security = self.spec.security
        extra = () if security is None else (security.ssl_port, security.sasl_plaintext_port)
        for port in (self.spec.port, self.spec.quorum_port, *extra):
            if port_open(self.spec.host, port):
                raise ClusterStartError(
                    f"cluster '{self.alias}': port {port} on {self.spec.host} is already in use"
                    " by another process; stop it or choose other ports"
                    f" (SRM_{self.alias.upper()}_PORT)"
                )
        if fresh and self.folder.exists():
            shutil.rmtree(self.folder)
        self._write_files()
        self._before_launch()
        if not (self.folder / "data" / "meta.properties").exists():
            self._format_storage()
        console = (self.folder / "logs" / "console.log").open("ab")
        process = subprocess.Popen(
            [
                "java",
                f"-Xmx{self.heap}",
                "-Xms256m",
                "-XX:+UseG1GC",
                "-Djava.awt.headless=true",
                f"-Dkafka.logs.dir={self.folder / 'logs'}",
                *self._log_options(),
                *self.spec.jvm_options,
                "-cp",
                kafka_classpath(self.spec.version),
                "kafka.Kafka",
                str(self._properties_path()),
            ],
            stdout=console,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches our launcher, which stops brokers cleanly
        )
        console.close()
        self.pid_file.write_text(f"{process.pid}\n")
        try:
            wait_until_answering(
                self.bootstrap_servers, timeout, process=process, client=self._client_config()
            )
        except ClusterStartError as exc:
            self.stop()
            raise ClusterStartError(f"cluster '{self.alias}': {exc}\n{self._log_tail()}") from exc
        self.startup_seconds = time.monotonic() - started
        return self.startup_seconds

    def stop(self, *, timeout: float = 30.0) -> bool:
        """Stop the node: SIGTERM (controlled shutdown), SIGKILL after ``timeout``.

        Returns True when a running process was stopped.
        """
        return stop_process(self.pid(), self.pid_file, timeout)

    def _properties_path(self) -> Path:
        return self.folder / "server.properties"

    def _client_config(self) -> dict[str, str] | None:
        """What an admin client needs beyond bootstrap.servers (None: plaintext)."""
        security = self.spec.security
        return None if security is None else security.client_config(self.bootstrap_servers)

    def _before_launch(self) -> None:
        """What must run before the broker starts (a ZooKeeper-mode cluster's server)."""

    def _mode_properties(self) -> dict[str, str]:
        """The keys that make the node a KRaft broker and controller."""
        host, port, cport = self.spec.host, self.spec.port, self.spec.quorum_port
        return {
            "process.roles": "broker,controller",
            "node.id": "1",
            "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{cport}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.quorum.voters": f"1@{host}:{cport}",
        }

    def _write_files(self) -> None:
        (self.folder / "data").mkdir(parents=True, exist_ok=True)
        (self.folder / "logs").mkdir(parents=True, exist_ok=True)
        host, port, cport = self.spec.host, self.spec.port, self.spec.quorum_port
        properties = {
            **self._mode_properties(),
            "log.dirs": str(self.folder / "data"),
            **SINGLE_NODE_PROPERTIES,
        }
        if self.spec.security is not None:
            properties.update(self.spec.security.broker_properties(host, port, cport))
        properties.update(self.spec.properties)
        text = "".join(f"{key}={value}\n" for key, value in properties.items())
        self._properties_path().write_text(f"# generated for cluster '{self.alias}'\n{text}")
        if self.spec.security is not None:
            self._properties_path().chmod(0o600)  # it holds the admin's password
        (self.folder / "log4j2.properties").write_text(_LOG4J2)
        (self.folder / "log4j.properties").write_text(_LOG4J1)

    def _log_options(self) -> list[str]:
        return [
            f"-Dlog4j2.configurationFile={self.folder / 'log4j2.properties'}",
            f"-Dlog4j.configuration=file:{self.folder / 'log4j.properties'}",
        ]

    def _format_storage(self) -> None:
        cluster_id_file = self.folder / "cluster.id"
        if not cluster_id_file.exists():
            # A KRaft cluster id is 16 random bytes in URL-safe base64 without padding.
            raw = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            cluster_id_file.write_text(raw + "\n")
        cluster_id = cluster_id_file.read_text().strip()
        result = subprocess.run(
            [
                "java",
                *self._log_options(),
                f"-Dkafka.logs.dir={self.folder / 'logs'}",
                "-cp",
                kafka_classpath(self.spec.version),
                "kafka.tools.StorageTool",
                "format",
                # One argument: an id may start with '-', which argparse4j would take
                # for an option.
                f"--cluster-id={cluster_id}",
                "-c",
                str(self._properties_path()),
                *(self.spec.security.format_arguments() if self.spec.security else []),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise ClusterStartError(
                f"cluster '{self.alias}': formatting storage failed:\n"
                f"{result.stdout}{result.stderr}"
            )

    def _log_tail(self, lines: int = 20) -> str:
        return log_tails((self.folder / "logs" / "console.log", self.server_log), lines)


def wait_until_answering(
    bootstrap_servers: str,
    timeout: float,
    *,
    process: subprocess.Popen[bytes] | None,
    client: Mapping[str, str] | None = None,
) -> None:
    """Block until an admin client lists topics on ``bootstrap_servers`` (``client``: the
    admin client's keys on a secured cluster).

    Probes the TCP port first (librdkafka logs every refused connection), then asks for
    metadata. Raises ClusterStartError on timeout or when ``process`` exits.
    """
    from confluent_kafka.admin import AdminClient  # heavy import, only when needed

    host, _, port = bootstrap_servers.rpartition(":")
    deadline = time.monotonic() + timeout
    admin = None
    while True:
        if process is not None and process.poll() is not None:
            raise ClusterStartError(f"the broker process exited with code {process.returncode}")
        if time.monotonic() > deadline:
            raise ClusterStartError(f"no answer on {bootstrap_servers} after {timeout:.0f} s")
        if port_open(host, int(port)):
            admin = admin or AdminClient({"bootstrap.servers": bootstrap_servers, **(client or {})})
            try:
                metadata = admin.list_topics(timeout=2)
                if metadata.brokers:
                    return
            except Exception:  # noqa: BLE001 - KafkaException while the broker finishes booting
                pass
        time.sleep(0.2)


def start_clusters(
    clusters: Iterable[LocalKafkaCluster], *, timeout: float = 90.0, fresh: bool = False
) -> dict[str, float]:
    """Start clusters in parallel; returns seconds to ready per alias.

    If one fails, the ones that did start are stopped again before the error is raised.
    """
    clusters = list(clusters)
    with ThreadPoolExecutor(max_workers=max(1, len(clusters))) as pool:
        futures = {c.alias: pool.submit(c.start, timeout=timeout, fresh=fresh) for c in clusters}
        errors = []
        timings: dict[str, float] = {}
        for alias, future in futures.items():
            try:
                timings[alias] = future.result()
            except ClusterStartError as exc:
                errors.append(str(exc))
    if errors:
        for cluster in clusters:
            cluster.stop()
        raise ClusterStartError("\n".join(errors))
    return timings


def find_clusters(root: Path) -> list[LocalKafkaCluster]:
    """Every cluster folder under ``root``/kafka (running or not), for ``make down``."""
    base = root / "kafka"
    if not base.is_dir():
        return []
    found = []
    for folder in sorted(p for p in base.iterdir() if (p / "server.properties").exists()):
        port = _listener_port(folder / "server.properties")
        found.append(LocalKafkaCluster(ClusterSpec(folder.name, port), folder))
    return found


def _listener_port(properties: Path) -> int:
    for line in properties.read_text().splitlines():
        if line.startswith("advertised.listeners="):
            first = line.partition("=")[2].split(",")[0]  # the client listener comes first
            return int(first.rsplit(":", 1)[1])
    return 0

"""Test harness over real clusters: a lazily started cluster pool and plain Kafka clients.

Used by the pytest fixtures in ``tests/conftest.py`` and by later suites (driver,
coordinator, benchmark). Nothing here fakes Kafka: every helper talks to a broker.

Environment:
    SRM_TEST_<ALIAS>_BOOTSTRAP  use an existing cluster for that alias instead of starting
                                one (e.g. SRM_TEST_PRIMARY_BOOTSTRAP=broker1:9092)
    SRM_TEST_RUN_DIR            where started clusters keep data (default .run/test-<pid>)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from srm_local.clusters import (
    ClusterSpec,
    ClusterStartError,
    LocalKafkaCluster,
    free_port_pair,
    start_clusters,
)
from srm_local.http_tokens import HttpTokens, write_tokens
from srm_local.paths import run_dir
from srm_local.spark_archive import driver_archive_options
from srm_local.zookeeper import ZooKeeperKafkaCluster

Header = tuple[str, bytes | None]


@dataclass(frozen=True)
class Record:
    """A record as a user's client sees it; what replication must preserve."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp_ms: int | None = None
    partition: int | None = None
    offset: int | None = None

    def content(self) -> tuple[bytes | None, bytes | None, tuple[Header, ...], int | None]:
        """Everything but the position: what source and target must agree on."""
        return (self.key, self.value, self.headers, self.timestamp_ms)


START_ATTEMPTS = 3

RECENT_MS = int(time.time() * 1000) - 3_600_000
"""A record timestamp for test data: an hour before the run started. Never a fixed date:
a broker deletes records older than its retention (7 days by default) at its next
retention check, whichever test is still reading them (offset 0 out of range, the
partition read as empty)."""

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
                for attempt in range(1, START_ATTEMPTS + 1):
                    clusters = [
                        (ZooKeeperKafkaCluster if alias in ZOOKEEPER_MODE else LocalKafkaCluster)(
                            ClusterSpec(alias, free_port_pair(), version=OLDER_KAFKA.get(alias)),
                            self.folder / "kafka" / alias,
                        )
                        for alias in missing
                    ]
                    try:
                        self.timings.update(start_clusters(clusters, fresh=True))
                        break
                    except ClusterStartError:
                        # Ports are probed free, then bound by the JVM seconds later:
                        # another process may take one in between. New ports, fresh data.
                        for cluster in clusters:
                            cluster.stop()
                        if attempt == START_ATTEMPTS:
                            raise
                self.timings["+".join(missing)] = time.monotonic() - started
                self.started.update({c.alias: c for c in clusters})
        return {a: _external(a) or self.started[a].bootstrap_servers for a in aliases}

    def stop_all(self) -> None:
        for cluster in self.started.values():
            cluster.stop()
        self.started.clear()


def _external(alias: str) -> str | None:
    return os.environ.get(f"SRM_TEST_{alias.upper()}_BOOTSTRAP") or None


def admin(bootstrap: str, client: Mapping[str, str] | None = None) -> AdminClient:
    """An admin client; ``client``: more librdkafka keys (a secured cluster's, from
    :meth:`srm_local.secured.SecuredCluster.client_config`)."""
    return AdminClient({"bootstrap.servers": bootstrap, **(client or {})})


def create_topic(
    bootstrap: str,
    name: str,
    *,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    timeout: float = 30,
    client: Mapping[str, str] | None = None,
) -> None:
    """Create a topic and wait until its metadata shows every partition."""
    handle = admin(bootstrap, client)
    topic = NewTopic(
        name, num_partitions=partitions, replication_factor=1, config=dict(config or {})
    )
    handle.create_topics([topic])[name].result(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = handle.list_topics(name, timeout=5).topics.get(name)
        if (
            described is not None
            and not described.error
            and len(described.partitions) == partitions
        ):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} did not show {partitions} partitions within {timeout} s")


def delete_topics(
    bootstrap: str,
    names: Iterable[str],
    timeout: float = 30,
    client: Mapping[str, str] | None = None,
) -> None:
    names = list(names)
    if not names:
        return
    handle = admin(bootstrap, client)  # must outlive its futures, or librdkafka destroys the handle
    for future in handle.delete_topics(names, operation_timeout=timeout).values():
        try:
            future.result(timeout)
        except Exception as exc:  # noqa: BLE001 - a topic already gone is fine at clean-up
            if "UNKNOWN_TOPIC" not in str(exc):
                raise


def list_topics(bootstrap: str, client: Mapping[str, str] | None = None) -> set[str]:
    return set(admin(bootstrap, client).list_topics(timeout=10).topics)


def produce(
    bootstrap: str,
    topic: str,
    records: Sequence[Record],
    *,
    config: Mapping[str, str] | None = None,
) -> None:
    """Produce records in order (idempotent producer, acks=all) and wait for every ack."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            **(config or {}),
        }
    )
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    for record in records:
        kwargs: dict[str, object] = {"key": record.key, "value": record.value}
        if record.headers:
            kwargs["headers"] = list(record.headers)
        if record.timestamp_ms is not None:
            kwargs["timestamp"] = record.timestamp_ms
        if record.partition is not None:
            kwargs["partition"] = record.partition
        while True:
            try:
                producer.produce(topic, on_delivery=on_delivery, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
    remaining = producer.flush(60)
    if remaining or errors:
        raise RuntimeError(f"produce to {topic}: {remaining} unacknowledged, errors {errors[:3]}")


def consume_all(
    bootstrap: str,
    topic: str,
    *,
    isolation_level: str = "read_committed",
    timeout: float = 30,
    client: Mapping[str, str] | None = None,
) -> dict[int, list[Record]]:
    """Read every partition of ``topic`` from its start to the current end (no group)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "srm-test-reader",  # required by librdkafka; nothing is committed
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
            "enable.partition.eof": True,
            **(client or {}),
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends: dict[int, int] = {}
        for partition in partitions:
            _low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=10
            )
            ends[partition] = high
        result: dict[int, list[Record]] = {p: [] for p in partitions}
        pending = {p for p, high in ends.items() if high > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in pending])
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition())
                    continue
                raise RuntimeError(f"consume {topic}: {message.error()}")
            _ts_type, ts = message.timestamp()
            result[message.partition()].append(
                Record(
                    key=message.key(),
                    value=message.value(),
                    headers=tuple(message.headers() or ()),
                    timestamp_ms=ts,
                    partition=message.partition(),
                    offset=message.offset(),
                )
            )
            if message.offset() + 1 >= ends[message.partition()]:
                pending.discard(message.partition())
        if pending:
            raise TimeoutError(f"consume {topic}: partitions {sorted(pending)} not read to the end")
        return result
    finally:
        consumer.close()


def write_config(
    folder: Path,
    bootstrap: Mapping[str, str],
    *,
    flows: Mapping[str, Mapping[str, object]] | None = None,
    replication: Mapping[str, object] | None = None,
    name: str = "srm.yaml",
    cluster_keys: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """A YAML configuration for clusters on the given bootstrap servers, single-node
    friendly (replication factors 1, short intervals); ``flows`` and ``replication``
    add or override keys (``{"primary->backup": {"enabled": True}}``); ``cluster_keys``
    adds keys per alias (a secured cluster's ``mm2_keys``)."""
    import yaml

    settings: dict[str, object] = {
        "replication.factor": 1,
        "heartbeats.topic.replication.factor": 1,
        "checkpoints.topic.replication.factor": 1,
        "offset-syncs.topic.replication.factor": 1,
        "offset.storage.replication.factor": 1,
        "refresh.topics.interval.seconds": 2,
        "sync.topic.configs.interval.seconds": 2,
        "emit.heartbeats.interval.seconds": 1,
        **(replication or {}),
    }
    document = {
        "clusters": {
            alias: {"bootstrap.servers": servers, **(cluster_keys or {}).get(alias, {})}
            for alias, servers in bootstrap.items()
        },
        "replication": settings,
        "flows": {name: dict(keys) for name, keys in (flows or {}).items()},
    }
    path = folder / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def control_config(
    folder: Path, bootstrap: Mapping[str, str], prefix: str, **replication: object
) -> Path:
    """The control-path tests' configuration: primary->backup replicating
    ``<prefix>-base``, backup->primary off, the control topics named after ``prefix``."""
    return write_config(
        folder,
        {"primary": bootstrap["primary"], "backup": bootstrap["backup"]},
        flows={
            "primary->backup": {"enabled": True, "topics": [f"{prefix}-base"]},
            "backup->primary": {"enabled": False},
        },
        replication={"srm.control.topic.prefix": prefix, **replication},
    )


def control_log(config: Path, target: str | None = None):  # type: ignore[no-untyped-def]
    """The :class:`ControlSettings` of one target's log of ``config``: ``target``, or the
    one target of its enabled flows (ValueError when they have several: name one)."""
    from srm_common.cli_support import load_or_exit
    from srm_common.config.control import control_plane

    loaded = load_or_exit("test", config, [])
    if target is None:
        targets = sorted({flow.target for flow in loaded.enabled_flows()})
        if len(targets) != 1:
            raise ValueError(f"the enabled flows write into {targets}: name the target")
        target = targets[0]
    return control_plane(loaded).log(target)


def control_state(config: Path, target: str | None = None):  # type: ignore[no-untyped-def]
    """The state of one target's log (:func:`control_log`), replayed to its end now."""
    from srm_common.adapters.event_log_reads import read_log
    from srm_common.control.state import replay

    return replay(read_log(control_log(config, target), timeout=15))


def content(records: Iterable[Record]) -> list[tuple[object, ...]]:
    """What must be equal between a partition and its copy: records in order."""
    return [record.content() for record in records]


class ChildProcess:
    """``python -m MODULE ARGS`` as a child in its own process group (a driver's Spark JVM
    included), so a test can kill -9 the whole service as a crashed container would die."""

    def __init__(
        self,
        module: str,
        args: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.module = module
        self.args = list(args)
        self.log_path = log_path
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        log = self.log_path.open("ab")
        log.write(f"--- start {self.starts + 1}\n".encode())
        log.flush()
        self.process = subprocess.Popen(
            [sys.executable, "-m", self.module, *self.args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **self.env},
        )
        log.close()
        self.starts += 1

    def kill9(self) -> None:
        """SIGKILL to the driver and its JVM, no warning, as a crash would."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self, timeout: float = 120) -> int:
        """SIGTERM and wait: running batches finish and are recorded; the exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            # To the driver only, as `docker stop` does; Spark's JVM is its child.
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        finally:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # stragglers of the group
            except ProcessLookupError:
                pass
        return code

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


TEST_DRIVER_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
"""The Spark JVM of every driver a test starts compiles with C1 only. A driver's JVM
schedules the copy slots and answers Py4J; the copying is Python. Starting it is most of
a driver process's start, and the C2 compiler's work at start-up never pays off in a
test: measured with one local[1] session on this 2-core machine (loaded), 25-39 s ->
14-22 s to a session and 15.5-20.8 -> 10.7-12.3 CPU s (docs/testing.md, "Where the time
goes"). Drivers started by `make up` or an operator keep the JVM's defaults."""


class DriverProcess(ChildProcess):
    """``srm-driver --config FILE`` (``--standalone`` unless ``args`` say otherwise), its
    Spark JVM with :data:`TEST_DRIVER_JVM_OPTIONS` and, once ``make test`` has built it,
    the class-data archive of :mod:`srm_local.spark_archive`."""

    def __init__(
        self,
        config: Path,
        log_path: Path,
        *,
        spark_master: str = "local[2]",
        args: Sequence[str] = ("--standalone",),
    ) -> None:
        super().__init__(
            "srm_driver",
            [
                "--config",
                str(config),
                "--spark-master",
                spark_master,
                "--spark-conf",
                "spark.driver.extraJavaOptions="
                + " ".join((TEST_DRIVER_JVM_OPTIONS, *driver_archive_options())),
                *args,
            ],
            log_path,
            env=driver_http_environment(),
        )
        self.config = config


HTTP_PRINCIPALS = ("srm-control", "driver:test", "api-gateway")


def http_tokens(folder: Path) -> HttpTokens:
    """Tokens of the test run's HTTP principals (srm-control, ``driver:test``,
    api-gateway) in ``folder``; :func:`http_environment` hands them to the services."""
    return write_tokens(folder, HTTP_PRINCIPALS)


def http_environment(tokens: HttpTokens) -> dict[str, str]:
    """What every service and srm-control of a test reads: the tokens file, and the
    token srm-control bears (a driver's is set by :class:`DriverProcess`)."""
    return {
        "SRM_HTTP_TOKENS_FILE": str(tokens.tokens_file),
        "SRM_TOKEN_FILE": str(tokens.token_file("srm-control")),
    }


def driver_http_environment() -> dict[str, str]:
    """A driver's token beside the srm-control token of :func:`http_environment`."""
    tokens = os.environ.get("SRM_HTTP_TOKENS_FILE")
    if not tokens:
        return {}
    driver = Path(tokens).with_name("driver-test.token")
    return {"SRM_TOKEN_FILE": str(driver)} if driver.is_file() else {}


def log_tails(
    processes: Iterable[ChildProcess] | Callable[[], Iterable[ChildProcess]], chars: int = 2500
) -> Callable[[], str]:
    """A ``detail=`` for :func:`wait_until`: the end of each process's log, named (a
    callable ``processes`` is asked each time, for groups that change)."""

    def tails() -> str:
        current = processes() if callable(processes) else processes
        return "\n".join(
            f"--- {p.log_path.name}\n{p.log_text()[-chars:]}"
            for p in current
            if p.log_path.exists()
        )

    return tails


class CoordinatorProcess(ChildProcess):
    """``srm-coordinator --config FILE --id ID``; its log memory beside its log file unless
    ``args`` say otherwise (never in the working directory, shared by every test)."""

    def __init__(self, config: Path, log_path: Path, coordinator_id: str, *args: str) -> None:
        if "--state-file" not in args:
            args = ("--state-file", str(log_path.with_name(f"{coordinator_id}-log.json")), *args)
        super().__init__(
            "srm_coordinator", ["--config", str(config), "--id", coordinator_id, *args], log_path
        )
        self.id = coordinator_id


class GatewayProcess(ChildProcess):
    """``srm-api-gateway --config FILE --port 0 --db-url URL``; :meth:`url` once it serves."""

    def __init__(self, config: Path, log_path: Path, db_url: str, *args: str) -> None:
        super().__init__(
            "srm_api_gateway",
            ["--config", str(config), "--port", "0", "--db-url", db_url, *args],
            log_path,
        )

    def url(self) -> str | None:
        """Where the latest start serves, or None before it says."""
        text = self.log_text().split(f"--- start {self.starts}\n")[-1]
        said = "srm-api-gateway: API at "
        if said not in text:
            return None
        return text.split(said)[-1].split()[0]


def copied(source: str, topic: str, target: str, remote: str) -> bool:
    """The remote topic holds at least as many records as the source shows read_committed
    (what a copy reads); a test then compares their content."""
    records = consume_all(source, topic)
    if not list_topics(target) >= {remote}:
        return False
    copies = consume_all(target, remote, isolation_level="read_uncommitted")
    return sum(map(len, copies.values())) >= sum(map(len, records.values()))


_LEADERLESS = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
}


def end_offsets(
    bootstrap: str, topic: str, client: Mapping[str, str] | None = None
) -> dict[int, int]:
    """High watermark of every partition of ``topic`` (empty if it does not exist).

    A topic just deleted or recreated has partitions without a leader for a moment: such
    an answer is retried for up to 10 s."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return _end_offsets(bootstrap, topic, client)
        except KafkaException as exc:
            error = exc.args[0]
            if time.monotonic() > deadline or not (
                error.retriable() or error.code() in _LEADERLESS
            ):
                raise
            time.sleep(0.5)


def _end_offsets(
    bootstrap: str, topic: str, client: Mapping[str, str] | None = None
) -> dict[int, int]:
    described = admin(bootstrap, client).list_topics(topic, timeout=10).topics.get(topic)
    if described is None or described.error is not None:
        return {}
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "srm-test-offsets", **(client or {})}
    )
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in described.partitions
        }
    finally:
        consumer.close()


@dataclass(frozen=True)
class CopyCount:
    """Records of a source topic and of its copy, counted by key (keys are unique)."""

    produced: int
    found: int
    missing: int
    duplicated: int

    def __str__(self) -> str:
        return (
            f"produced {self.produced}, found on target {self.found}, missing {self.missing},"
            f" duplicated {self.duplicated}"
        )


def count_copy(source: Mapping[int, list[Record]], target: Mapping[int, list[Record]]) -> CopyCount:
    """What a copy lacks and what it has twice, comparing keys over all partitions."""
    import collections

    source_keys = collections.Counter(r.key for rs in source.values() for r in rs)
    target_keys = collections.Counter(r.key for rs in target.values() for r in rs)
    return CopyCount(
        produced=sum(source_keys.values()),
        found=sum(target_keys.values()),
        missing=sum((source_keys - target_keys).values()),
        duplicated=sum((target_keys - source_keys).values()),
    )


class SteadyProducer(threading.Thread):
    """Numbered records, key k<n>, a header, round robin over partitions, ~1500/s
    (``per_tick`` records every 50 ms: 75), compressed with ``codec``."""

    def __init__(
        self, bootstrap: str, topic: str, partitions: int, per_tick: int = 75, codec: str = "none"
    ) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.partitions = partitions
        self.per_tick = per_tick
        self.stop = threading.Event()
        self.sent = 0
        self.errors: list[str] = []
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "compression.type": codec,
            }
        )

    def run(self) -> None:
        while not self.stop.is_set():
            for _ in range(self.per_tick):
                n = self.sent
                self._producer.produce(
                    self.topic,
                    key=f"k{n}".encode(),
                    value=f"record {n} ".encode() * 20,
                    headers=[("seq", str(n).encode())],
                    partition=n % self.partitions,
                    on_delivery=self._delivered,
                )
                self.sent += 1
            self._producer.poll(0)
            time.sleep(0.05)
        if self._producer.flush(60):
            self.errors.append("unflushed records")

    def _delivered(self, error, _message) -> None:  # type: ignore[no-untyped-def]
        if error is not None:
            self.errors.append(str(error))

    def finish(self) -> None:
        """Stop producing; every record sent must have been acknowledged."""
        self.stop.set()
        self.join(60)
        assert not self.errors, f"the producer failed: {self.errors[:3]}"


def wait_caught_up(
    source: str,
    topic: str,
    target: str,
    remote: str,
    timeout: float,
    *,
    stalled_after: float | None = None,
    detail: Callable[[], str] | None = None,
) -> None:
    """Wait until ``remote`` on ``target`` ends where ``topic`` on ``source`` ends now,
    partition by partition (a test then compares their content).

    With ``stalled_after``, ``timeout`` is only an upper bound: the wait fails once the
    target has not grown for ``stalled_after`` seconds, and waits on while it grows (a
    backlog that a loaded machine copies slowly is not a fault; a copy that stopped is)."""
    ends = end_offsets(source, topic)
    if stalled_after is None:
        wait_until(
            lambda: end_offsets(target, remote) == ends,
            timeout,
            "the target catches up",
            detail=detail,
        )
        return
    started = moved = time.monotonic()
    last: dict[int, int] | None = None
    while True:
        now_ends = end_offsets(target, remote)
        if now_ends == ends:
            return
        now = time.monotonic()
        if now_ends != last:
            last, moved = now_ends, now
        if now - moved > stalled_after or now - started > timeout:
            why = (
                f"nothing new for {stalled_after:.0f} s"
                if now - moved > stalled_after
                else f"not within {timeout:.0f} s"
            )
            more = f"\n{detail()}" if detail is not None else ""
            raise TimeoutError(
                f"the target catches up: {why}; {sum(now_ends.values())} of"
                f" {sum(ends.values())} records on {remote} after {now - started:.0f} s{more}"
            )
        time.sleep(0.5)


class ControlGroup:
    """The group of drivers of one target's log (:func:`control_log`: ``target``, or the
    one target of the enabled flows) as the log and the drivers' REST APIs show it (for
    tests that start coordinators and drivers as processes)."""

    def __init__(self, config: Path, target: str | None = None) -> None:
        self.settings = control_log(config, target)

    def state(self):  # type: ignore[no-untyped-def]
        from srm_common.adapters.event_log_reads import read_log
        from srm_common.control.state import replay

        return replay(read_log(self.settings, timeout=15))

    def events(self) -> list[object]:
        """Every event of the log, in order."""
        from srm_common.adapters.event_log_reads import read_log

        return [envelope.event for envelope in read_log(self.settings, timeout=15)]

    def running(self, driver: str, state=None) -> set[str]:  # type: ignore[no-untyped-def]
        """What ``driver`` says it runs of this log's tasks (empty when it does not answer)."""
        current = state or self.state()
        try:
            found = get_json(f"{current.drivers[driver].url}/v1/driver", timeout=3)["running"]
        except (OSError, KeyError, ValueError):
            return set()
        return {task for task in found if task.rpartition("|")[0] in current.tasks}

    def settled(self, drivers: Iterable[str]) -> bool:
        """Every task assigned to one of ``drivers``, and each runs exactly what it holds.
        False while the event log cannot be read to its end (a coordinator just starting
        has not created it yet): the caller's own timeout decides, not the read's 15 s."""
        from srm_common.errors import ControlLogError

        try:
            current = self.state()
        except ControlLogError:
            return False
        tasks = set(current.all_task_ids())
        if not tasks or set(current.assignment) != tasks:
            return False
        if set(current.assignment.values()) - set(drivers):
            return False
        return all(self.running(d, current) == set(current.tasks_of(d)) for d in drivers)


def get_json(url: str, timeout: float = 10) -> dict:  # type: ignore[type-arg]
    import json
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def wait_until(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    step: float = 0.5,
    *,
    detail: Callable[[], str] | None = None,
) -> None:
    """Poll ``predicate`` until true; else TimeoutError naming ``what`` and, taken at the
    moment of failure, ``detail()`` (e.g. the tails of the processes' logs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(step)
    more = f"\n{detail()}" if detail is not None else ""
    raise TimeoutError(f"{what}: not within {timeout:.0f} s{more}")

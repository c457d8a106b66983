"""The replicators under test and the one configuration they share.

All get the same MM2-style properties file (only the latency topic's name differs),
written by :func:`shared_properties`: one flow ``primary->backup`` limited to the
benchmark's topics, ``tasks.max`` = partitions, replication factor 1 for every topic
they create, offsets flushed every 10 s, heartbeats and checkpoints on as by default.

* ``srm``: ``srm-driver --config srm.properties`` (the driver's CLI contract) with its
  defaults: its copy slots (Python, in PySpark's workers) pass whole record batches
  through (``srm.copy.batches``, the default since 28 Nov 2026; before, they copied record
  by record with librdkafka). Until issue 20's decision a JVM slot ran here and the
  Python one as ``srm_python``; result files of schema 3 hold both;
* ``srm_records`` (``--srm-records``): the same driver with ``srm.copy.batches = false``,
  the record copy. Result files of 27-28 Nov 2026 may hold ``srm_batches`` instead
  (``--srm-batches``: the batch copy while it was not the default);
* ``mirrormaker2``: Apache MirrorMaker 2 in dedicated mode,
  ``org.apache.kafka.connect.mirror.MirrorMaker mm2.properties``, with the heap and GC
  options ``connect-mirror-maker.sh`` and ``kafka-run-class.sh`` use, and every client
  setting at its default;
* ``mirrormaker2_tuned``: the same MirrorMaker 2 and file plus :data:`MM2_TUNED_PROPERTIES`,
  the client settings a careful operator sets for this workload
  (``mm2-tuned.properties``, ``mm2-tuned.log``).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from srm_harness.mirrormaker import log4j2_properties, with_logging
from srm_local.tools import tool_command

from srm_bench.stack import SOURCE, TARGET

SRM = "srm"
MM2 = "mirrormaker2"
MM2_TUNED = "mirrormaker2_tuned"
REPLICATORS = (SRM, MM2, MM2_TUNED)  # the table's column order
# SRM's driver again, on a Spark standalone cluster (--spark standalone:N, spark_run.py).
SRM_STANDALONE = "srm_spark_standalone"
# SRM's driver again with srm.copy.batches = false (--srm-records): the record copy, a
# column of its own beside the default batch copy (docs/driver.md, "Batch copy").
SRM_RECORDS = "srm_records"
# Older result files' column: the batch copy while it was not the default (--srm-batches).
SRM_BATCHES = "srm_batches"
SRM_DRIVERS = (SRM, SRM_STANDALONE, SRM_RECORDS)
LABELS = {
    SRM: "SRM driver",
    MM2: "MirrorMaker 2",
    MM2_TUNED: "MM2 tuned",
    SRM_STANDALONE: "SRM on Spark standalone",
    SRM_RECORDS: "SRM records",
    SRM_BATCHES: "SRM batches",
}

# MirrorMaker 2 tuned the way a careful operator would for this workload (1 KiB records,
# 8 partitions, one broker per cluster, a catch-up then a 500 records/s latency phase),
# added to the shared file. The one list of tuned keys: the table's notes, the JSON and
# docs/benchmark.md ("How each replicator is configured") all show it.
#
# How dedicated-mode MirrorMaker 2 applies them (MirrorMakerConfig): ``backup.producer.*``
# goes into the primary->backup Connect worker's ``producer.*``, which overrides Connect's
# own producer defaults (acks=all, enable.idempotence=false, max.in.flight=1) for every
# source task's producer, the MirrorSourceTasks' that copy the records included.
# ``primary.consumer.*`` becomes the connectors' ``source.consumer.*``, the MirrorSourceTask
# consumers' configuration. Both show in mm2-tuned.log's ProducerConfig/ConsumerConfig dumps.
MM2_TUNED_PROPERTIES: Mapping[str, str] = MappingProxyType(
    {
        # SRM's copy slots and the raw producer perf tool batch 256 KiB: 256 records of 1 KiB
        # per batch instead of 16, so 16 times fewer batches and produce requests per MB.
        f"{TARGET}.producer.batch.size": "262144",
        # Batches fill from each poll's burst of records during catch-up without waiting;
        # at 500 records/s (about 60 per partition and second) no batch fills, so linger
        # is pure added latency: keep 5 ms (Kafka 4's default; SRM's slots linger 1), so
        # it does not depend on the client version (Kafka 3 had 0).
        f"{TARGET}.producer.linger.ms": "5",
        # Connect sends one request at a time per connection so that a retry cannot
        # reorder records, and turns idempotence off. Five in flight with idempotence
        # keeps the order and keeps retries from writing duplicates (the Kafka producer's
        # own defaults); five in flight without it could reorder on a retry.
        f"{TARGET}.producer.enable.idempotence": "true",
        f"{TARGET}.producer.max.in.flight.requests.per.connection": "5",
        # The values are incompressible random bytes: compression would only cost CPU.
        f"{TARGET}.producer.compression.type": "none",
        # Return a fetch as soon as one record is there: during catch-up the data is
        # already on the broker, so a larger minimum saves nothing, and in the latency
        # phase it would hold each fetch for up to fetch.max.wait.ms (500 ms).
        f"{SOURCE}.consumer.fetch.min.bytes": "1",
        # 4 MiB per partition and fetch (default 1 MiB): fewer, larger fetches during
        # catch-up; each task reads one data partition (tasks.max = partitions).
        f"{SOURCE}.consumer.max.partition.fetch.bytes": "4194304",
        # The default 50 MiB, stated: above what a task's fetch can return here
        # (a data and a latency partition at 4 MiB each).
        f"{SOURCE}.consumer.fetch.max.bytes": "52428800",
        # Up to 4 MiB of 1 KiB records per poll (default 500): about one partition fetch
        # handed to Connect per loop, 16 full producer batches.
        f"{SOURCE}.consumer.max.poll.records": "4096",
    }
)

# Added to MM2 tuned in a WAN run (make bench --wan), where the source is a round trip
# away: what a careful operator changes for a long fat pipe. docs/benchmark.md, WAN.
MM2_WAN_TUNED_PROPERTIES: Mapping[str, str] = MappingProxyType(
    {
        # The Java clients' fixed socket buffers (consumer 64 KiB receive, producer 128 KiB
        # send) cap a connection at one buffer per round trip; -1 lets the kernel autotune
        # (up to net.ipv4.tcp_rmem / tcp_wmem's maximum).
        f"{SOURCE}.consumer.receive.buffer.bytes": "-1",
        f"{SOURCE}.consumer.send.buffer.bytes": "-1",
        f"{SOURCE}.producer.send.buffer.bytes": "-1",
        f"{SOURCE}.producer.receive.buffer.bytes": "-1",
        # A partition's fetch is one request per round trip: 16 MiB per partition and
        # fetch (tuned loopback: 4 MiB) is 16 MiB per 150 ms, about 110 MB/s a partition.
        f"{SOURCE}.consumer.max.partition.fetch.bytes": "16777216",
        # Room for a data and a latency partition's full fetch in one response.
        f"{SOURCE}.consumer.fetch.max.bytes": "67108864",
    }
)

# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS, which connect-mirror-maker.sh inherits.
_KAFKA_JVM_OPTIONS = (
    "-Xms256m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)


@dataclass(frozen=True)
class Replicator:
    """How to run one replicator: its command, configuration file and log."""

    name: str
    command: list[str]
    config_path: Path
    log_path: Path
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return LABELS.get(self.name, self.name)

    def display(self) -> str:
        """The command line, with the long JVM classpath and options elided."""
        if self.command[0] != "java":
            return " ".join(self.command)
        return f"java ... {' '.join(self.command[-2:])}"


def latency_topic(name: str) -> str:
    """Each replicator gets its own latency topic, created empty before it starts."""
    return f"bench-latency-{name.replace('_', '-')}"


def remote_topic(topic: str) -> str:
    """MM2's DefaultReplicationPolicy, which both use: ``<source alias>.<topic>``."""
    return f"{SOURCE}.{topic}"


def shared_properties(
    source_bootstrap: str, target_bootstrap: str, topics: Sequence[str], partitions: int
) -> dict[str, str]:
    flow = f"{SOURCE}->{TARGET}"
    return {
        "clusters": f"{SOURCE}, {TARGET}",
        f"{SOURCE}.bootstrap.servers": source_bootstrap,
        f"{TARGET}.bootstrap.servers": target_bootstrap,
        f"{flow}.enabled": "true",
        f"{flow}.topics": ", ".join(topics),
        # The reverse flow would otherwise still emit heartbeats into the source cluster.
        f"{TARGET}->{SOURCE}.enabled": "false",
        f"{TARGET}->{SOURCE}.emit.heartbeats.enabled": "false",
        "tasks.max": str(partitions),
        "replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.flush.interval.ms": "10000",
        # The brokers run without an authorizer; there are no ACLs to copy.
        "sync.topic.acls.enabled": "false",
    }


def replicator_properties(
    name: str, shared: Mapping[str, str], *, wan: bool = False
) -> dict[str, str]:
    """The file of replicator ``name``: the shared one, plus the tuned keys for MM2 tuned
    (and the WAN ones in a WAN run)."""
    if name == MM2_TUNED:
        return {**shared, **MM2_TUNED_PROPERTIES, **(MM2_WAN_TUNED_PROPERTIES if wan else {})}
    if name == SRM_RECORDS:
        return {**shared, "srm.copy.batches": "false"}
    return dict(shared)


def write_properties(
    path: Path, properties: Mapping[str, str], extra: Sequence[str]
) -> dict[str, str]:
    """Write ``properties`` plus ``KEY=VALUE`` overrides from the command line (which win);
    returns what was written."""
    merged = dict(properties)
    for item in extra:
        key, _, value = item.partition("=")
        merged[key.strip()] = value.strip()
    lines = [f"{key} = {value}" for key, value in merged.items()]
    path.write_text("# written by make bench\n" + "\n".join(lines) + "\n")
    return merged


def mirrormaker2(folder: Path, heap: str, name: str = MM2) -> Replicator:
    """MirrorMaker 2 as ``name`` (default or tuned), each with its own file and log.

    It logs at INFO with every logger (as connect-mirror-maker.sh does) into its log: the
    client configurations it used and its offset commits are what explains its figures.
    The process is run by ``RunningReplicator``, as SRM's driver is, not by srm_local's
    MirrorMaker2 runner: the benchmark times the stop and samples the process tree of
    each replicator in the same way.
    """
    stem = "mm2-tuned" if name == MM2_TUNED else "mm2"
    config = folder / f"{stem}.properties"
    logging = folder / "mm2-log4j2.properties"
    logging.write_text(log4j2_properties(quiet_clients=False))
    command = with_logging(tool_command("kafka-mirror-maker-2", [str(config)], heap=heap), logging)
    command[1:1] = _KAFKA_JVM_OPTIONS
    return Replicator(name, command, config, folder / f"{stem}.log")


def srm_driver(folder: Path, spark_master: str | None, name: str = SRM) -> Replicator:
    """SRM's driver as ``name``, with ``srm.properties`` and ``srm.log`` (the record copy's:
    ``srm-records.*``)."""
    stem = "srm-records" if name == SRM_RECORDS else "srm"
    config = folder / f"{stem}.properties"
    command = [*srm_driver_command(), "--config", str(config), "--standalone"]
    if spark_master:
        command += ["--spark-master", spark_master]
    return Replicator(name, command, config, folder / f"{stem}.log")


def srm_driver_command() -> list[str]:
    """``.venv/bin/srm-driver`` beside this interpreter, else ``python -m srm_driver``."""
    script = Path(sys.executable).parent / "srm-driver"
    if script.exists():
        return [str(script)]
    found = shutil.which("srm-driver")
    return [found] if found else [sys.executable, "-m", "srm_driver"]


def srm_driver_available() -> bool:
    import importlib.util

    if (Path(sys.executable).parent / "srm-driver").exists():
        return True
    return importlib.util.find_spec("srm_driver.__main__") is not None

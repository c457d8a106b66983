"""The two replicators under test and the one configuration they share.

Both get the same MM2-style properties file (only the latency topic's name differs),
written by :func:`shared_properties`: one flow ``primary->backup`` limited to the
benchmark's topics, ``tasks.max`` = partitions, replication factor 1 for every topic
they create, offsets flushed every 10 s, heartbeats and checkpoints on as by default.

* ``srm``: ``srm-driver --config srm.properties`` (the driver's CLI contract);
* ``mirrormaker2``: Apache MirrorMaker 2 in dedicated mode,
  ``org.apache.kafka.connect.mirror.MirrorMaker mm2.properties``, with the heap and GC
  options ``connect-mirror-maker.sh`` and ``kafka-run-class.sh`` use.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from srm_local.tools import tool_command

from srm_bench.stack import SOURCE, TARGET

SRM = "srm"
MM2 = "mirrormaker2"
LABELS = {SRM: "SRM driver", MM2: "MirrorMaker 2"}

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

    @property
    def label(self) -> str:
        return LABELS[self.name]

    def display(self) -> str:
        """The command line, with the long JVM classpath and options elided."""
        if self.command[0] != "java":
            return " ".join(self.command)
        return f"java ... {' '.join(self.command[-2:])}"


def latency_topic(name: str) -> str:
    """Each replicator gets its own latency topic, created empty before it starts."""
    return f"bench-latency-{name}"


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


def write_properties(path: Path, properties: Mapping[str, str], extra: Sequence[str]) -> None:
    """Write ``properties`` plus ``KEY=VALUE`` overrides from the command line."""
    merged = dict(properties)
    for item in extra:
        key, _, value = item.partition("=")
        merged[key.strip()] = value.strip()
    lines = [f"{key} = {value}" for key, value in merged.items()]
    path.write_text("# written by make bench\n" + "\n".join(lines) + "\n")


# MirrorMaker 2 logs at INFO (as connect-mirror-maker.sh does) into mm2.log: the client
# configurations it used and its offset commits are what explains its figures.
_MM2_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = stdout
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = stdout
"""


def mirrormaker2(folder: Path, heap: str) -> Replicator:
    config = folder / "mm2.properties"
    logging = folder / "mm2-log4j2.properties"
    logging.write_text(_MM2_LOG4J2)
    command = [
        f"-Dlog4j2.configurationFile={logging}" if arg.startswith("-Dlog4j2.") else arg
        for arg in tool_command("kafka-mirror-maker-2", [str(config)], heap=heap)
    ]
    command[1:1] = _KAFKA_JVM_OPTIONS
    return Replicator(MM2, command, config, folder / "mm2.log")


def srm_driver(folder: Path, spark_master: str | None) -> Replicator:
    config = folder / "srm.properties"
    command = [*srm_driver_command(), "--config", str(config), "--standalone"]
    if spark_master:
        command += ["--spark-master", spark_master]
    return Replicator(SRM, command, config, folder / "srm.log")


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

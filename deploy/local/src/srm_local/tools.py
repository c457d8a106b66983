"""Kafka's own command-line tools, run from the cached jars.

``kafka-topics``, ``kafka-consumer-groups``, the perf tools and the console clients are
installed as commands of the project's environment; each runs the tool's main class with
the same arguments the tarball's ``bin/*.sh`` scripts accept. ``run_tool`` is the same
for Python callers (tests, the benchmark).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence

from srm_local.jars import kafka_classpath
from srm_local.paths import project_root

TOOL_CLASSES = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-mirror-maker-2": "org.apache.kafka.connect.mirror.MirrorMaker",
}


def tool_command(tool: str, args: Sequence[str], *, heap: str = "512m") -> list[str]:
    """The java command line for ``tool`` (a key of TOOL_CLASSES) with ``args``."""
    try:
        main_class = TOOL_CLASSES[tool]
    except KeyError:
        known = ", ".join(sorted(TOOL_CLASSES))
        raise ValueError(f"unknown Kafka tool '{tool}'; known tools: {known}") from None
    # Tools print their results on stdout; client-library logging goes to stderr at WARN.
    logging = project_root() / "deploy" / "local" / "log4j2-tools.properties"
    return [
        "java",
        f"-Xmx{heap}",
        f"-Dlog4j2.configurationFile={logging}",
        "-cp",
        kafka_classpath(),
        main_class,
        *args,
    ]


def run_tool(
    tool: str, args: Sequence[str], *, check: bool = True, timeout: float | None = 120
) -> subprocess.CompletedProcess[str]:
    """Run a Kafka tool and capture its output (for tests and scripts)."""
    return subprocess.run(
        tool_command(tool, args), capture_output=True, text=True, check=check, timeout=timeout
    )


def _entry_point(tool: str) -> Callable[[], None]:
    """A console-script function that replaces itself with ``tool`` (signals go to Java)."""

    def run() -> None:
        command = tool_command(tool, sys.argv[1:])
        os.execvp(command[0], command)

    run.__name__ = tool.replace("-", "_")
    return run


kafka_topics = _entry_point("kafka-topics")
kafka_consumer_groups = _entry_point("kafka-consumer-groups")
kafka_producer_perf_test = _entry_point("kafka-producer-perf-test")
kafka_consumer_perf_test = _entry_point("kafka-consumer-perf-test")
kafka_console_consumer = _entry_point("kafka-console-consumer")
kafka_console_producer = _entry_point("kafka-console-producer")
kafka_configs = _entry_point("kafka-configs")

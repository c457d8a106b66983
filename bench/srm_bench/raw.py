"""The machine's raw limit: Kafka's own perf tools doing a replicator's I/O, no replicator.

``kafka-consumer-perf-test`` reads the data set from the source while
``kafka-producer-perf-test`` writes the same number of records of the same size to a
topic with as many partitions on the target, both at once: a replicator has to do both
on the same two cores. Each tool times itself without JVM start-up (the consumer's
``fetch.time.ms`` also leaves out its group join), and::

    raw MB/s = data set MB / max(consumer seconds, producer seconds)

that is, the rate at which both halves are done, which equals the slower tool's rate.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from srm_local.tools import tool_command

from srm_bench.offsets import end_offsets_or_none
from srm_bench.options import Dataset
from srm_bench.progress import Progress
from srm_bench.stack import admin_client, create_topic

RAW_TOPIC = "bench-raw"
# The producer's settings: durable like the replicators' producers (acks=all,
# idempotent), batching like a throughput-minded client.
PRODUCER_PROPS = ("acks=all", "enable.idempotence=true", "linger.ms=5", "batch.size=262144")
DEFINITION = (
    "consumer perf (source) and producer perf (target) run at the same time on the data "
    "set; raw MB/s = data set MB / max(consumer fetch seconds, producer seconds)"
)

_PRODUCER_SUMMARY = re.compile(
    r"(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mbs>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency.*50th"
)


@dataclass(frozen=True)
class ToolRun:
    seconds: float
    mb_s: float
    records_s: float


@dataclass(frozen=True)
class RawResult:
    mb_s: float
    records_s: float
    consumer: ToolRun
    producer: ToolRun

    def describe(self) -> dict[str, object]:
        return {
            "definition": DEFINITION,
            "producer_props": list(PRODUCER_PROPS),
            **_rounded(asdict(self)),
        }


def parse_consumer_output(text: str) -> ToolRun:
    """The consumer perf tool's CSV summary (header line, then one line of values)."""
    lines = [line for line in text.splitlines() if line.count(",") >= 9]
    header = next((line for line in lines if "fetch.time.ms" in line), None)
    if header is None or lines[-1] is header:
        raise ValueError(f"no summary in the consumer perf output:\n{text[-2000:]}")
    fields = dict(zip((h.strip() for h in header.split(",")), lines[-1].split(","), strict=False))
    seconds = float(fields["fetch.time.ms"]) / 1000
    return ToolRun(seconds, float(fields["fetch.MB.sec"]), float(fields["fetch.nMsg.sec"]))


def parse_producer_output(text: str) -> ToolRun:
    """The producer perf tool's final line (the one with percentiles)."""
    matches = list(_PRODUCER_SUMMARY.finditer(text))
    if not matches:
        raise ValueError(f"no summary in the producer perf output:\n{text[-2000:]}")
    last = matches[-1]
    records, records_s = int(last["records"]), float(last["rps"])
    return ToolRun(records / records_s, float(last["mbs"]), records_s)


def measure_raw(
    source: str,
    target: str,
    dataset: Dataset,
    folder: Path,
    consumer_properties: Mapping[str, str] | None = None,
) -> RawResult:
    """Run both tools at once on the data set; see the module docstring.
    ``consumer_properties``: the consumer perf tool's client keys (a WAN run's)."""
    target_admin = admin_client(target)
    create_topic(target_admin, RAW_TOPIC, dataset.partitions)
    consumer_args = [
        "--bootstrap-server", source, "--topic", dataset.topic,
        "--messages", str(dataset.records), "--timeout", "60000",
        "--group", f"srm-bench-raw-{time.time_ns()}",
    ]  # fmt: skip
    if consumer_properties:
        config = folder / "raw-consumer.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in consumer_properties.items()))
        consumer_args += ["--consumer.config", str(config)]
    producer_args = [
        "--topic", RAW_TOPIC, "--num-records", str(dataset.records),
        "--record-size", str(dataset.record_size), "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={target}", *PRODUCER_PROPS,
    ]  # fmt: skip
    logs = {name: (folder / f"raw-{name}.log").open("w+") for name in ("consumer", "producer")}
    consumer = _start(tool_command("kafka-consumer-perf-test", consumer_args), logs["consumer"])
    producer = _start(tool_command("kafka-producer-perf-test", producer_args), logs["producer"])
    progress = Progress("raw", "producer perf", dataset.bytes)
    deadline = time.monotonic() + 600 + dataset.mib
    while producer.poll() is None or consumer.poll() is None:
        if time.monotonic() > deadline:
            consumer.kill()
            producer.kill()
            raise RuntimeError(f"raw perf tools still running after the deadline; see {folder}")
        ends = end_offsets_or_none(target_admin, RAW_TOPIC, dataset.partitions)
        progress.update(sum(ends.values()) * dataset.record_size if ends else 0)
        time.sleep(0.5)
    outputs = {}
    for name, log in logs.items():
        log.seek(0)
        outputs[name] = log.read()
        log.close()
    for name, process in (("consumer", consumer), ("producer", producer)):
        if process.returncode != 0:
            raise RuntimeError(
                f"kafka-{name}-perf-test exited with {process.returncode}:\n"
                + outputs[name][-2000:]
            )
    consumed = parse_consumer_output(outputs["consumer"])
    produced = parse_producer_output(outputs["producer"])
    seconds = max(consumed.seconds, produced.seconds)
    return RawResult(
        mb_s=dataset.mib / seconds,
        records_s=dataset.records / seconds,
        consumer=consumed,
        producer=produced,
    )


def _start(command: list[str], log: IO[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _rounded(value: object) -> object:
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    return round(value, 3) if isinstance(value, float) else value

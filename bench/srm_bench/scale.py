"""``make bench-scale`` (``--scale``): a whole cluster's partitions, cold-started.

For each data set size (``--scale-points``, or the one of ``--topics`` x
``--topic-partitions``): fresh clusters; the data set created and loaded on ``primary``;
then MirrorMaker 2 with defaults, MirrorMaker 2 tuned and SRM's driver (standalone), one
after the other on a wiped target, each cold-started with the same MM2 properties file
(``topics = scale\\..*``, the same ``tasks.max``) and measured by
:mod:`srm_bench.scale_catchup`; then SRM under a coordinator with two drivers: the same
cold start, the leader's longest round and the largest event it wrote. JSON under
``bench/results/scale-<time>.json``, a table, and with two or more sizes a PNG plot of
catch-up time against partitions.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition
from srm_local.ports import free_ports

from srm_bench.catchup import ReplicatorFailedError, RunningReplicator
from srm_bench.host_limits import broker_heap, prepare
from srm_bench.machine import ForeignCpu, describe_machine, describe_versions
from srm_bench.options import BenchOptions
from srm_bench.progress import say
from srm_bench.replicators import (
    LABELS,
    MM2,
    MM2_TUNED,
    SRM,
    Replicator,
    mirrormaker2,
    replicator_properties,
    shared_properties,
    srm_driver,
    srm_driver_command,
    write_properties,
)
from srm_bench.scale_catchup import ScaleResult, measure
from srm_bench.scale_data import ScaleDataset, setup, topic_pattern
from srm_bench.scale_latency import measure_spread_latency
from srm_bench.scale_report import plot, table
from srm_bench.stack import TARGET, BenchStack, delete_consumer_groups, delete_topics_except

COORDINATED = "srm_coordinated"
EVENTS_TOPIC = "srm-control.log.internal"  # the target cluster's log (flows into it)


@dataclass
class ScalePoint:
    dataset: ScaleDataset
    setup_seconds: dict[str, float] = field(default_factory=dict)
    systems: dict[str, ScaleResult] = field(default_factory=dict)
    coordinated: dict[str, object] | None = None
    errors: dict[str, str] = field(default_factory=dict)
    foreign_cpu: dict[str, float] = field(default_factory=dict)

    def describe(self) -> dict[str, object]:
        return {
            "dataset": self.dataset.describe(),
            "setup_seconds": {k: round(v, 1) for k, v in self.setup_seconds.items()},
            "systems": {name: result.describe() for name, result in self.systems.items()},
            "coordinated": self.coordinated,
            "errors": self.errors,
            "foreign_cpu_share": {k: round(v, 3) for k, v in self.foreign_cpu.items()},
        }


def datasets(options: BenchOptions) -> list[ScaleDataset]:
    per_topic = options.topic_partitions
    counts = options.scale_points or (options.topics * per_topic,)
    return [
        ScaleDataset(
            max(1, count // per_topic),
            per_topic,
            options.records_per_partition,
            options.record_size,
        )
        for count in counts
    ]


def run_scale(options: BenchOptions, folder: Path, started_at: datetime) -> int:
    largest = max(dataset.total_partitions for dataset in datasets(options))
    blocked = prepare(-(-largest // options.brokers))  # what each broker holds
    if blocked:
        say("this host cannot hold the largest point's partitions:\n  " + "\n  ".join(blocked))
        return 2
    points: list[ScalePoint] = []
    interrupted = False
    try:
        for dataset in datasets(options):
            # Listed before it runs: an interrupted point keeps what it measured.
            points.append(ScalePoint(dataset))
            _run_point(options, folder, points[-1])
    except KeyboardInterrupt:
        say("interrupted; stopping everything")
        interrupted = True
    document = {
        "schema_version": 1,
        "kind": "scale",
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "machine": describe_machine(),
        "versions": describe_versions(),
        "options": options.describe(),
        "points": [point.describe() for point in points],
    }
    stamp = started_at.strftime("%Y-%m-%dT%H-%M-%SZ")
    options.results_dir.mkdir(parents=True, exist_ok=True)
    path = options.results_dir / f"scale-{stamp}.json"
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    say("\n" + table(document) + "\n")
    say(f"results: {path}")
    if len(points) > 1:
        picture = plot(document, options.results_dir / f"scale-{stamp}.png")
        say(f"plot: {picture}")
    if interrupted:
        return 130
    return 1 if any(point.errors for point in points) else 0


def _run_point(options: BenchOptions, folder: Path, point: ScalePoint) -> None:
    dataset = point.dataset
    where = folder / f"p{dataset.total_partitions}"
    where.mkdir(parents=True, exist_ok=True)
    per_broker = -(-dataset.total_partitions // options.brokers)
    stack = BenchStack(where, heap=broker_heap(per_broker), brokers=options.brokers)
    say(
        f"scale: {dataset.total_partitions:,} partitions; starting fresh clusters of"
        f" {options.brokers} broker(s) in {where}"
    )
    stack.start()
    try:
        point.setup_seconds = dict(
            setup(stack.source_admin(), stack.source.bootstrap_servers, dataset)
        )
        keep = set(dataset.topic_names())
        for name in _systems(options):
            say(f"{LABELS[name]} ({dataset.total_partitions:,} partitions):")
            try:
                with ForeignCpu() as foreign:
                    point.systems[name] = _run_one(name, options, stack, where, dataset, keep)
                point.foreign_cpu[name] = foreign.share
            except (ReplicatorFailedError, RuntimeError, TimeoutError, KafkaException) as exc:
                point.errors[name] = str(exc)
                say(f"  {LABELS[name]} FAILED: {exc}")
        if not options.skip_srm and not options.skip_coordinator:
            say(f"SRM under a coordinator with two drivers ({dataset.total_partitions:,}):")
            try:
                point.coordinated = _run_coordinated(options, stack, where, dataset, keep)
            except (
                ReplicatorFailedError,
                RuntimeError,
                TimeoutError,
                OSError,
                KafkaException,
            ) as exc:
                point.errors[COORDINATED] = str(exc)
                say(f"  coordinated FAILED: {exc}")
    finally:
        say("stopping the clusters...")
        stack.stop(keep_data=options.keep_data)


def _systems(options: BenchOptions) -> list[str]:
    chosen = [(MM2, options.skip_mm2), (MM2_TUNED, options.skip_mm2_tuned), (SRM, options.skip_srm)]
    return [name for name, skipped in chosen if not skipped]


def _fresh_target(stack: BenchStack, keep: set[str]) -> None:
    say(f"  wiping and restarting backup ({stack.reset_target():.1f} s)")
    source = stack.source_admin()
    for topic in delete_topics_except(source, keep):
        say(f"  deleted {topic} on primary")
    delete_consumer_groups(source)


def _properties(options: BenchOptions, stack: BenchStack) -> dict[str, str]:
    shared = shared_properties(
        stack.source.bootstrap_servers,
        stack.target.bootstrap_servers,
        # Java properties read "\\." as "\." : the regex scale\..* for every replicator.
        [topic_pattern().replace("\\", "\\\\")],
        options.tasks_max,
    )
    shared["refresh.topics.interval.seconds"] = str(options.refresh_seconds)
    return shared


def _deadlines(options: BenchOptions, dataset: ScaleDataset) -> tuple[float, float]:
    catchup = options.catchup_timeout or 300.0 + dataset.total_partitions / 40
    return catchup, options.refresh_seconds * 3 + 60.0


def _run_one(
    name: str,
    options: BenchOptions,
    stack: BenchStack,
    folder: Path,
    dataset: ScaleDataset,
    keep: set[str],
) -> ScaleResult:
    _fresh_target(stack, keep)
    if name == SRM:
        replicator = srm_driver(folder, options.spark_master)
    else:
        replicator = mirrormaker2(folder, options.mm2_heap, name)
    extra = options.srm_set if name == SRM else options.mm2_set
    write_properties(
        replicator.config_path, replicator_properties(name, _properties(options, stack)), extra
    )
    say(f"  starting {replicator.display()}\n  log: {replicator.log_path}")
    catchup, new_topic = _deadlines(options, dataset)
    with RunningReplicator(replicator) as running:
        result = measure(
            running,
            stack.target_admin(),
            stack.source.bootstrap_servers,
            stack.source_admin(),
            dataset,
            deadline=catchup,
            stall=options.stall_seconds,
            new_topic_deadline=new_topic,
        )
        if result.never is None and not options.skip_latency:
            try:
                steady = measure_spread_latency(
                    replicator.label,
                    stack.source.bootstrap_servers,
                    stack.target.bootstrap_servers,
                    dataset,
                    rate=options.latency_rate,
                    seconds=options.latency_seconds,
                    warmup=options.latency_warmup,
                ).describe()
            except (RuntimeError, KafkaException) as exc:  # the catch-up figures still count
                steady = {"error": str(exc)}
                say(f"  {replicator.label}: steady latency FAILED: {exc}")
            result = replace(result, steady_latency=steady)
        running.stop()
    return result


def _run_coordinated(
    options: BenchOptions,
    stack: BenchStack,
    folder: Path,
    dataset: ScaleDataset,
    keep: set[str],
) -> dict[str, object]:
    """A coordinator and two drivers (``local[1]`` each) cold-started on the data set:
    every record copied, the leader's rounds, the largest event in the log."""
    _fresh_target(stack, keep)
    config = folder / "srm-coordinated.properties"
    write_properties(config, _properties(options, stack), options.srm_set)
    coordinator_port, *driver_ports = free_ports(3)
    env: dict[str, str] = {}  # the drivers need no jars (the copy slots are Python)
    bin_dir = Path(sys.executable).parent
    coordinator = _process(
        "coordinator",
        [
            str(bin_dir / "srm-coordinator"),
            "--config",
            str(config),
            "--id",
            "c1",
            "--port",
            str(coordinator_port),
            "--apply-config",
            "--state-file",
            "none",
        ],
        config,
        folder,
        env,
    )
    drivers = [
        _process(
            f"driver-{index}",
            [
                *srm_driver_command(),
                "--config",
                str(config),
                "--id",
                f"d{index}",
                "--port",
                str(port),
                "--spark-master",
                options.spark_master or "local[1]",
            ],
            config,
            folder,
            env,
        )
        for index, port in enumerate(driver_ports, start=1)
    ]
    catchup, new_topic = _deadlines(options, dataset)
    catchup += 120  # three services to start, not one
    runners = [RunningReplicator(p) for p in (coordinator, *drivers)]
    for runner in runners:
        runner.__enter__()
    try:
        # Catch-up is timed from the coordinator's start; memory and CPU are the first
        # driver's (each holds about half of the partitions).
        result = measure(
            _Timed(runners[1], runners[0].started),
            stack.target_admin(),
            stack.source.bootstrap_servers,
            stack.source_admin(),
            dataset,
            deadline=catchup,
            stall=options.stall_seconds,
            new_topic_deadline=new_topic,
        )
        leader = _get_json(f"http://127.0.0.1:{coordinator_port}/v1/leader")
    finally:
        for runner in reversed(runners):
            runner.stop()
    sizes = _event_sizes(stack.target.bootstrap_servers)
    logs = leader.get("logs", {}) if isinstance(leader, dict) else {}
    rounds = logs.get(TARGET, {}).get("rounds", {}) if isinstance(logs, dict) else {}
    say(
        f"  coordinated: rounds {rounds}; largest event {max(sizes, default=0):,} bytes of"
        f" {len(sizes)}"
    )
    return {
        **result.describe(),
        "rounds": rounds,
        "events": len(sizes),
        "largest_event_bytes": max(sizes, default=0),
        "event_bytes_total": sum(sizes),
    }


class _Timed:
    """A running process measured from another's start (the coordinator's)."""

    def __init__(self, runner: RunningReplicator, started: float) -> None:
        self._runner = runner
        self.replicator = runner.replicator
        self.monitor = runner.monitor
        self._started = started

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def check_running(self) -> None:
        self._runner.check_running()


def _process(
    label: str, command: list[str], config: Path, folder: Path, env: dict[str, str]
) -> Replicator:
    LABELS.setdefault(label, f"SRM {label}")
    return Replicator(label, command, config, folder / f"srm-{label}.log", env)


def _get_json(url: str) -> object:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.loads(answer.read())
    except OSError as exc:
        return {"error": str(exc)}


def _event_sizes(bootstrap: str, timeout: float = 30) -> list[int]:
    """Bytes of every record of the event log, read to its end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{os.getpid()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "log_level": 2,
        }
    )
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(EVENTS_TOPIC, 0), timeout)
        consumer.assign([TopicPartition(EVENTS_TOPIC, 0, 0)])
        sizes: list[int] = []
        deadline = time.monotonic() + timeout
        idle = 0
        # Transaction markers take offsets too: read until nothing more comes.
        while high > 0 and idle < 2 and time.monotonic() < deadline:
            batch = consumer.consume(500, 1.0)
            idle = 0 if batch else idle + 1
            sizes.extend(len(m.value() or b"") for m in batch if m.error() is None)
        return sizes
    finally:
        consumer.close()

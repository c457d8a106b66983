"""One benchmark run, start to end: clusters, data set, raw limit, each replicator, report.

Order: start ``primary`` and ``backup``; load the data set into ``primary``; run the
perf tools (raw limit); then MirrorMaker 2 with defaults, MirrorMaker 2 tuned and SRM's
driver one after the other, each on a freshly wiped ``backup`` (see ``stack.py``) and a
source cleaned of the previous replicator's topics and groups: catch-up first, then the
latency phase while it keeps running. A replicator that fails is reported as failed;
the others still run.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Protocol

from confluent_kafka import KafkaException
from srm_local.clusters import ClusterStartError
from srm_local.jars import JarFetchError
from srm_local.paths import run_dir

from srm_bench.catchup import ReplicatorFailedError, RunningReplicator, measure_catchup
from srm_bench.codec import measure_codec
from srm_bench.dataset import load_dataset
from srm_bench.latency import measure_latency
from srm_bench.machine import ForeignCpu, describe_machine, describe_versions
from srm_bench.options import MIB, BenchOptions, parse_options
from srm_bench.progress import say
from srm_bench.raw_limit import measure_raw_limit
from srm_bench.replicators import (
    LABELS,
    MM2,
    MM2_TUNED,
    SRM,
    SRM_DRIVERS,
    SRM_RECORDS,
    SRM_STANDALONE,
    TARGET,
    Replicator,
    latency_topic,
    mirrormaker2,
    remote_topic,
    replicator_properties,
    shared_properties,
    srm_driver,
    srm_driver_available,
    write_properties,
)
from srm_bench.report import BenchReport, SystemResult
from srm_bench.stack import (
    BenchStack,
    create_topic,
    delete_consumer_groups,
    delete_topics_except,
    stop_orphaned_stacks,
)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    started_at = datetime.now(UTC).replace(microsecond=0)
    folder = run_dir() / f"bench-{started_at.strftime('%Y%m%dT%H%M%SZ')}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench.pid").write_text(f"{os.getpid()}\n")
    for stale in stop_orphaned_stacks(run_dir()):
        say(f"stopped a cluster left by a killed bench run: {stale}")
    report = BenchReport(
        options=options,
        dataset=options.dataset(),
        started_at=started_at,
        run_folder=folder,
        machine=describe_machine(),
        versions=describe_versions(),
    )
    signal.signal(signal.SIGTERM, _interrupt)
    if options.scale:
        from srm_bench.scale import run_scale

        return run_scale(options, folder, started_at)
    if options.wan:
        from srm_bench.wan import run_wan

        return run_wan(options, folder, started_at)
    stack = BenchStack(folder)
    try:
        _run(options, report, stack, folder)
    except KeyboardInterrupt:
        say("interrupted; stopping everything")
        return 130
    except (ClusterStartError, JarFetchError, KafkaException, RuntimeError, TimeoutError) as exc:
        say(f"make bench failed before any replicator ran: {exc}")
        return 2
    finally:
        say("stopping the clusters...")
        stack.stop(keep_data=options.keep_data)
    report.finished_at = datetime.now(UTC).replace(microsecond=0)
    say("\n" + report.table() + "\n")
    path = report.write_json(options.results_dir)
    say(f"results: {_relative(path)}; logs and configurations: {_relative(folder)}")
    return 1 if report.errors else 0


def _run(options: BenchOptions, report: BenchReport, stack: BenchStack, folder: Path) -> None:
    dataset = report.dataset
    say(
        f"make bench: {dataset.records:,} records of {dataset.record_size} B "
        f"({dataset.mib:,.0f} MB) in {dataset.partitions} partitions; run folder {folder}"
    )
    say("starting clusters primary (source) and backup (target)...")
    stack.start()
    say(f"  primary {stack.source.bootstrap_servers}, backup {stack.target.bootstrap_servers}")
    report.load_seconds = load_dataset(stack.source.bootstrap_servers, dataset)
    if not options.skip_raw:
        say("raw limit: the best of the Python copy loop's settings and Kafka's perf tools")
        try:
            with ForeignCpu() as foreign:
                report.raw = measure_raw_limit(options, stack, folder)
            report.foreign_cpu["raw"] = foreign.share
            say(f"  raw: {report.raw.mb_s:.1f} MB/s ({report.raw.best.name})")
        except (RuntimeError, ValueError) as exc:  # no candidate ran
            report.errors["raw"] = str(exc)
            say(f"  raw limit FAILED: {exc}")
    for name in systems_to_run(options):
        say(f"{LABELS[name]}:")
        try:
            with ForeignCpu() as foreign:
                report.systems[name] = run_replicator(name, options, stack, folder, report)
            report.foreign_cpu[name] = foreign.share
        except (ReplicatorFailedError, RuntimeError, TimeoutError) as exc:
            report.errors[name] = str(exc)
            say(f"  {LABELS[name]} FAILED: {exc}")
        except Exception as exc:  # noqa: BLE001 - one replicator's bug must not lose the others
            report.errors[name] = f"{type(exc).__name__}: {exc}"
            say(f"  {LABELS[name]} FAILED:\n{traceback.format_exc()}")
    if options.spark_workers:
        _run_spark_standalone(options, report, stack, folder)


def _run_spark_standalone(
    options: BenchOptions, report: BenchReport, stack: BenchStack, folder: Path
) -> None:
    """SRM's driver on a Spark standalone cluster (--spark standalone:N), in a run folder
    of its own (its srm.properties and srm.log beside the Spark master's and workers')."""
    from srm_bench.spark_run import run_standalone

    own = folder / "spark-standalone"
    own.mkdir(exist_ok=True)

    def run(
        name: str,
        *,
        spark_master: str,
        started: Callable[[], None],
        caught_up: Callable[[], None],
    ) -> SystemResult:
        return run_replicator(
            name, options, stack, own, report,
            spark_master=spark_master, started=started, caught_up=caught_up,
        )  # fmt: skip

    try:
        with ForeignCpu() as foreign:
            report.spark, report.systems[SRM_STANDALONE] = run_standalone(
                options.spark_workers, options.spark_worker_cores, own, run
            )
        report.foreign_cpu[SRM_STANDALONE] = foreign.share
    except (ReplicatorFailedError, RuntimeError, TimeoutError) as exc:
        report.errors[SRM_STANDALONE] = str(exc)
        say(f"  {LABELS[SRM_STANDALONE]} FAILED: {exc}")


def systems_to_run(options: BenchOptions) -> list[str]:
    systems = []
    if not options.skip_mm2:
        systems.append(MM2)
    if not options.skip_mm2_tuned:
        systems.append(MM2_TUNED)
    if not options.skip_srm:
        systems.append(SRM)
    if options.srm_records:
        systems.append(SRM_RECORDS)
    return systems


def run_replicator(
    name: str,
    options: BenchOptions,
    stack: BenchStack,
    folder: Path,
    report: BenchReport | WanConfigs,
    *,
    source_bootstrap: str | None = None,
    before_start: Callable[[Mapping[str, str]], None] | None = None,
    spark_master: str | None = None,
    started: Callable[[], None] | None = None,
    caught_up: Callable[[], None] | None = None,
) -> SystemResult:
    """Run replicator ``name`` on a wiped target: catch-up, then (unless skipped) latency.
    ``source_bootstrap`` is the source as the replicator sees it (a WAN run: the proxy);
    ``before_start`` gets the properties written, just before the replicator starts;
    ``spark_master``: SRM's, instead of --spark-master; ``started``/``caught_up``: called
    as the replicator starts and once every record is on the target (the Spark workers'
    CPU, spark_run.py)."""
    dataset = options.dataset()
    if name in SRM_DRIVERS and not srm_driver_available():
        raise RuntimeError("srm-driver is not installed in this environment (.venv/bin/srm-driver)")
    say(f"  wiping and restarting backup ({stack.reset_target():.1f} s)")
    source_admin = stack.source_admin()
    for topic in delete_topics_except(source_admin, {dataset.topic}):
        say(f"  deleted {topic} on primary")
    delete_consumer_groups(source_admin)
    latency = latency_topic(name)
    create_topic(source_admin, latency, dataset.partitions)
    replicator = _replicator(name, options, folder, spark_master)
    shared = shared_properties(
        source_bootstrap or stack.source.bootstrap_servers,
        stack.target.bootstrap_servers,
        [dataset.topic, latency],
        dataset.partitions,
    )
    extra = options.srm_set if name in SRM_DRIVERS else options.mm2_set
    if name == MM2_TUNED and options.codec:
        # A careful operator compresses a compressed topic's copy (srm_bench/codec.py).
        extra = (f"{TARGET}.producer.compression.type={options.codec}", *extra)
    properties = replicator_properties(name, shared, wan=bool(options.wan))
    written = write_properties(replicator.config_path, properties, extra)
    report.configs[name] = {
        "config_file": replicator.config_path.name,
        "log_file": replicator.log_path.name,
        "command": replicator.display(),
        "properties": written,
    }
    if before_start is not None:
        before_start(written)
    say(f"  starting {replicator.display()}\n  log: {replicator.log_path}")
    if started is not None:
        started()
    with RunningReplicator(replicator) as running:
        catchup = measure_catchup(
            running, stack.target_admin(), dataset, options.catchup_deadline()
        )
        if caught_up is not None:
            caught_up()
        say(
            f"  {replicator.label}: caught up in {catchup.wall_seconds:.1f} s; copy "
            f"{catchup.mb_s:.1f} MB/s ({catchup.records_s:,.0f} records/s), "
            f"{_per_gib(catchup.cpu_s_per_gib)} CPU s per GiB copied, "
            f"peak RSS {catchup.peak_rss_mb:,.0f} MB"
        )
        codec = None
        if options.codec:
            codec = measure_codec(
                stack.source.folder,
                stack.target.folder,
                stack.target.bootstrap_servers,
                dataset.topic,
                remote_topic(dataset.topic),
            )
            codecs = "/".join(codec.target_codecs)
            say(
                f"  {replicator.label}: target {codec.target_mb:,.1f} MB"
                f" ({codec.target_ratio:.2f} x the source), batches {codecs}"
            )
        latency_result = None
        if not options.skip_latency:
            latency_result = measure_latency(
                label=replicator.label,
                source=stack.source.bootstrap_servers,
                target=stack.target.bootstrap_servers,
                topic=latency,
                remote=remote_topic(latency),
                partitions=dataset.partitions,
                record_size=dataset.record_size,
                rate=options.latency_rate,
                seconds=options.latency_seconds,
                warmup=options.latency_warmup,
            )
        running.check_running()
        running.stop()
        assert running.monitor is not None
        peak = running.monitor.peak
        say(f"  {replicator.label}: stopped in {running.stop_seconds:.1f} s")
        return SystemResult(
            catchup,
            latency_result,
            peak.rss_bytes / MIB,
            running.stop_seconds,
            tuple((command, rss / MIB) for command, rss in peak.members),
            codec,
        )


class WanConfigs(Protocol):
    """Where a run keeps each replicator's configuration (BenchReport, or a WAN point)."""

    configs: dict[str, dict[str, object]]


def _replicator(
    name: str, options: BenchOptions, folder: Path, spark_master: str | None = None
) -> Replicator:
    if name in (MM2, MM2_TUNED):
        return mirrormaker2(folder, options.mm2_heap, name)
    return srm_driver(folder, spark_master or options.spark_master, name)


def _per_gib(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())

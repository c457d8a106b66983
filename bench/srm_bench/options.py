"""The benchmark's command-line options and the data set they describe."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from srm_local.paths import project_root

from srm_bench.codec import CODECS

MIB = 1024 * 1024
GIB = 1024 * MIB


@dataclass(frozen=True)
class Dataset:
    """The fixed data set every measurement copies: ``records`` values of ``record_size``
    bytes (no key, no headers), spread round-robin over ``partitions`` of ``topic``."""

    topic: str
    partitions: int
    record_size: int
    records: int
    # --codec: written compressed with it, as JSON values (bench/srm_bench/codec.py).
    codec: str | None = None

    @property
    def bytes(self) -> int:
        return self.records * self.record_size

    @property
    def mib(self) -> float:
        return self.bytes / MIB

    def describe(self) -> dict[str, object]:
        return {**asdict(self), "bytes": self.bytes, "mb": round(self.mib, 1)}


@dataclass(frozen=True)
class BenchOptions:
    size_mb: int = 1024
    partitions: int = 8
    record_size: int = 1024
    latency_seconds: float = 45.0
    latency_rate: int = 500
    latency_warmup: float = 15.0
    skip_srm: bool = False
    skip_mm2: bool = False
    skip_mm2_tuned: bool = False
    skip_raw: bool = False
    # --batch-copy: the batch pass-through prototype beside the raw limit (batch_loop.py).
    batch_copy: bool = False
    # --srm-records: SRM's driver again with srm.copy.batches = false, its own column.
    srm_records: bool = False
    skip_latency: bool = False
    spark_master: str | None = None
    # --spark standalone:N: SRM again on a standalone cluster of N workers (spark_run.py).
    spark_workers: int = 0
    spark_worker_cores: int = 1
    srm_set: tuple[str, ...] = ()
    mm2_set: tuple[str, ...] = ()
    mm2_heap: str = "2g"
    catchup_timeout: float | None = None
    results_dir: Path = field(default_factory=lambda: project_root() / "bench" / "results")
    keep_data: bool = False
    # --scale: many topics of a few partitions, cold starts (bench/srm_bench/scale.py).
    scale: bool = False
    topics: int = 1000
    topic_partitions: int = 10
    records_per_partition: int = 20
    tasks_max: int = 4
    scale_points: tuple[int, ...] = ()
    refresh_seconds: int = 10
    stall_seconds: float = 120.0
    skip_coordinator: bool = False
    brokers: int = 1
    # --wan: the copy reads the source through Toxiproxy at these round trips (wan.py).
    wan: tuple[int, ...] = ()
    codec: str | None = None

    def dataset(self) -> Dataset:
        records = max(1, self.size_mb * MIB // self.record_size)
        return Dataset("bench-data", self.partitions, self.record_size, records, self.codec)

    def catchup_deadline(self) -> float:
        """Seconds a replicator may take to catch up: start-up plus 1 MB/s at worst."""
        if self.catchup_timeout is not None:
            return self.catchup_timeout
        return 180.0 + self.size_mb

    def describe(self) -> dict[str, object]:
        described = asdict(self)
        described["results_dir"] = str(self.results_dir)
        return described


def parse_options(argv: Sequence[str] | None = None) -> BenchOptions:
    parser = argparse.ArgumentParser(
        prog="make bench",
        description=(
            "Measure SRM's driver and Apache MirrorMaker 2 (with defaults and tuned) on the "
            "same data in one run: "
            "catch-up throughput, memory, end-to-end latency, against Kafka's perf tools. "
            "Details: docs/benchmark.md."
        ),
    )
    add = parser.add_argument
    add("--size-mb", type=_positive_int, default=1024, help="data set size in MiB (1024)")
    add("--partitions", type=_positive_int, default=8, help="partitions of the data set (8)")
    add("--record-size", type=_positive_int, default=1024, help="value bytes per record (1024)")
    add("--latency-seconds", type=float, default=45.0, help="steady-rate phase length (45)")
    add("--latency-rate", type=_positive_int, default=500, help="records/s in that phase (500)")
    add("--latency-warmup", type=float, default=15.0, help="seconds excluded at its start (15)")
    add("--skip-srm", action="store_true", help="do not run SRM's driver")
    add("--skip-mm2", action="store_true", help="do not run MirrorMaker 2 with defaults")
    add("--skip-mm2-tuned", action="store_true", help="do not run MirrorMaker 2 tuned")
    add("--skip-raw", action="store_true", help="do not run Kafka's perf tools")
    add("--skip-latency", action="store_true", help="catch-up only, no latency phase")
    add(
        "--batch-copy",
        action="store_true",
        help="also run the batch pass-through prototype (record batches copied as they are,"
        " never decoded; srm_bench.batch_loop) beside the raw limit, reported apart from it",
    )
    add(
        "--srm-records",
        action="store_true",
        help="also run SRM's driver with srm.copy.batches = false (records copied one by one,"
        " as before the batch copy became the default), as a column of its own",
    )
    add("--spark-master", help="passed to srm-driver as --spark-master (e.g. local[2])")
    add(
        "--spark",
        type=_spark_cluster,
        default=0,
        metavar="standalone:N",
        help="after the others, run SRM's driver again on a Spark standalone cluster of N"
        " workers started from the PySpark install, and compare it with SRM on local[*]"
        " (throughput, CPU per worker)",
    )
    add(
        "--spark-worker-cores",
        type=_positive_int,
        default=1,
        help="cores of each worker of --spark standalone:N (1)",
    )
    add(
        "--srm-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra key for SRM's configuration (repeatable)",
    )
    add(
        "--mm2-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra key for both MirrorMaker 2 files, default and tuned (repeatable)",
    )
    add("--mm2-heap", default="2g", help="MirrorMaker 2's -Xmx (2g, as connect-mirror-maker.sh)")
    add("--catchup-timeout", type=float, help="seconds per replicator (180 + size in MiB)")
    add("--results-dir", type=Path, help="where the JSON goes (bench/results)")
    add("--keep-data", action="store_true", help="keep the clusters' data folders afterwards")
    add(
        "--wan",
        type=_round_trips,
        default=(),
        metavar="RTT_MS[,RTT_MS...]",
        help="WAN run instead: the replicators read the source through Toxiproxy with this"
        " round trip added, one measurement of each at each (e.g. 0,50,150); catch-up only;"
        " builds Toxiproxy with 'go install' when absent (docs/benchmark.md, WAN)",
    )
    add(
        "--codec",
        choices=CODECS,
        help="a compressed topic: JSON values written with this codec; reports CPU per GiB,"
        " target bytes and codec (e.g. make bench BENCH_ARGS='--codec zstd --size-mb 200"
        " --skip-latency --skip-raw')",
    )
    scale = parser.add_argument_group(
        "scale (--scale)",
        "many topics cold-started instead of one topic's throughput: docs/benchmark.md, Scale",
    )
    scale.add_argument(
        "--scale", action="store_true", help="run the scale benchmark instead (make bench-scale)"
    )
    scale.add_argument("--topics", type=_positive_int, default=1000, help="topics (1000)")
    scale.add_argument(
        "--topic-partitions", type=_positive_int, default=10, help="partitions a topic (10)"
    )
    scale.add_argument(
        "--records-per-partition", type=_positive_int, default=20, help="records each (20)"
    )
    scale.add_argument(
        "--tasks-max", type=_positive_int, default=4, help="tasks.max of every replicator (4)"
    )
    scale.add_argument(
        "--scale-points",
        type=_partition_counts,
        default=(),
        metavar="N,N,...",
        help="run the data set at these total partition counts (topics = N / partitions a"
        " topic), one after the other on fresh clusters, and plot catch-up against them"
        " (e.g. 1000,5000,10000,30000)",
    )
    scale.add_argument(
        "--refresh-seconds",
        type=_positive_int,
        default=10,
        help="refresh.topics.interval.seconds of every replicator (10)",
    )
    scale.add_argument(
        "--stall-seconds",
        type=float,
        default=120.0,
        help="no progress for this long, with a repeated fatal error in the log: never (120)",
    )
    scale.add_argument(
        "--brokers",
        type=_positive_int,
        default=1,
        help="brokers a cluster (1); each holds about 1/N of the partitions, so points past"
        " the host's open-file limit of one broker fit (e.g. --brokers 2 for 30000)",
    )
    scale.add_argument(
        "--skip-coordinator",
        action="store_true",
        help="leave out the run under a coordinator with two drivers",
    )
    args = parser.parse_args(argv)
    for item in (*args.srm_set, *args.mm2_set):
        if "=" not in item:
            parser.error(f"'{item}' is not KEY=VALUE")
    if args.spark and args.spark_master:
        parser.error(
            "--spark standalone:N runs SRM on its own Spark cluster after SRM on"
            " local[*]; leave out --spark-master"
        )
    if args.latency_warmup >= args.latency_seconds and not args.skip_latency:
        parser.error("--latency-warmup must be shorter than --latency-seconds")
    if args.brokers > 1 and not args.scale:
        parser.error("--brokers is for the scale benchmark (make bench-scale)")
    if args.wan and args.scale:
        parser.error("--wan and --scale are separate benchmarks: give one of them")
    extra = {"results_dir": args.results_dir} if args.results_dir else {}
    return BenchOptions(
        size_mb=args.size_mb,
        partitions=args.partitions,
        record_size=args.record_size,
        latency_seconds=args.latency_seconds,
        latency_rate=args.latency_rate,
        latency_warmup=args.latency_warmup,
        skip_srm=args.skip_srm,
        skip_mm2=args.skip_mm2,
        skip_mm2_tuned=args.skip_mm2_tuned,
        skip_raw=args.skip_raw,
        batch_copy=args.batch_copy,
        srm_records=args.srm_records,
        skip_latency=args.skip_latency or bool(args.wan),
        spark_master=args.spark_master,
        spark_workers=args.spark,
        spark_worker_cores=args.spark_worker_cores,
        srm_set=tuple(args.srm_set),
        mm2_set=tuple(args.mm2_set),
        mm2_heap=args.mm2_heap,
        catchup_timeout=args.catchup_timeout,
        keep_data=args.keep_data,
        scale=args.scale,
        topics=args.topics,
        topic_partitions=args.topic_partitions,
        records_per_partition=args.records_per_partition,
        tasks_max=args.tasks_max,
        scale_points=tuple(args.scale_points),
        refresh_seconds=args.refresh_seconds,
        stall_seconds=args.stall_seconds,
        skip_coordinator=args.skip_coordinator,
        brokers=args.brokers,
        wan=tuple(args.wan),
        codec=args.codec,
        **extra,
    )


def _spark_cluster(text: str) -> int:
    """``standalone:N``: the number of workers."""
    kind, _, count = text.partition(":")
    if kind != "standalone" or not count.isdigit() or not 1 <= int(count) <= 16:
        raise argparse.ArgumentTypeError(
            f"expected standalone:N with N workers from 1 to 16 (e.g. standalone:2), got {text!r}"
        )
    return int(count)


def _partition_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(item) for item in text.split(",") if item.strip())
    except ValueError:
        counts = ()
    if not counts or any(count < 1 for count in counts):
        raise argparse.ArgumentTypeError(f"expected partition counts like 1000,5000, got {text}")
    return counts


def _round_trips(text: str) -> tuple[int, ...]:
    try:
        rtts = tuple(int(item) for item in text.split(",") if item.strip())
    except ValueError:
        rtts = ()
    if not rtts or any(rtt < 0 or rtt > 10_000 for rtt in rtts):
        raise argparse.ArgumentTypeError(
            f"expected round trips in ms from 0 to 10000 like 0,50,150, got {text}"
        )
    return rtts


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value

"""``make bench --spark standalone:N``: SRM's driver on a Spark standalone cluster too.

After the replicators of the run (SRM on ``local[*]`` among them, on the same data), a
Spark standalone master and ``N`` workers of ``--spark-worker-cores`` cores start from
the PySpark install (:class:`srm_harness.spark_standalone.SparkStandalone`, the harness of
``tests/integration/test_spark_workers.py``), and SRM's driver runs again, on a wiped
target, with ``--spark-master`` pointing at it: same catch-up and latency phases.

The driver's process tree no longer holds the copy slots: they run in the executors,
which are children of the workers. So the CPU figure is the driver's tree plus each
worker's tree (worker JVM, executor JVM, the slots' Python workers), each worker counted
from the driver's start to the end of catch-up (the worker's own idle start-up before
the driver started is left out); per worker it says how the copy spread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from srm_harness.spark_standalone import SparkStandalone

from srm_bench.options import MIB
from srm_bench.process_tree import TreeMonitor, sample_tree
from srm_bench.progress import say
from srm_bench.replicators import LABELS, SRM_STANDALONE
from srm_bench.report import SystemResult

# session._run_replicator as this module calls it: SRM's driver with the Spark master
# given; ``started()`` just before the driver starts, ``caught_up()`` once every record is
# on the target; the system's figures.
RunReplicator = Callable[..., SystemResult]


@dataclass(frozen=True)
class WorkerFigures:
    name: str
    cpu_seconds: float  # from the driver's start to the end of catch-up
    peak_rss_mb: float  # the worker's tree: worker JVM, executor JVMs, Python workers


@dataclass(frozen=True)
class StandaloneRun:
    """SRM on the standalone cluster, beside the same run's SRM on ``local[*]``."""

    workers: int
    cores_per_worker: int
    master_url: str
    worker_figures: tuple[WorkerFigures, ...]
    driver_cpu_seconds: float
    driver_peak_rss_mb: float
    copy_mb_s: float
    catchup_seconds: float
    first_record_seconds: float
    latency_p99_ms: float | None
    # The latency phase's numbered records: missing and doubled on the target.
    latency_lost: int | None = None
    latency_duplicates: int | None = None

    @property
    def cpu_seconds(self) -> float:
        return self.driver_cpu_seconds + sum(w.cpu_seconds for w in self.worker_figures)

    def describe(self) -> dict[str, object]:
        return {
            "workers": self.workers,
            "cores_per_worker": self.cores_per_worker,
            "master_url": self.master_url,
            "copy_mb_s": round(self.copy_mb_s, 2),
            "catchup_seconds": round(self.catchup_seconds, 1),
            "first_record_seconds": round(self.first_record_seconds, 1),
            "latency_p99_ms": _round(self.latency_p99_ms),
            "cpu_seconds": round(self.cpu_seconds, 1),
            "driver_cpu_seconds": round(self.driver_cpu_seconds, 1),
            "driver_peak_rss_mb": round(self.driver_peak_rss_mb, 1),
            "latency_lost": self.latency_lost,
            "latency_duplicates": self.latency_duplicates,
            "per_worker": [
                {
                    "worker": w.name,
                    "cpu_seconds": round(w.cpu_seconds, 1),
                    "peak_rss_mb": round(w.peak_rss_mb, 1),
                }
                for w in self.worker_figures
            ],
        }

    def table_lines(self, local: SystemResult | None) -> list[str]:
        """The comparison with SRM on ``local[*]`` (``local``: its SystemResult, if it ran)."""
        cores = f"{self.cores_per_worker} core{'s' if self.cores_per_worker > 1 else ''}"
        label = f"{LABELS[SRM_STANDALONE]} ({self.workers} x {cores})"
        width = len(label) + 2
        lines = [f"{'':<34}{'SRM local[*]':>14}{label:>{width}}"]

        def row(name: str, mine: float | None, theirs: float | None, spec: str) -> None:
            cells = ["-" if v is None else format(v, spec) for v in (theirs, mine)]
            lines.append(f"{name:<34}{cells[0]:>14}{cells[1]:>{width}}")

        catchup = local.catchup if local else None
        latency = local.latency if local else None
        row("copy rate, MB/s", self.copy_mb_s, getattr(catchup, "mb_s", None), ".1f")
        row("catch-up incl. start-up, s", self.catchup_seconds,
            getattr(catchup, "wall_seconds", None), ".1f")  # fmt: skip
        row("start-up to first record, s", self.first_record_seconds,
            getattr(catchup, "first_record_seconds", None), ".1f")  # fmt: skip
        row("CPU time to catch up, s", self.cpu_seconds,
            getattr(catchup, "cpu_seconds", None), ".1f")  # fmt: skip
        row("latency p99, ms", self.latency_p99_ms, getattr(latency, "p99_ms", None), ",.1f")
        lines.append(
            f"  of which the driver's tree: {self.driver_cpu_seconds:.1f} CPU s, peak RSS "
            f"{self.driver_peak_rss_mb:,.0f} MB"
        )
        if self.latency_lost is not None:
            lines.append(
                f"  latency phase on Spark standalone: {self.latency_lost} missing, "
                f"{self.latency_duplicates} duplicates"
            )
        for worker in self.worker_figures:
            lines.append(
                f"  {worker.name}: {worker.cpu_seconds:.1f} CPU s, peak RSS "
                f"{worker.peak_rss_mb:,.0f} MB (worker, executor, copy slots)"
            )
        return lines


def run_standalone(
    workers: int, cores: int, folder: Path, run_replicator: RunReplicator
) -> tuple[StandaloneRun, SystemResult]:
    """Start the cluster, run SRM's driver on it, stop the cluster. The run's figures and
    the driver's SystemResult (for the report's systems)."""
    say(f"{LABELS[SRM_STANDALONE]}: a master and {workers} worker(s) of {cores} core(s)...")
    cluster = SparkStandalone(folder / "spark", workers=workers, cores=cores, memory="2g")
    cluster.start()
    try:
        say(f"  Spark master {cluster.master_url}, {cluster.alive_workers()} worker(s) alive")
        monitors = {name: TreeMonitor(pid).__enter__() for name, pid in cluster.worker_pids()}
        at_start: dict[str, float] = {}
        cpu: dict[str, float] = {}

        def started() -> None:
            at_start.update({n: sample_tree(m.root).cpu_seconds for n, m in monitors.items()})

        def caught_up() -> None:
            for name, monitor in monitors.items():
                cpu[name] = monitor.sample().cpu_seconds - at_start.get(name, 0.0)

        try:
            result = run_replicator(
                SRM_STANDALONE, spark_master=cluster.master_url, started=started,
                caught_up=caught_up,
            )  # fmt: skip
        finally:
            for monitor in monitors.values():
                monitor.__exit__(None, None, None)
    finally:
        cluster.stop()
    catchup, latency = result.catchup, result.latency
    run = StandaloneRun(
        workers=workers,
        cores_per_worker=cores,
        master_url=cluster.master_url,
        worker_figures=tuple(
            WorkerFigures(name, cpu.get(name, 0.0), monitors[name].peak_rss_bytes / MIB)
            for name in monitors
        ),
        driver_cpu_seconds=catchup.cpu_seconds,
        driver_peak_rss_mb=result.peak_rss_mb,
        copy_mb_s=catchup.mb_s,
        catchup_seconds=catchup.wall_seconds,
        first_record_seconds=catchup.first_record_seconds,
        latency_p99_ms=latency.p99_ms if latency else None,
        latency_lost=latency.lost if latency else None,
        latency_duplicates=latency.duplicates if latency else None,
    )
    say(
        f"  {LABELS[SRM_STANDALONE]}: {run.copy_mb_s:.1f} MB/s, {run.cpu_seconds:.1f} CPU s "
        f"({run.driver_cpu_seconds:.1f} in the driver, "
        + ", ".join(f"{w.name} {w.cpu_seconds:.1f}" for w in run.worker_figures)
        + ")"
    )
    return run, result


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)

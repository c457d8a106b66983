"""A report with fixed figures, for the tests of its table and JSON (test_bench_parts.py,
test_spark_run.py): one builder, so a field added to a result is added here once."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from srm_bench.catchup import CatchupResult
from srm_bench.latency import LatencyResult
from srm_bench.options import BenchOptions
from srm_bench.raw import RawResult, ToolRun
from srm_bench.raw_limit import PERF_TOOLS, RawCandidate, RawLimit
from srm_bench.replicators import MM2, MM2_TUNED, SRM
from srm_bench.report import BenchReport, SystemResult


def sample_report(
    *,
    with_mm2: bool = False,
    with_tuned: bool = False,
    with_srm: bool = True,
    with_raw: bool = True,
    **options: object,
) -> BenchReport:
    """A 100 MB run's report: SRM, MM2 and MM2 tuned as asked (MM2 tuned faster and with
    a worse latency), the raw limit of two candidates unless ``with_raw`` is false;
    ``options``: more :class:`BenchOptions` (``spark_workers=2``)."""
    bench_options = BenchOptions(size_mb=100, **options)  # type: ignore[arg-type]
    report = BenchReport(
        options=bench_options,
        dataset=bench_options.dataset(),
        started_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        run_folder=Path("/tmp/run"),
        machine={"cores": 2, "ram_gib": 23.5},
        versions={},
    )
    if with_raw:
        report.raw = RawLimit(
            (RawCandidate("Python loop, 2 processes", 30.0, 30720.0, 8.0, 300.0),
             RawCandidate(PERF_TOOLS, 25.0, 25600.0)),
            RawResult(25.0, 25600.0, ToolRun(2.0, 50.0, 51200.0), ToolRun(4.0, 25.0, 25600.0)),
        )  # fmt: skip
    catchup = CatchupResult(20.0, 8.0, 12.0, 102400, 15.0, 15360.0, 5.0, 600.0, 30.0, 4, 0,
                            12.0, 6.0)  # fmt: skip
    latency = LatencyResult(50.0, 300.0, 80.0, 400.0, 100, 100, 0, 0, 0, 120, 500.0)
    if with_srm:
        report.systems[SRM] = SystemResult(catchup, latency, 650.0, 1.0)
    if with_mm2:
        report.systems[MM2] = SystemResult(catchup, latency, 1500.0, 1.0)
    if with_tuned:
        faster = CatchupResult(15.0, 8.0, 6.0, 102400, 30.0, 30720.0, 6.7, 700.0, 20.0, 1, 0,
                               18.0, 9.0)  # fmt: skip
        slower = LatencyResult(100.0, 600.0, 120.0, 800.0, 100, 100, 0, 0, 0, 120, 500.0)
        report.systems[MM2_TUNED] = SystemResult(faster, slower, 1300.0, 1.0)
    return report

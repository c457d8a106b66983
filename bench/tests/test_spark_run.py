"""`make bench --spark standalone:N`: its option, and how its figures are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_samples import sample_report
from srm_bench.options import parse_options
from srm_bench.report import BenchReport
from srm_bench.spark_run import StandaloneRun, WorkerFigures


def test_spark_standalone_names_its_workers() -> None:
    options = parse_options(["--spark", "standalone:2", "--spark-worker-cores", "2"])
    assert (options.spark_workers, options.spark_worker_cores) == (2, 2)
    assert parse_options([]).spark_workers == 0


@pytest.mark.parametrize("value", ["standalone", "standalone:0", "local:2", "standalone:x", "2"])
def test_a_malformed_spark_cluster_is_one_message(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_options(["--spark", value])
    assert exited.value.code == 2
    assert "expected standalone:N" in capsys.readouterr().err


def test_spark_standalone_and_a_spark_master_are_refused_together(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        parse_options(["--spark", "standalone:2", "--spark-master", "local[2]"])
    assert "leave out --spark-master" in capsys.readouterr().err


def _run() -> StandaloneRun:
    return StandaloneRun(
        workers=2,
        cores_per_worker=1,
        master_url="spark://127.0.0.1:7077",
        worker_figures=(
            WorkerFigures("worker-0", 6.5, 700.0),
            WorkerFigures("worker-1", 5.5, 650.0),
        ),
        driver_cpu_seconds=3.0,
        driver_peak_rss_mb=400.0,
        copy_mb_s=12.0,
        catchup_seconds=40.0,
        first_record_seconds=20.0,
        latency_p99_ms=45.0,
        latency_lost=0,
        latency_duplicates=0,
    )


def _report() -> BenchReport:
    report = sample_report(with_raw=False, spark_workers=2)
    report.spark = _run()
    return report


def test_the_cpu_of_a_standalone_run_is_the_drivers_and_every_workers() -> None:
    assert _run().cpu_seconds == 3.0 + 6.5 + 5.5


def test_the_table_sets_the_standalone_run_beside_srm_on_local(tmp_path: Path) -> None:
    table = _report().table()
    lines = table.splitlines()
    (header,) = [line for line in lines if "SRM on Spark standalone (2 x 1 core)" in line]
    assert "SRM local[*]" in header and "]  SRM on Spark" in header
    # Every figure of the comparison ends under its heading.
    spark_rows = lines[lines.index(header) : lines.index(header) + 6]
    assert len({len(line) for line in spark_rows}) == 1
    spark = lines[lines.index(header) :]
    (rate,) = [line for line in spark if line.startswith("copy rate, MB/s")]
    assert rate.split()[-2:] == ["15.0", "12.0"]
    (cpu,) = [line for line in spark if line.startswith("CPU time to catch up, s")]
    assert cpu.split()[-2:] == ["30.0", "15.0"]
    assert "  worker-0: 6.5 CPU s, peak RSS 700 MB (worker, executor, copy slots)" in lines
    assert "  latency phase on Spark standalone: 0 missing, 0 duplicates" in lines
    assert "  of which the driver's tree: 3.0 CPU s, peak RSS 400 MB" in lines


def test_the_json_keeps_the_standalone_run_per_worker(tmp_path: Path) -> None:
    data = json.loads(_report().write_json(tmp_path).read_text())
    spark = data["spark_standalone"]
    assert spark["cpu_seconds"] == 15.0 and spark["driver_cpu_seconds"] == 3.0
    assert [w["worker"] for w in spark["per_worker"]] == ["worker-0", "worker-1"]
    assert spark["copy_mb_s"] == 12.0 and spark["latency_duplicates"] == 0
    assert data["options"]["spark_workers"] == 2

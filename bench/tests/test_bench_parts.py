"""The benchmark's pure parts: tool output parsing, percentiles, configuration, report."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from srm_bench.catchup import CatchupResult
from srm_bench.dataset import expected_end_offsets, record_values
from srm_bench.latency import LatencyResult, percentile
from srm_bench.options import BenchOptions, parse_options
from srm_bench.raw import RawResult, ToolRun, parse_consumer_output, parse_producer_output
from srm_bench.replicators import shared_properties, write_properties
from srm_bench.report import BenchReport, SystemResult
from srm_common.config.loader import load_config

CONSUMER_OUTPUT = """\
start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, \
rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-11-20 22:25:34:971, 2026-11-20 22:25:38:004, 100.0000, 32.9707, 102400, 33761.9519, \
666, 2367, 42.2476, 43261.5125
"""
PRODUCER_OUTPUT = """\
51201 records sent, 10238.2 records/sec (10.00 MB/sec), 900.1 ms avg latency, 1400.0 ms max latency.
102400 records sent, 29698.4 records/sec (29.00 MB/sec), 729.83 ms avg latency, \
1473.00 ms max latency, 610 ms 50th, 1331 ms 95th, 1384 ms 99th, 1471 ms 99.9th.
"""


def test_consumer_summary_uses_fetch_time_when_the_tool_prints_its_csv() -> None:
    run = parse_consumer_output(CONSUMER_OUTPUT)
    assert run == ToolRun(seconds=2.367, mb_s=42.2476, records_s=43261.5125)


def test_producer_summary_is_the_final_line_when_progress_lines_precede_it() -> None:
    run = parse_producer_output(PRODUCER_OUTPUT)
    assert run.mb_s == 29.0 and run.records_s == 29698.4
    assert run.seconds == pytest.approx(102400 / 29698.4)


def test_parsing_fails_loudly_when_a_tool_printed_no_summary() -> None:
    with pytest.raises(ValueError, match="no summary"):
        parse_consumer_output("WARN something went wrong\n")
    with pytest.raises(ValueError, match="no summary"):
        parse_producer_output(PRODUCER_OUTPUT.splitlines()[0])


def test_percentile_is_nearest_rank_when_values_are_sorted() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


def test_dataset_is_size_over_record_size_spread_round_robin_when_options_are_defaults() -> None:
    dataset = BenchOptions().dataset()
    assert dataset.records == 1024 * 1024 and dataset.bytes == 2**30
    ends = expected_end_offsets(BenchOptions(size_mb=1, record_size=1000).dataset())
    assert sum(ends.values()) == 1048 and max(ends.values()) - min(ends.values()) <= 1


def test_record_values_are_the_same_in_every_run() -> None:
    assert record_values(16) == record_values(16)
    assert len(set(record_values(1024))) == 64


def test_shared_configuration_loads_in_srm_when_written_as_mm2_properties(tmp_path: Path) -> None:
    path = tmp_path / "srm.properties"
    properties = shared_properties("127.0.0.1:1", "127.0.0.1:2", ["bench-data", "bench-x"], 8)
    write_properties(path, properties, ["srm.batch.max.records=1000"])
    flow = load_config(path).flow("primary", "backup")
    assert flow.enabled and flow.tasks_max == 8
    assert flow.topics == ("bench-data", "bench-x")
    assert "srm.batch.max.records = 1000" in path.read_text()


def test_options_reject_a_warmup_longer_than_the_latency_phase() -> None:
    with pytest.raises(SystemExit):
        parse_options(["--latency-seconds", "5", "--latency-warmup", "5"])


def _report(with_mm2: bool) -> BenchReport:
    options = BenchOptions(size_mb=100)
    report = BenchReport(
        options=options,
        dataset=options.dataset(),
        started_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        run_folder=Path("/tmp/run"),
        machine={"cores": 2, "ram_gib": 23.5},
        versions={},
        raw=RawResult(30.0, 30720.0, ToolRun(2.0, 50.0, 51200.0), ToolRun(3.3, 30.0, 30720.0)),
    )
    catchup = CatchupResult(20.0, 8.0, 12.0, 102400, 15.0, 15360.0, 5.0, 600.0, 30.0, 4, 0)
    latency = LatencyResult(50.0, 300.0, 80.0, 400.0, 100, 100, 0, 0, 0, 120, 500.0)
    report.systems["srm"] = SystemResult(catchup, latency, 650.0, 1.0)
    if with_mm2:
        report.systems["mirrormaker2"] = SystemResult(catchup, latency, 1500.0, 1.0)
    return report


def test_json_holds_the_headline_figures_when_a_replicator_was_skipped(tmp_path: Path) -> None:
    path = _report(with_mm2=False).write_json(tmp_path)
    assert path.name == "2026-01-02T03-04-05Z.json"
    data = json.loads(path.read_text())
    assert data["throughput_mb_s"] == {"srm": 15.0, "mirrormaker2": None, "raw": 30.0}
    assert data["latency_ms"]["srm"] == {"p50": 50.0, "p99": 300.0}
    assert data["latency_ms"]["mirrormaker2"] == {"p50": None, "p99": None}
    assert data["ratios"]["srm_over_raw"] == 0.5 and data["ratios"]["srm_over_mm2"] is None


def test_table_shows_ratios_when_both_replicators_ran() -> None:
    table = _report(with_mm2=True).table()
    copy_row = next(line for line in table.splitlines() if line.startswith("copy rate, MB/s"))
    assert copy_row.split()[-2:] == ["1.00", "0.50"]
    assert "raw limit: consumer perf" in table

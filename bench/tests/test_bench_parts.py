"""The benchmark's pure parts: tool output parsing, percentiles, configuration, report."""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import replace
from pathlib import Path

import pytest
from bench_samples import sample_report
from srm_bench.codec import CodecResult, json_values, log_bytes
from srm_bench.dataset import expected_end_offsets, record_values
from srm_bench.latency import LatencyResult, percentile, windows
from srm_bench.options import BenchOptions, parse_options
from srm_bench.raw import ToolRun, parse_consumer_output, parse_producer_output
from srm_bench.replicators import (
    MM2,
    MM2_TUNED,
    MM2_TUNED_PROPERTIES,
    SRM,
    SRM_RECORDS,
    latency_topic,
    mirrormaker2,
    replicator_properties,
    shared_properties,
    srm_driver,
    write_properties,
)
from srm_bench.session import systems_to_run
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


def test_tuned_file_is_the_default_file_plus_the_tuned_keys_when_written() -> None:
    shared = shared_properties("127.0.0.1:1", "127.0.0.1:2", ["bench-data", "bench-x"], 8)
    default, tuned = replicator_properties(MM2, shared), replicator_properties(MM2_TUNED, shared)
    assert default == shared
    assert replicator_properties(SRM, shared) == shared
    assert tuned == {**shared, **MM2_TUNED_PROPERTIES}
    assert not set(MM2_TUNED_PROPERTIES) & set(shared), "tuning adds keys, changes none"


def test_tuned_keys_are_cluster_prefixed_client_keys_when_mm2_reads_them() -> None:
    # Dedicated-mode MM2 reads <alias>.producer.* into the target's worker producer and
    # <alias>.consumer.* into the source consumers; any other spelling would be ignored.
    for key in MM2_TUNED_PROPERTIES:
        assert key.startswith(("backup.producer.", "primary.consumer.")), key
    assert MM2_TUNED_PROPERTIES["backup.producer.batch.size"] == "262144"
    assert MM2_TUNED_PROPERTIES["backup.producer.compression.type"] == "none"
    # More than one request in flight only with idempotence, which keeps the order.
    assert MM2_TUNED_PROPERTIES["backup.producer.max.in.flight.requests.per.connection"] == "5"
    assert MM2_TUNED_PROPERTIES["backup.producer.enable.idempotence"] == "true"
    # The latency phase: no fetch may wait for more bytes, no batch for long.
    assert MM2_TUNED_PROPERTIES["primary.consumer.fetch.min.bytes"] == "1"
    assert int(MM2_TUNED_PROPERTIES["backup.producer.linger.ms"]) <= 5


def test_tuned_file_resolves_to_the_data_clients_when_loaded_as_mm2_properties(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mm2-tuned.properties"
    shared = shared_properties("127.0.0.1:1", "127.0.0.1:2", ["bench-data", "bench-x"], 8)
    written = write_properties(path, replicator_properties(MM2_TUNED, shared), [])
    assert written == {**shared, **MM2_TUNED_PROPERTIES}
    flow = load_config(path).flow("primary", "backup")
    assert flow.target_producer["batch.size"] == "262144"
    assert flow.target_producer["max.in.flight.requests.per.connection"] == "5"
    assert flow.source_consumer["max.poll.records"] == "4096"


def test_command_line_keys_win_over_tuned_keys_when_both_set_one(tmp_path: Path) -> None:
    shared = shared_properties("127.0.0.1:1", "127.0.0.1:2", ["bench-data"], 8)
    written = write_properties(
        tmp_path / "mm2-tuned.properties",
        replicator_properties(MM2_TUNED, shared),
        ["backup.producer.batch.size = 65536"],
    )
    assert written["backup.producer.batch.size"] == "65536"


def test_tuned_mm2_has_its_own_file_log_and_latency_topic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_java = ["java", "-Xmx2g", "-Dlog4j2.configurationFile=x", "-cp", "jars", "Main"]
    monkeypatch.setattr(
        "srm_bench.replicators.tool_command", lambda _tool, args, heap: [*fake_java, *args]
    )
    default, tuned = mirrormaker2(tmp_path, "2g"), mirrormaker2(tmp_path, "2g", MM2_TUNED)
    assert (default.name, default.config_path.name, default.log_path.name) == (
        MM2, "mm2.properties", "mm2.log",
    )  # fmt: skip
    assert (tuned.name, tuned.config_path.name, tuned.log_path.name) == (
        MM2_TUNED, "mm2-tuned.properties", "mm2-tuned.log",
    )  # fmt: skip
    assert tuned.command[-1] == str(tmp_path / "mm2-tuned.properties")
    assert tuned.label == "MM2 tuned"
    assert latency_topic(MM2_TUNED) == "bench-latency-mirrormaker2-tuned"


def test_replicators_run_in_order_and_each_skip_option_leaves_one_out() -> None:
    assert systems_to_run(parse_options([])) == [MM2, MM2_TUNED, SRM]
    assert systems_to_run(parse_options(["--skip-mm2-tuned"])) == [MM2, SRM]
    assert systems_to_run(parse_options(["--skip-srm", "--skip-mm2"])) == [MM2_TUNED]
    assert parse_options(["--skip-mm2-tuned"]).describe()["skip_mm2_tuned"] is True


def _row(table: str, label: str) -> list[str]:
    return next(line for line in table.splitlines() if line.startswith(label))[len(label) :].split()


def test_json_holds_the_headline_figures_when_a_replicator_was_skipped(tmp_path: Path) -> None:
    path = sample_report(with_mm2=False).write_json(tmp_path)
    assert path.name == "2026-01-02T03-04-05Z.json"
    data = json.loads(path.read_text())
    assert data["schema_version"] == 6
    assert data["cpu_s_per_gib"] == {
        "srm": 6.0, "mirrormaker2": None, "mirrormaker2_tuned": None, "raw": 8.0,
    }  # fmt: skip
    assert data["raw"]["best"] == "Python loop, 2 processes"
    assert [c["mb_s"] for c in data["raw"]["candidates"]] == [30.0, 25.0]
    assert data["throughput_mb_s"] == {
        "srm": 15.0,
        "mirrormaker2": None,
        "mirrormaker2_tuned": None,
        "raw": 30.0,
    }
    assert data["latency_ms"]["srm"] == {"p50": 50.0, "p99": 300.0}
    assert data["latency_ms"]["mirrormaker2"] == {"p50": None, "p99": None}
    assert data["latency_ms"]["mirrormaker2_tuned"] == {"p50": None, "p99": None}
    assert data["ratios"]["srm_over_raw"] == 0.5 and data["ratios"]["srm_over_mm2"] is None
    assert data["ratios"]["srm_over_mm2_tuned"] is None
    assert data["mm2_tuned_properties"] == dict(MM2_TUNED_PROPERTIES)


def test_json_has_every_ratio_when_all_three_ran(tmp_path: Path) -> None:
    report = sample_report(with_mm2=True, with_tuned=True)
    report.configs[MM2_TUNED] = {"config_file": "mm2-tuned.properties", "properties": {"a": "b"}}
    data = json.loads(report.write_json(tmp_path).read_text())
    assert data["throughput_mb_s"]["mirrormaker2_tuned"] == 30.0
    assert data["ratios"]["srm_over_mm2"] == 1.0
    assert data["ratios"]["srm_over_mm2_tuned"] == 0.5
    assert data["ratios"]["mm2_tuned_over_mm2"] == 2.0
    assert data["ratios"]["mm2_tuned_over_raw"] == 1.0
    tuned_rows = data["row_ratios"]["srm_over_mm2_tuned"]
    assert tuned_rows["copy_mb_s"] == 0.5 and tuned_rows["latency_p99_ms"] == 0.5
    assert tuned_rows["peak_rss_mb"] == 0.5 and tuned_rows["cpu_seconds"] == 1.5
    assert data["latency_ms"]["mirrormaker2_tuned"] == {"p50": 100.0, "p99": 600.0}
    assert set(data["catchup"]) == {"srm", "mirrormaker2", "mirrormaker2_tuned"}
    assert data["replicator_config"]["mirrormaker2_tuned"]["properties"] == {"a": "b"}


def test_table_shows_ratios_when_both_replicators_ran() -> None:
    table = sample_report(with_mm2=True).table()
    # SRM, MM2, MM2 tuned, raw, SRM/MM2, SRM/MM2-tuned, SRM/raw
    assert _row(table, "copy rate, MB/s") == ["15.0", "15.0", "-", "30.0", "1.00", "-", "0.50"]
    assert "raw limit: the best copy rate of the candidates" in table
    assert (
        "Python loop, 2 processes: 30.0 MB/s, 8.0 CPU s per GiB, peak RSS 300 MB (the limit)"
        in table
    )
    assert "Kafka perf tools: 25.0 MB/s\n" in table


def test_table_has_a_column_and_a_ratio_per_row_for_mm2_tuned_when_it_ran() -> None:
    table = sample_report(with_mm2=True, with_tuned=True).table()
    header = table.splitlines()[2]
    for heading in ("SRM driver", "MirrorMaker 2", "MM2 tuned", "raw limit", "SRM/MM2",
                    "SRM/MM2-tuned", "SRM/raw"):  # fmt: skip
        assert heading in header
    assert _row(table, "copy rate, MB/s") == [
        "15.0", "15.0", "30.0", "30.0", "1.00", "0.50", "0.50",
    ]  # fmt: skip
    assert _row(table, "peak RSS (process tree), MB") == [
        "650", "1,500", "1,300", "-", "0.43", "0.50", "-",
    ]  # fmt: skip
    assert _row(table, "latency p99, ms") == ["300.0", "300.0", "600.0", "-", "1.00", "0.50", "-"]
    assert _row(table, "CPU time to catch up, s")[-2:] == ["1.50", "-"]
    # Every figure lines up under its heading.
    assert len({len(line) for line in table.splitlines()[2:11]}) == 1


def test_the_record_copy_is_a_column_of_its_own_with_its_file_when_asked_for(
    tmp_path: Path,
) -> None:
    """SRM's column runs the driver's defaults (the batch copy); --srm-records adds the
    record copy beside it."""
    options = parse_options(["--srm-records", "--skip-mm2", "--skip-mm2-tuned"])
    assert systems_to_run(options) == [SRM, SRM_RECORDS]
    assert systems_to_run(parse_options([])) == [MM2, MM2_TUNED, SRM]
    shared = {"a": "b"}
    assert replicator_properties(SRM_RECORDS, shared) == {"a": "b", "srm.copy.batches": "false"}
    assert replicator_properties(SRM, shared) == shared
    assert srm_driver(tmp_path, None, SRM_RECORDS).config_path.name == "srm-records.properties"
    assert srm_driver(tmp_path, None).config_path.name == "srm.properties"
    report = sample_report(with_mm2=True)
    plain = report.table()
    report.systems[SRM_RECORDS] = replace(report.systems[SRM], peak_rss_mb=100.0)
    table = report.table()
    assert "SRM records" in table.splitlines()[2] and "SRM records" not in plain
    # SRM, SRM records, MM2, MM2 tuned, raw, SRM/MM2, SRM/MM2-tuned, SRM/raw
    assert _row(table, "peak RSS (process tree), MB")[:3] == ["650", "100", "1,500"]
    assert len({len(line) for line in table.splitlines()[2:11]}) == 1
    assert "srm.copy.batches = false" in table
    data = report.to_json()
    assert data["cpu_s_per_gib"]["srm_records"] == data["cpu_s_per_gib"]["srm"]
    assert data["memory_mb"]["srm_records"]["peak_rss"] == 100.0
    assert "srm_records" not in sample_report(with_mm2=True).to_json()["cpu_s_per_gib"]


def test_table_ratios_are_dashes_when_srm_was_skipped() -> None:
    table = sample_report(with_mm2=True, with_tuned=True, with_srm=False).table()
    assert _row(table, "copy rate, MB/s") == ["-", "15.0", "30.0", "30.0", "-", "-", "-"]
    assert _row(table, "latency p50, ms")[-4:] == ["-", "-", "-", "-"]


def test_table_notes_list_every_tuned_key_when_printed() -> None:
    table = sample_report(with_mm2=True, with_tuned=True).table()
    flat = " ".join(line.strip() for line in table.splitlines())
    assert "MM2 tuned: MirrorMaker 2's file plus" in flat
    for key, value in MM2_TUNED_PROPERTIES.items():
        assert f"{key}={value}" in flat
    tuned_lines = table[table.index("MM2 tuned: MirrorMaker 2's") :].split("\nlatency")[0]
    assert max(len(line) for line in tuned_lines.splitlines()) <= 110


def test_table_notes_say_when_mm2_set_overrides_a_tuned_key() -> None:
    report = sample_report(with_mm2=True, with_tuned=True)
    report.options = BenchOptions(size_mb=100, mm2_set=("backup.producer.batch.size=1",))
    assert "--mm2-set overrides tuned keys: backup.producer.batch.size=1" in report.table()


def test_latency_windows_cover_the_whole_phase_by_sequence_number() -> None:
    rate = 10  # 50 records a window
    latency = {n: float(n % 50) for n in range(120) if n != 60}
    first, second, third = windows(latency, 120, rate)
    assert first == (24.0, 49.0, 49.0), "nearest rank: the 50th of 50"
    assert second[2] == 49.0 and third == (9.0, 19.0, 19.0), "the last window is partial"
    assert all(math.isnan(v) for v in windows({}, 50, rate)[0])
    result = LatencyResult(1.0, 2.0, 1.5, 3.0, 1, 1, 0, 0, 0, 1, 10.0, ((1.0, math.nan, 3.0),))
    assert result.describe()["windows"] == [
        {"start_s": 0, "p50_ms": 1.0, "p99_ms": None, "max_ms": 3.0}
    ]
    (whole,) = windows(latency, 120, rate, seconds=12)  # one window of 120 records
    assert whole == (20.0, 49.0, 49.0)
    by_minute = LatencyResult(1.0, 2.0, 1.5, 3.0, 1, 1, 0, 0, 0, 1, 10.0, (result.windows * 2), 60)
    assert [w["start_s"] for w in by_minute.describe()["windows"]] == [0, 60]


def test_codec_values_are_distinct_json_of_the_record_size_that_compress_as_json() -> None:
    values = json_values(1024, count=512)
    assert len(set(values)) == 512 and {len(v) for v in values} == {1024}
    assert json.loads(values[3])["id"] == 3
    joined = b"".join(values)
    # Compressible as JSON is, not 100x as repeated documents would be.
    assert len(joined) / 6 < len(zlib.compress(joined)) < len(joined) / 1.5
    assert json_values(1024, count=4) == values[:4], "the same documents in every run"


def test_codec_log_bytes_count_only_that_topics_segments(tmp_path: Path) -> None:
    for folder, size in (("t-0", 100), ("t-1", 50), ("t-x-0", 7), ("other-0", 9)):
        (tmp_path / "data" / folder).mkdir(parents=True)
        (tmp_path / "data" / folder / "00000000000000000000.log").write_bytes(b"x" * size)
        (tmp_path / "data" / folder / "00000000000000000000.index").write_bytes(b"x" * 99)
    assert log_bytes(tmp_path, "t") == 150


def test_codec_rows_and_notes_show_only_with_codec() -> None:
    report = sample_report(with_mm2=True)
    assert "target log, MB" not in report.table()
    options = BenchOptions(size_mb=100, codec="zstd")
    coded = sample_report(with_mm2=True)
    coded.options, coded.dataset = options, options.dataset()
    srm, mm2 = coded.systems[SRM], coded.systems[MM2]
    coded.systems[SRM] = replace(srm, codec=CodecResult(10.0, 1.02, ("zstd",)))
    coded.systems[MM2] = replace(mm2, codec=CodecResult(100.0, 10.2, ("none",)))
    table = coded.table()
    assert _row(table, "target bytes / source bytes")[:2] == ["1.02", "10.20"]
    assert "SRM driver target batches: zstd" in table and "compressed with zstd" in table
    assert coded.to_json()["codec"][SRM]["target_codecs"] == ["zstd"]


def test_options_accept_only_known_codecs() -> None:
    assert parse_options(["--codec", "lz4"]).dataset().codec == "lz4"
    with pytest.raises(SystemExit):
        parse_options(["--codec", "brotli"])

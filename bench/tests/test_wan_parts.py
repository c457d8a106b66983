"""The WAN benchmark's parts that need no cluster: options, the source's listeners, the
receive window each replicator gets, the table and plot, and what it says without Go."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_bench.options import parse_options
from srm_bench.replicators import (
    MM2,
    MM2_TUNED,
    MM2_TUNED_PROPERTIES,
    MM2_WAN_TUNED_PROPERTIES,
    SRM,
    SRM_BATCHES,
    SRM_RECORDS,
    replicator_properties,
)
from srm_bench.stack import wan_listener_properties
from srm_bench.toxiproxy import PID_FILE, ToxiproxyMissingError, server_binary, stop_orphan
from srm_bench.wan import JAVA_RECEIVE_BUFFER, receive_window
from srm_bench.wan_report import plot, table


def test_wan_takes_round_trips_and_is_catchup_only() -> None:
    options = parse_options(["--wan", "0,50,150", "--size-mb", "200"])
    assert options.wan == (0, 50, 150)
    assert options.skip_latency, "a WAN run measures catch-up only"
    assert parse_options([]).wan == ()


@pytest.mark.parametrize("bad", ["", "fast", "0,-5", "50,,x", "20000"])
def test_a_bad_round_trip_list_is_one_clear_error(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_options(["--wan", bad])
    assert exited.value.code == 2
    assert "expected round trips in ms" in capsys.readouterr().err


def test_wan_and_scale_are_separate_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_options(["--wan", "50", "--scale"])
    assert "separate benchmarks" in capsys.readouterr().err


def test_the_source_advertises_the_proxy_on_its_wan_listener() -> None:
    """A client that bootstraps through the proxy is sent back to the proxy by metadata;
    the broker's own and the bench's clients keep the direct listener."""
    keys = wan_listener_properties("127.0.0.1", 20000, 20010, 20011)
    assert "WAN://127.0.0.1:20010" in keys["listeners"]
    assert keys["advertised.listeners"] == ("PLAINTEXT://127.0.0.1:20000,WAN://127.0.0.1:20011")
    assert "CONTROLLER://127.0.0.1:20001" in keys["listeners"]
    assert "WAN:PLAINTEXT" in keys["listener.security.protocol.map"]


def test_the_receive_window_follows_each_replicators_own_configuration() -> None:
    """MM2 with defaults keeps Java's 64 KiB receive buffer; MM2 tuned for the WAN lets
    the kernel autotune (-1); SRM's librdkafka clients autotune unless one is set."""
    shared = {"clusters": "primary, backup"}
    assert receive_window(MM2, replicator_properties(MM2, shared, wan=True)) == (
        JAVA_RECEIVE_BUFFER
    )
    assert receive_window(MM2_TUNED, replicator_properties(MM2_TUNED, shared, wan=True)) is None
    assert receive_window(SRM, replicator_properties(SRM, shared, wan=True)) is None
    fixed = {"primary.consumer.receive.buffer.bytes": "131072"}
    assert receive_window(SRM, fixed) == 131072
    assert receive_window(MM2_TUNED, replicator_properties(MM2_TUNED, shared)) == (
        JAVA_RECEIVE_BUFFER
    ), "without --wan, MM2 tuned keeps the loopback keys only"


def test_mm2_tuned_for_the_wan_adds_to_the_loopback_keys() -> None:
    tuned = replicator_properties(MM2_TUNED, {}, wan=True)
    assert tuned["primary.consumer.receive.buffer.bytes"] == "-1"
    assert tuned["primary.consumer.max.partition.fetch.bytes"] == "16777216"
    assert tuned["backup.producer.batch.size"] == MM2_TUNED_PROPERTIES["backup.producer.batch.size"]
    assert set(MM2_WAN_TUNED_PROPERTIES) <= set(tuned)


def _document() -> dict[str, object]:
    def system(rate: float, window: int | None) -> dict[str, object]:
        return {
            "copy_mb_s": rate,
            "catchup_seconds": 30.0,
            "cpu_seconds": 12.0,
            "peak_rss_mb": 900.0,
            "receive_window_bytes": window,
        }

    return {
        "dataset": {"records": 204800, "record_size": 1024, "mb": 200.0, "partitions": 8},
        "mm2_tuned_properties": dict(MM2_WAN_TUNED_PROPERTIES),
        "raw_consumer_properties": {"receive.buffer.bytes": "-1"},
        "points": [
            {
                "rtt_ms": rtt,
                "raw": {"mb_s": 90.0},
                "systems": {
                    SRM: system(100.0 - rtt / 10, None),
                    MM2: system(40.0 / (1 + rtt), 65536),
                    MM2_TUNED: system(60.0 - rtt / 5, None),
                },
                "errors": {"mirrormaker2": "did not catch up\nlog"} if rtt == 150 else {},
                "foreign_cpu_share": {"srm": 0.3} if rtt == 50 else {},
            }
            for rtt in (0, 50, 150)
        ],
    }


def test_the_table_has_a_row_per_round_trip_with_ratios_and_says_what_was_applied(
    tmp_path: Path,
) -> None:
    text = table(_document())  # type: ignore[arg-type]
    assert "make bench --wan 0,50,150" in text
    rows = [line.split() for line in text.splitlines() if line.strip().startswith("50 ")]
    assert rows[0][:4] == ["50", "95.0", "0.8", "50.0"]
    assert rows[0][5] == f"{95.0 / (40.0 / 51):.2f}"
    assert "receive buffer 65,536 B" in text
    assert "receive buffer left to the kernel" in text
    assert "WARNING at 50 ms" in text
    assert "at 150 ms MirrorMaker 2 FAILED: did not catch up" in text
    assert plot(_document(), tmp_path / "wan.png").stat().st_size > 0  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "label", "short"),
    [(SRM_RECORDS, "SRM records", "records"), (SRM_BATCHES, "SRM batches", "batches")],
    ids=["record-copy", "older-files-batch-copy"],
)
def test_srm_s_second_column_gets_its_ratios_when_the_run_had_it(
    tmp_path: Path, name: str, label: str, short: str
) -> None:
    """The record copy (--srm-records); in result files of 27-28 Nov 2026 the batch copy
    (--srm-batches, before it was the default), which the report still reads."""
    document = _document()
    for point in document["points"]:  # type: ignore[attr-defined]
        point["systems"][name] = {"copy_mb_s": 150.0, "catchup_seconds": 12.0,
                                  "cpu_seconds": 5.0, "peak_rss_mb": 700.0,
                                  "receive_window_bytes": None}  # fmt: skip
    text = table(document)  # type: ignore[arg-type]
    assert label in text.splitlines()[3] and f"{short}/tuned" in text.splitlines()[3]
    rows = [line.split() for line in text.splitlines() if line.strip().startswith("50 ")]
    assert rows[0][4] == "150.0"
    assert rows[0][-2:] == [f"{150.0 / (40.0 / 51):.2f}", f"{150.0 / 50.0:.2f}"]
    assert label not in table(_document())  # type: ignore[arg-type]
    assert plot(document, tmp_path / "wan.png").stat().st_size > 0  # type: ignore[arg-type]


def test_without_go_the_bench_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOXIPROXY_SERVER", raising=False)
    monkeypatch.setenv("SRM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToxiproxyMissingError) as missing:
        server_binary()
    text = str(missing.value)
    assert "install Go" in text and "TOXIPROXY_SERVER" in text
    monkeypatch.setenv("TOXIPROXY_SERVER", str(tmp_path / "nothing"))
    with pytest.raises(ToxiproxyMissingError, match="is not a file"):
        server_binary()


def test_a_killed_runs_proxy_is_stopped_by_the_next_run_and_nothing_else(tmp_path: Path) -> None:
    """The pid file names the binary: a pid now used by another program is left alone."""
    import shutil
    import subprocess

    sleep = Path(shutil.which("sleep") or "/bin/sleep").resolve()
    process = subprocess.Popen([str(sleep), "30"])
    try:
        (tmp_path / PID_FILE).write_text(f"{process.pid} /elsewhere/toxiproxy-server\n")
        assert not stop_orphan(tmp_path) and process.poll() is None
        (tmp_path / PID_FILE).write_text(f"{process.pid} {sleep}\n")
        assert stop_orphan(tmp_path)
        assert process.wait(10) != 0 and not (tmp_path / PID_FILE).exists()
    finally:
        process.kill()
        process.wait()
    assert not stop_orphan(tmp_path), "no pid file: nothing to stop"

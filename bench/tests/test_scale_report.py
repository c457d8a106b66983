"""The scale benchmark's table and plot from its JSON document (no clusters)."""

from __future__ import annotations

from pathlib import Path

from srm_bench.options import parse_options
from srm_bench.scale import datasets
from srm_bench.scale_report import merged, plot, table


def result(catchup: float | None, never: str | None = None) -> dict[str, object]:
    return {
        "catchup_seconds": catchup,
        "never": never,
        "first_record_seconds": 9.5,
        "first_copy_p50_seconds": 20.0,
        "first_copy_p99_seconds": 40.0,
        "partitions_complete": 10,
        "records_copied": 200,
        "new_topic_seconds": 6.0 if catchup else None,
        "new_topic_note": None,
        "peak_rss_mb": 900.0,
        "cpu_seconds": 30.0,
    }


def point(partitions: int, mm2: float | None) -> dict[str, object]:
    never = None if mm2 else "its log repeats: Unable to perform excessively large batch operation"
    return {
        "dataset": {
            "topics": partitions // 10,
            "partitions": 10,
            "records": 20,
            "record_size": 1024,
            "total_partitions": partitions,
            "total_records": partitions * 20,
        },
        "systems": {
            "srm": result(50.0),
            "mirrormaker2": result(mm2, never),
            "mirrormaker2_tuned": result(mm2, never),
        },
        "coordinated": {
            **result(70.0),
            "rounds": {"rounds": 4, "last_ms": 20.0, "max_ms": 180.5},
            "events": 12,
            "largest_event_bytes": 41257,
        },
        "errors": {},
    }


DOCUMENT = {
    "options": {"tasks_max": 4, "refresh_seconds": 10, "record_size": 1024},
    "points": [point(1000, 40.0), point(10_000, None)],
}


def test_the_table_shows_never_with_the_error_and_the_coordinated_run() -> None:
    text = table(DOCUMENT)
    assert "10,000 partitions: 1,000 topics x 10 partitions x 20 records" in text
    assert "never (1)" in text and "excessively large batch operation" in text
    assert "every record on the target, s" in text and "1.25" in text  # 50 / 40
    assert "largest event 41,257 bytes" in text and "longest round 180.5 ms" in text


def test_the_plot_is_a_png(tmp_path: Path) -> None:
    path = plot(DOCUMENT, tmp_path / "scale.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_scale_points_give_topics_of_ten_partitions() -> None:
    options = parse_options(["--scale", "--scale-points", "1000,5000,30000"])
    assert [d.total_partitions for d in datasets(options)] == [1000, 5000, 30000]
    default = parse_options(["--scale"])
    assert [(d.topics, d.partitions, d.records) for d in datasets(default)] == [(1000, 10, 20)]


def test_runs_are_merged_by_partition_count() -> None:
    first = {**DOCUMENT, "started_at": "a", "points": [point(5000, 40.0), point(1000, 30.0)]}
    second = {**DOCUMENT, "started_at": "b", "points": [point(10_000, None)]}
    document = merged([first, second])
    assert [p["dataset"]["total_partitions"] for p in document["points"]] == [1000, 5000, 10_000]
    assert document["runs"] == ["a", "b"]
    assert "never (1)" in table(document)


def test_a_later_run_of_srm_alone_keeps_the_earlier_mirrormaker_figures() -> None:
    first = {**DOCUMENT, "started_at": "a", "points": [point(5000, 40.0)]}
    alone = point(5000, 40.0)
    alone["systems"] = {"srm": result(25.0)}
    alone["coordinated"] = None
    second = {**DOCUMENT, "started_at": "b", "points": [alone]}
    (merged_point,) = merged([first, second])["points"]
    assert merged_point["systems"]["srm"]["catchup_seconds"] == 25.0
    assert merged_point["systems"]["mirrormaker2"]["catchup_seconds"] == 40.0
    assert merged_point["coordinated"]["largest_event_bytes"] == 41257


def test_steady_latency_rows_read_the_nested_figures_and_older_results_show_a_dash() -> None:
    document = {
        "options": DOCUMENT["options"],
        "points": [point(1000, 40.0)],
    }
    systems = document["points"][0]["systems"]  # type: ignore[index]
    systems["srm"] = {**systems["srm"], "steady_latency": {"p50_ms": 3.0, "p99_ms": 12.5}}
    systems["mirrormaker2"] = {**systems["mirrormaker2"], "steady_latency": {"p99_ms": 25.0}}
    lines = table(document).splitlines()
    p99 = next(line for line in lines if line.startswith("steady latency p99, ms"))
    assert "12.5" in p99 and "25.0" in p99 and "0.50" in p99  # SRM/MM2
    p50 = next(line for line in lines if line.startswith("steady latency p50, ms"))
    assert p50.split()[-5:] == ["3.0", "-", "-", "-", "-"]


def test_a_steady_latency_that_failed_is_a_note_not_a_figure() -> None:
    document = {"options": DOCUMENT["options"], "points": [point(1000, 40.0)]}
    systems = document["points"][0]["systems"]  # type: ignore[index]
    systems["mirrormaker2"] = {**systems["mirrormaker2"], "steady_latency": {"error": "slow"}}
    text = table(document)
    assert "MirrorMaker 2 steady latency not measured: slow" in text

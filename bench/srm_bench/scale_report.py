"""The scale benchmark's table and plot, from its JSON document (so a plot can be made
again from any results file: ``python -m srm_bench.scale_report FILE``).

With several files (runs of the same options, e.g. 1,000 and 5,000 in one run and 10,000
in the next), their points are put together by partition count into one table and one
plot, saved next to the last file: ``python -m srm_bench.scale_report A.json B.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from srm_bench.replicators import LABELS, MM2, MM2_TUNED, SRM

COLUMNS = (SRM, MM2, MM2_TUNED)
ROWS = (
    ("every record on the target, s", "catchup_seconds"),
    ("first record on the target, s", "first_record_seconds"),
    ("first copy per partition p50, s", "first_copy_p50_seconds"),
    ("first copy per partition p99, s", "first_copy_p99_seconds"),
    ("a new topic copied after, s", "new_topic_seconds"),
    ("peak RSS (process tree), MB", "peak_rss_mb"),
    ("CPU seconds to catch up", "cpu_seconds"),
    ("steady latency p50, ms", "steady_latency.p50_ms"),
    ("steady latency p99, ms", "steady_latency.p99_ms"),
    ("  (the source's acks p99, ms)", "steady_latency.source_ack_p99_ms"),
    ("  (from the ack to the target p99, ms)", "steady_latency.after_ack_p99_ms"),
)


def _value(result: dict | None, key: str) -> object:  # type: ignore[type-arg]
    """``key`` of a replicator's figures; ``a.b`` reads ``b`` of the mapping at ``a``."""
    for part in key.split("."):
        if not isinstance(result, dict):
            return None
        result = result.get(part)
    return result


def table(document: dict) -> str:  # type: ignore[type-arg]
    options = document["options"]
    lines = [
        f"make bench-scale: tasks.max {options['tasks_max']},"
        f" refresh.topics.interval.seconds {options['refresh_seconds']},"
        f" {options['record_size']} B records; times from each process start"
    ]
    for point in document["points"]:
        data = point["dataset"]
        lines.append("")
        lines.append(
            f"{data['total_partitions']:,} partitions: {data['topics']:,} topics x"
            f" {data['partitions']} partitions x {data['records']} records"
            f" ({data['total_records']:,} records)"
        )
        header = f"{'':34}" + "".join(f"{LABELS[c]:>15}" for c in COLUMNS)
        lines.append(header + f"{'SRM/MM2':>10}{'SRM/tuned':>11}")
        notes: list[str] = []
        systems = point["systems"]
        for label, key in ROWS:
            cells = []
            for column in COLUMNS:
                result = systems.get(column)
                if result is None:
                    cells.append(f"{'-':>15}")
                elif key == "catchup_seconds" and result["never"]:
                    notes.append(f"{LABELS[column]} never caught up: {result['never']}")
                    cells.append(f"{'never (' + str(len(notes)) + ')':>15}")
                else:
                    cells.append(f"{_cell(_value(result, key)):>15}")
            srm = _value(systems.get(SRM), key)
            ratios = [_ratio(srm, _value(systems.get(c), key)) for c in (MM2, MM2_TUNED)]
            lines.append(f"{label:34}" + "".join(cells) + f"{ratios[0]:>10}{ratios[1]:>11}")
        coordinated = point.get("coordinated")
        if coordinated:
            rounds = coordinated.get("rounds") or {}
            caught = coordinated.get("catchup_seconds")
            after = f"{caught:.1f} s" if caught is not None else f"never ({coordinated['never']})"
            lines.append(
                f"under a coordinator, 2 drivers: every record after {after}"
                + f"; longest round {rounds.get('max_ms', '-')} ms over {rounds.get('rounds', '-')}"
                f" rounds; largest event {coordinated.get('largest_event_bytes', 0):,} bytes"
                f" of {coordinated.get('events', 0)}"
            )
        for column in COLUMNS:
            failed = _value(systems.get(column), "steady_latency.error")
            if failed:
                notes.append(f"{LABELS[column]} steady latency not measured: {failed}")
        for index, note in enumerate(notes, start=1):
            lines.append(f"  ({index}) {note}")
        for name, error in point.get("errors", {}).items():
            lines.append(f"  {name} FAILED: {error}")
    return "\n".join(lines)


def plot(document: dict, path: Path) -> Path:  # type: ignore[type-arg]
    """Catch-up time against partitions, one line per replicator; a replicator that never
    caught up is marked at the top of the plot, with an x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    points = document["points"]
    xs = [p["dataset"]["total_partitions"] for p in points]
    done = [(p["systems"].get(c) or {}).get("catchup_seconds") for p in points for c in COLUMNS]
    top = max((v for v in done if v is not None), default=60.0) * 1.15
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=120)
    for column, style in zip(COLUMNS, ("o-", "s--", "^-."), strict=True):
        values = [(p["systems"].get(column) or {}).get("catchup_seconds") for p in points]
        ran = [(p["systems"].get(column) or {}) for p in points]
        shown = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if shown:
            axes.plot(*zip(*shown, strict=True), style, label=LABELS[column])
        never = [x for x, r in zip(xs, ran, strict=True) if r and r.get("never")]
        if never:
            axes.plot(never, [top] * len(never), "x", markersize=10, color="red")
    axes.axhline(top, color="red", linewidth=0.5, linestyle=":")
    axes.text(xs[0], top, " x: never caught up", color="red", va="bottom", fontsize=8)
    axes.set_xlabel("partitions (topics of 10 partitions, 20 records each)")
    axes.set_ylabel("cold start to every record on the target, s")
    axes.set_xscale("log")
    axes.set_xticks(xs, [f"{x:,}" for x in xs])
    axes.xaxis.set_minor_formatter(NullFormatter())  # only the measured counts
    axes.set_ylim(0, top * 1.1)
    axes.legend(loc="lower right")
    axes.set_title("make bench-scale: catch-up time against partitions")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


def _ratio(srm: object, other: object) -> str:
    if not isinstance(srm, int | float) or not isinstance(other, int | float) or not other:
        return "-"
    return f"{srm / other:.2f}"


def merged(documents: list[dict]) -> dict:  # type: ignore[type-arg]
    """One document of several runs' points, by partition count: a later run's figures of
    a replicator replace an earlier run's of the same count (a run of SRM alone updates
    SRM's figures and keeps MirrorMaker 2's); the options are the first run's, and every
    run's start is kept in ``runs``."""
    points: dict[int, dict] = {}  # type: ignore[type-arg]
    for document in documents:
        for point in document["points"]:
            count = point["dataset"]["total_partitions"]
            earlier = points.get(count)
            if earlier is None:
                points[count] = point
                continue
            points[count] = {
                **earlier,
                **point,
                "systems": {**earlier.get("systems", {}), **point.get("systems", {})},
                "errors": {**earlier.get("errors", {}), **point.get("errors", {})},
                "coordinated": point.get("coordinated") or earlier.get("coordinated"),
            }
    return {
        **documents[0],
        "runs": [d.get("started_at") for d in documents],
        "points": [points[count] for count in sorted(points)],
    }


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m srm_bench.scale_report RESULTS.json [MORE.json ...]")
        return 2
    files = [Path(name) for name in argv]
    loaded = merged([json.loads(path.read_text()) for path in files])
    print(table(loaded))
    if len(loaded["points"]) > 1:
        print(plot(loaded, files[-1].with_suffix(".png")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

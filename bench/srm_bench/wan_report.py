"""The WAN benchmark's table and plot, from its JSON document, so both can be made again
from a results file: ``PYTHONPATH=bench .venv/bin/python -m srm_bench.wan_report FILE``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from srm_bench.replicators import LABELS, MM2, MM2_TUNED, SRM, SRM_BATCHES, SRM_RECORDS

COLUMNS = (SRM, MM2, MM2_TUNED)
STYLES = {SRM: "o-", MM2: "s--", MM2_TUNED: "^-.", SRM_RECORDS: "D-", SRM_BATCHES: "D-"}
# SRM's second column, if the run had one: the record copy (--srm-records), or in result
# files of 27-28 Nov 2026 the batch copy (--srm-batches, before it was the default).
EXTRA = {SRM_RECORDS: "records", SRM_BATCHES: "batches"}
BLOCKS = (
    ("copy rate, MB/s (first to last record)", "copy_mb_s", ".1f"),
    ("catch-up incl. start-up, s", "catchup_seconds", ".1f"),
    ("CPU seconds to catch up (start-up incl.)", "cpu_seconds", ".1f"),
    ("peak RSS (process tree), MB", "peak_rss_mb", ",.0f"),
)


def table(document: dict[str, Any]) -> str:
    data = document["dataset"]
    rtts = ",".join(str(p["rtt_ms"]) for p in document["points"])
    lines = [
        f"make bench --wan {rtts}: {data['records']:,} records x {data['record_size']} B ="
        f" {data['mb']:,} MB in {data['partitions']} partitions; the source behind Toxiproxy"
    ]
    columns = _columns(document)
    extra = EXTRA.get(columns[-1])
    for title, key, spec in BLOCKS:
        lines += ["", title]
        head = f"{'RTT ms':>7}" + "".join(f"{LABELS[c]:>15}" for c in columns)
        rated = key == "copy_mb_s"
        lines.append(head + (f"{'raw limit':>11}" if rated else "") + f"{'SRM/MM2':>9}"
                     f"{'SRM/tuned':>11}" + (f"{extra + '/MM2':>13}{extra + '/tuned':>15}"
                     if extra else ""))  # fmt: skip
        for point in document["points"]:
            values = [(point["systems"].get(c) or {}).get(key) for c in columns]
            row = f"{point['rtt_ms']:>7}" + "".join(f"{_cell(v, spec):>15}" for v in values)
            if rated:
                raw = (point.get("raw") or {}).get("mb_s")
                row += f"{_cell(raw, spec):>11}"
            row += f"{_ratio(values[0], values[1]):>9}{_ratio(values[0], values[2]):>11}"
            if extra:
                row += f"{_ratio(values[3], values[1]):>13}{_ratio(values[3], values[2]):>15}"
            lines.append(row)
    lines.append("")
    lines += _notes(document)
    return "\n".join(lines)


def _notes(document: dict[str, Any]) -> list[str]:
    notes = ["round trip: Toxiproxy adds half of it each way on every connection to the source"]
    windows: dict[str, set[object]] = {}
    for point in document["points"]:
        for name, figures in point["systems"].items():
            windows.setdefault(name, set()).add(figures.get("receive_window_bytes"))
    for name, found in windows.items():
        sizes = sorted((w for w in found if w), key=int)  # type: ignore[arg-type]
        if sizes:
            notes.append(
                f"{LABELS[name]}: receive buffer {', '.join(f'{w:,}' for w in sizes)} B, so at"
                " most one buffer per round trip per connection (bandwidth toxic)"
            )
        else:
            notes.append(f"{LABELS[name]}: receive buffer left to the kernel (autotuned)")
    tuned = ", ".join(f"{k}={v}" for k, v in document.get("mm2_tuned_properties", {}).items())
    notes.append(f"{LABELS[MM2_TUNED]}: {tuned}")
    raw = ", ".join(f"{k}={v}" for k, v in document.get("raw_consumer_properties", {}).items())
    notes.append(f"raw limit: consumer perf across the WAN ({raw}), producer perf on the target")
    for point in document["points"]:
        busy = {k: v for k, v in point.get("foreign_cpu_share", {}).items() if v > 0.1}
        if busy:
            shares = ", ".join(f"{k} {v:.0%}" for k, v in busy.items())
            notes.append(f"WARNING at {point['rtt_ms']} ms: other processes used CPU ({shares})")
        for name, error in point.get("errors", {}).items():
            notes.append(f"at {point['rtt_ms']} ms {LABELS.get(name, name)} FAILED:"
                         f" {error.splitlines()[0] if error else ''}")  # fmt: skip
    return notes


def plot(document: dict[str, Any], path: Path) -> Path:
    """Copy rate against round trip: one line per replicator, and the raw limit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = document["points"]
    xs = [p["rtt_ms"] for p in points]
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=120)
    for column in _columns(document):
        style = STYLES[column]
        values = [(p["systems"].get(column) or {}).get("copy_mb_s") for p in points]
        shown = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if shown:
            axes.plot(*zip(*shown, strict=True), style, label=LABELS[column])
    raw = [(x, (p.get("raw") or {}).get("mb_s")) for x, p in zip(xs, points, strict=True)]
    raw = [(x, v) for x, v in raw if v is not None]
    if raw:
        axes.plot(*zip(*raw, strict=True), ":", color="grey", label="raw limit (perf tools)")
    data = document["dataset"]
    axes.set_xlabel("round trip between the copy and the source, ms")
    axes.set_ylabel("copy rate, MB/s")
    axes.set_xticks(xs)
    axes.set_ylim(bottom=0)
    axes.legend(loc="best")
    axes.set_title(
        f"make bench --wan: {data['mb']:,} MB, {data['partitions']} partitions,"
        f" {data['record_size']} B records"
    )
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


def _columns(document: dict[str, Any]) -> tuple[str, ...]:
    """SRM, both MirrorMaker 2 runs, and SRM's second column (:data:`EXTRA`) when the
    run had one."""
    for name in EXTRA:
        if any(name in point["systems"] for point in document["points"]):
            return (*COLUMNS, name)
    return COLUMNS


def _cell(value: object, spec: str) -> str:
    return "-" if not isinstance(value, int | float) else format(value, spec)


def _ratio(srm: object, other: object) -> str:
    if not isinstance(srm, int | float) or not isinstance(other, int | float) or not other:
        return "-"
    return f"{srm / other:.2f}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m srm_bench.wan_report RESULTS.json")
        return 2
    path = Path(argv[0])
    document = json.loads(path.read_text())
    print(table(document))
    if len(document["points"]) > 1:
        print(plot(document, path.with_suffix(".png")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

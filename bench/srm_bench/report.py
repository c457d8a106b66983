"""A benchmark run's results: the table on the terminal and the JSON kept in git."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from srm_bench.catchup import CatchupResult
from srm_bench.latency import LatencyResult
from srm_bench.options import BenchOptions, Dataset
from srm_bench.raw import DEFINITION as RAW_DEFINITION
from srm_bench.raw import RawResult
from srm_bench.replicators import LABELS, MM2, SRM

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SystemResult:
    """One replicator's figures: catch-up, then latency, with its process tree's peak."""

    catchup: CatchupResult
    latency: LatencyResult | None
    peak_rss_mb: float
    stop_seconds: float | None
    peak_members: tuple[tuple[str, float], ...] = ()  # (command, RSS MB) at the peak


@dataclass
class BenchReport:
    options: BenchOptions
    dataset: Dataset
    started_at: datetime
    run_folder: Path
    machine: dict[str, object]
    versions: dict[str, object]
    load_seconds: float | None = None
    raw: RawResult | None = None
    systems: dict[str, SystemResult] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    foreign_cpu: dict[str, float] = field(default_factory=dict)  # phase -> share of CPUs
    finished_at: datetime | None = None

    def throughput_mb_s(self) -> dict[str, float | None]:
        rates = {name: _get(self.systems.get(name), "catchup", "mb_s") for name in (SRM, MM2)}
        return {**rates, "raw": self.raw.mb_s if self.raw else None}

    def throughput_records_s(self) -> dict[str, float | None]:
        rates = {name: _get(self.systems.get(name), "catchup", "records_s") for name in (SRM, MM2)}
        return {**rates, "raw": self.raw.records_s if self.raw else None}

    def to_json(self) -> dict[str, object]:
        mb_s = self.throughput_mb_s()
        return {
            "schema_version": SCHEMA_VERSION,
            "started_at": self.started_at.isoformat(timespec="seconds"),
            "finished_at": self.finished_at.isoformat(timespec="seconds")
            if self.finished_at
            else None,
            "units": {"mb": "MiB (2^20 bytes), as Kafka's perf tools count", "time": "seconds"},
            "dataset": self.dataset.describe(),
            "throughput_mb_s": _rounded(mb_s),
            "throughput_records_s": _rounded(self.throughput_records_s(), 0),
            "ratios": {
                "srm_over_mm2": _ratio(mb_s[SRM], mb_s[MM2]),
                "srm_over_raw": _ratio(mb_s[SRM], mb_s["raw"]),
                "mm2_over_raw": _ratio(mb_s[MM2], mb_s["raw"]),
            },
            "latency_ms": {
                name: {
                    "p50": _round(_get(self.systems.get(name), "latency", "p50_ms"), 1),
                    "p99": _round(_get(self.systems.get(name), "latency", "p99_ms"), 1),
                }
                for name in (SRM, MM2)
            },
            "memory_mb": {
                name: {
                    "peak_rss": round(result.peak_rss_mb, 1),
                    "peak_rss_catchup": round(result.catchup.peak_rss_mb, 1),
                    "processes": result.catchup.processes,
                    "at_peak": [
                        {"process": command, "rss": round(rss, 1)}
                        for command, rss in result.peak_members
                    ],
                }
                for name, result in self._ran().items()
            },
            "catchup": {name: result.catchup.describe() for name, result in self._ran().items()},
            "latency": {
                name: result.latency.describe() if result.latency else None
                for name, result in self._ran().items()
            },
            "stop_seconds": {
                name: _round(result.stop_seconds) for name, result in self._ran().items()
            },
            "raw": self.raw.describe() if self.raw else None,
            "load_seconds": _round(self.load_seconds),
            "errors": self.errors,
            "foreign_cpu_share": {phase: round(v, 3) for phase, v in self.foreign_cpu.items()},
            "machine": self.machine,
            "versions": self.versions,
            "options": self.options.describe(),
            "run_folder": str(self.run_folder),
        }

    def write_json(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.started_at.strftime('%Y-%m-%dT%H-%M-%SZ')}.json"
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        return path

    def table(self) -> str:
        srm, mm2 = self.systems.get(SRM), self.systems.get(MM2)
        raw = self.raw
        rows: list[tuple[str, float | None, float | None, float | None, str]] = [
            ("copy rate, MB/s", _get(srm, "catchup", "mb_s"), _get(mm2, "catchup", "mb_s"),
             raw.mb_s if raw else None, ".1f"),
            ("copy rate, records/s", _get(srm, "catchup", "records_s"),
             _get(mm2, "catchup", "records_s"), raw.records_s if raw else None, ",.0f"),
            ("catch-up incl. start-up, s", _get(srm, "catchup", "wall_seconds"),
             _get(mm2, "catchup", "wall_seconds"), None, ".1f"),
            ("start-up to first record, s", _get(srm, "catchup", "first_record_seconds"),
             _get(mm2, "catchup", "first_record_seconds"), None, ".1f"),
            ("peak RSS (process tree), MB", _get(srm, "peak_rss_mb"), _get(mm2, "peak_rss_mb"),
             None, ",.0f"),
            ("CPU time to catch up, s", _get(srm, "catchup", "cpu_seconds"),
             _get(mm2, "catchup", "cpu_seconds"), None, ".1f"),
            ("latency p50, ms", _get(srm, "latency", "p50_ms"), _get(mm2, "latency", "p50_ms"),
             None, ",.1f"),
            ("latency p99, ms", _get(srm, "latency", "p99_ms"), _get(mm2, "latency", "p99_ms"),
             None, ",.1f"),
        ]  # fmt: skip
        head = ("", LABELS[SRM], LABELS[MM2], "raw limit", "SRM/MM2", "SRM/raw")
        lines = [f"{head[0]:<30}{head[1]:>12}{head[2]:>15}{head[3]:>11}{head[4]:>9}{head[5]:>9}"]
        for label, ours, theirs, limit, spec in rows:
            lines.append(
                f"{label:<30}{_cell(ours, spec):>12}{_cell(theirs, spec):>15}"
                f"{_cell(limit, spec):>11}{_cell(_ratio(ours, theirs), '.2f'):>9}"
                f"{_cell(_ratio(ours, limit), '.2f'):>9}"
            )
        data = self.dataset
        cores = int(str(self.machine.get("cores") or 1))
        title = (
            f"make bench: {data.records:,} records x {data.record_size} B = {data.mib:,.0f} MB "
            f"in {data.partitions} partitions; {self.machine['cores']} cores, "
            f"{self.machine['ram_gib']} GiB RAM"
        )
        notes = [f"raw limit: {RAW_DEFINITION}"]
        if raw:
            notes.append(
                f"  (consumer perf {raw.consumer.mb_s:.1f} MB/s in {raw.consumer.seconds:.1f} s, "
                f"producer perf {raw.producer.mb_s:.1f} MB/s in {raw.producer.seconds:.1f} s)"
            )
        notes.append(
            "copy rate: first to last record on the target (start-up excluded); "
            "MB = 2^20 bytes of record values"
        )
        for name, result in self._ran().items():
            if result.latency:
                lat = result.latency
                notes.append(
                    f"latency {LABELS[name]}: {lat.measured:,} records at {lat.send_rate:.0f}/s "
                    f"after warm-up, {lat.lost} missing, {lat.duplicates} duplicates, "
                    f"{lat.timestamps_changed} timestamps changed"
                )
            if result.catchup.target_offsets_past_source:
                notes.append(
                    f"{LABELS[name]}: target end offsets exceed the source's by "
                    f"{result.catchup.target_offsets_past_source:,} (duplicates or "
                    "transaction markers)"
                )
        busy = {phase: share for phase, share in self.foreign_cpu.items() if share > 0.1}
        if busy:
            shares = ", ".join(f"{phase} {share:.0%}" for phase, share in busy.items())
            notes.append(
                f"WARNING: other processes used part of the {cores} cores ({shares}); "
                "a quiet machine gives other figures"
            )
        notes += [f"{LABELS.get(name, name)} FAILED: {error.splitlines()[0]}"
                  for name, error in self.errors.items()]  # fmt: skip
        return "\n".join([title, "", *lines, "", *notes])

    def _ran(self) -> dict[str, SystemResult]:
        return {name: self.systems[name] for name in (SRM, MM2) if name in self.systems}


def _get(result: object, *path: str) -> float | None:
    for name in path:
        if result is None:
            return None
        result = getattr(result, name)
    if isinstance(result, float) and math.isnan(result):
        return None
    return result  # type: ignore[return-value]


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return round(numerator / denominator, 3)


def _cell(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _rounded(values: dict[str, float | None], digits: int = 2) -> dict[str, float | None]:
    return {key: _round(value, digits) for key, value in values.items()}

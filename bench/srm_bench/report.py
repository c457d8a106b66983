"""A benchmark run's results: the table on the terminal and the JSON kept in git."""

from __future__ import annotations

import json
import math
import textwrap
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from srm_bench.catchup import CatchupResult
from srm_bench.codec import CodecResult
from srm_bench.latency import WINDOW_SECONDS, LatencyResult
from srm_bench.options import BenchOptions, Dataset
from srm_bench.raw_limit import RawLimit
from srm_bench.replicators import (
    LABELS,
    MM2,
    MM2_TUNED,
    MM2_TUNED_PROPERTIES,
    REPLICATORS,
    SRM,
    SRM_RECORDS,
)

if TYPE_CHECKING:
    from srm_bench.spark_run import StandaloneRun

# 2: MirrorMaker 2 tuned; 3: srm (JVM copy slot) beside srm_python (Python copy slot);
# 4: srm is the Python copy slot, the only one; 5: steady CPU per GiB, raw = best of
# several candidates (docs/benchmark.md, "The JSON"); 6: srm is the driver's defaults
# (the batch copy), srm_records the record copy (--srm-records).
SCHEMA_VERSION = 6

# The table's columns after the label: (heading, width).
_COLUMNS = (
    (LABELS[SRM], 12),
    (LABELS[MM2], 15),
    (LABELS[MM2_TUNED], 11),
    ("raw limit", 11),
    ("SRM/MM2", 9),
    ("SRM/MM2-tuned", 15),
    ("SRM/raw", 9),
)
_LABEL_WIDTH = 30
# With --srm-records: SRM's driver with srm.copy.batches = false, beside SRM's column.
_RECORDS_COLUMN = (LABELS[SRM_RECORDS], 13)
# Every replicator a run may have, in the JSON's order.
_ALL = (*REPLICATORS, SRM_RECORDS)


@dataclass(frozen=True)
class SystemResult:
    """One replicator's figures: catch-up, then latency, with its process tree's peak."""

    catchup: CatchupResult
    latency: LatencyResult | None
    peak_rss_mb: float
    stop_seconds: float | None
    peak_members: tuple[tuple[str, float], ...] = ()  # (command, RSS MB) at the peak
    codec: CodecResult | None = None  # --codec only


@dataclass(frozen=True)
class _Row:
    """One row of the table: a figure of every replicator (and of raw for the rates)."""

    key: str  # its name in the JSON's row_ratios
    label: str
    path: tuple[str, ...]  # attribute path from SystemResult
    spec: str
    raw: str | None = None  # RawLimit attribute, for the rates and CPU per GiB


_ROWS = (
    _Row("copy_mb_s", "copy rate, MB/s", ("catchup", "mb_s"), ".1f", "mb_s"),
    _Row("copy_records_s", "copy rate, records/s", ("catchup", "records_s"), ",.0f", "records_s"),
    _Row("catchup_seconds", "catch-up incl. start-up, s", ("catchup", "wall_seconds"), ".1f"),
    _Row("first_record_seconds", "start-up to first record, s",
         ("catchup", "first_record_seconds"), ".1f"),
    _Row("peak_rss_mb", "peak RSS (process tree), MB", ("peak_rss_mb",), ",.0f"),
    _Row("cpu_seconds", "CPU time to catch up, s", ("catchup", "cpu_seconds"), ".1f"),
    _Row("cpu_s_per_gib", "CPU s per GiB copied", ("catchup", "cpu_s_per_gib"), ".1f",
         "cpu_s_per_gib"),
    _Row("latency_p50_ms", "latency p50, ms", ("latency", "p50_ms"), ",.1f"),
    _Row("latency_p99_ms", "latency p99, ms", ("latency", "p99_ms"), ",.1f"),
)  # fmt: skip
# With --codec (srm_bench/codec.py).
_CODEC_ROWS = (
    _Row("target_mb", "target log, MB", ("codec", "target_mb"), ",.1f"),
    _Row("target_over_source", "target bytes / source bytes", ("codec", "target_ratio"), ".2f"),
)  # fmt: skip


@dataclass
class BenchReport:
    options: BenchOptions
    dataset: Dataset
    started_at: datetime
    run_folder: Path
    machine: dict[str, object]
    versions: dict[str, object]
    load_seconds: float | None = None
    raw: RawLimit | None = None
    systems: dict[str, SystemResult] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    foreign_cpu: dict[str, float] = field(default_factory=dict)  # phase -> share of CPUs
    # replicator -> its configuration file, log and the properties written (ran or failed)
    configs: dict[str, dict[str, object]] = field(default_factory=dict)
    finished_at: datetime | None = None
    spark: StandaloneRun | None = None  # --spark standalone:N

    def throughput_mb_s(self) -> dict[str, float | None]:
        rates = {name: self._figure(name, ("catchup", "mb_s")) for name in self._names()}
        return {**rates, "raw": self.raw.mb_s if self.raw else None}

    def throughput_records_s(self) -> dict[str, float | None]:
        rates = {name: self._figure(name, ("catchup", "records_s")) for name in self._names()}
        return {**rates, "raw": self.raw.records_s if self.raw else None}

    def cpu_s_per_gib(self) -> dict[str, float | None]:
        """Steady CPU seconds per GiB copied (start-up apart), and the raw limit's."""
        names = self._names()
        per_gib = {name: self._figure(name, ("catchup", "cpu_s_per_gib")) for name in names}
        return {**per_gib, "raw": self.raw.cpu_s_per_gib if self.raw else None}

    def row_ratios(self) -> dict[str, dict[str, float | None]]:
        """SRM over each MirrorMaker 2 for every row of the table (None: one is missing)."""
        pairs = [(SRM, MM2), (SRM, MM2_TUNED)]
        return {
            f"{_SHORT[one]}_over_{_SHORT[other]}": {
                row.key: _ratio(self._figure(one, row.path), self._figure(other, row.path))
                for row in self._rows()
            }
            for one, other in pairs
        }

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
                "srm_over_mm2_tuned": _ratio(mb_s[SRM], mb_s[MM2_TUNED]),
                "srm_over_raw": _ratio(mb_s[SRM], mb_s["raw"]),
                "mm2_over_raw": _ratio(mb_s[MM2], mb_s["raw"]),
                "mm2_tuned_over_raw": _ratio(mb_s[MM2_TUNED], mb_s["raw"]),
                "mm2_tuned_over_mm2": _ratio(mb_s[MM2_TUNED], mb_s[MM2]),
            },
            "row_ratios": self.row_ratios(),
            "cpu_s_per_gib": _rounded(self.cpu_s_per_gib()),
            "latency_ms": {
                name: {
                    "p50": _round(self._figure(name, ("latency", "p50_ms")), 1),
                    "p99": _round(self._figure(name, ("latency", "p99_ms")), 1),
                }
                for name in self._names()
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
            "spark_standalone": self.spark.describe() if self.spark else None,
            "codec": {
                name: result.codec.describe() if result.codec else None
                for name, result in self._ran().items()
            },
            "load_seconds": _round(self.load_seconds),
            "errors": self.errors,
            "foreign_cpu_share": {phase: round(v, 3) for phase, v in self.foreign_cpu.items()},
            "machine": self.machine,
            "versions": self.versions,
            "options": self.options.describe(),
            "mm2_tuned_properties": dict(MM2_TUNED_PROPERTIES),
            "replicator_config": self.configs,
            "run_folder": str(self.run_folder),
        }

    def write_json(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.started_at.strftime('%Y-%m-%dT%H-%M-%SZ')}.json"
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        return path

    def table(self) -> str:
        records = SRM_RECORDS in self.systems or SRM_RECORDS in self.errors
        columns = (_COLUMNS[0], _RECORDS_COLUMN, *_COLUMNS[1:]) if records else _COLUMNS
        heading = [f"{'':<{_LABEL_WIDTH}}"] + [f"{h:>{w}}" for h, w in columns]
        lines = ["".join(heading)]
        for row in self._rows():
            srm, mm2, tuned = (self._figure(name, row.path) for name in REPLICATORS)
            limit = getattr(self.raw, row.raw) if self.raw and row.raw else None
            cells = [
                _cell(srm, row.spec),
                _cell(mm2, row.spec),
                _cell(tuned, row.spec),
                _cell(limit, row.spec),
                _cell(_ratio(srm, mm2), ".2f"),
                _cell(_ratio(srm, tuned), ".2f"),
                _cell(_ratio(srm, limit), ".2f"),
            ]
            if records:
                cells.insert(1, _cell(self._figure(SRM_RECORDS, row.path), row.spec))
            padded = (f"{cell:>{width}}" for cell, (_, width) in zip(cells, columns, strict=True))
            lines.append(f"{row.label:<{_LABEL_WIDTH}}" + "".join(padded))
        data = self.dataset
        cores = int(str(self.machine.get("cores") or 1))
        title = (
            f"make bench: {data.records:,} records x {data.record_size} B = {data.mib:,.0f} MB "
            f"in {data.partitions} partitions"
            f"{f', JSON values compressed with {data.codec}' if data.codec else ''}; "
            f"{self.machine['cores']} cores, {self.machine['ram_gib']} GiB RAM"
        )
        notes = self.raw.notes() if self.raw else []
        notes.append(
            "copy rate: first to last record on the target (start-up excluded); "
            "MB = 2^20 bytes of record values"
        )
        notes.append(
            "CPU s per GiB copied: the process tree's CPU seconds between those two records"
            " over the GiB copied between them (start-up apart; brokers not included)"
        )
        notes += self._tuned_notes()
        if records:
            notes.append(
                f"{LABELS[SRM_RECORDS]}: SRM's driver with srm.copy.batches = false (records"
                " copied one by one, as before the batch copy became the default)"
            )
        if data.codec:
            notes.append(
                f"--codec {data.codec}: {LABELS[MM2_TUNED]} also sets backup.producer.compression."
                f"type={data.codec}; target log: the remote topic's segment files"
            )
            notes += [f"{LABELS[name]} target batches: {'/'.join(result.codec.target_codecs)}"
                      for name, result in self._ran().items() if result.codec]  # fmt: skip
        for name, result in self._ran().items():
            if result.latency:
                lat = result.latency
                notes.append(
                    f"latency {LABELS[name]}: {lat.measured:,} records at {lat.send_rate:.0f}/s "
                    f"after warm-up, {lat.lost} missing, {lat.duplicates} duplicates, "
                    f"{lat.timestamps_changed} timestamps changed"
                )
                if lat.windows:
                    p99s = " ".join(f"{p99:.0f}" for _p50, p99, _top in lat.windows)
                    notes.append(f"  p99 by {WINDOW_SECONDS} s, warm-up included, ms: {p99s}")
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
        spark = ["", *self.spark.table_lines(self.systems.get(SRM))] if self.spark else []
        return "\n".join([title, "", *lines, *spark, "", *notes])

    def _tuned_notes(self) -> list[str]:
        """The tuned keys (one list, MM2_TUNED_PROPERTIES), and any --mm2-set over them."""
        keys = ", ".join(f"{key}={value}" for key, value in MM2_TUNED_PROPERTIES.items())
        notes = textwrap.wrap(
            f"{LABELS[MM2_TUNED]}: MirrorMaker 2's file plus {keys}",
            width=110,
            subsequent_indent="  ",
            break_on_hyphens=False,
        )
        overridden = [item for item in self.options.mm2_set
                      if item.partition("=")[0].strip() in MM2_TUNED_PROPERTIES]  # fmt: skip
        if overridden:
            notes.append(f"  --mm2-set overrides tuned keys: {', '.join(overridden)}")
        return notes

    def _rows(self) -> tuple[_Row, ...]:
        return _ROWS + _CODEC_ROWS if self.dataset.codec else _ROWS

    def _figure(self, name: str, path: tuple[str, ...]) -> float | None:
        return _get(self.systems.get(name), *path)

    def _ran(self) -> dict[str, SystemResult]:
        return {name: self.systems[name] for name in _ALL if name in self.systems}

    def _names(self) -> tuple[str, ...]:
        """The replicators of the JSON's figures: the three always, the record copy's when
        it ran."""
        ran = SRM_RECORDS in self.systems
        return _ALL if ran else REPLICATORS


_SHORT = {SRM: "srm", MM2: "mm2", MM2_TUNED: "mm2_tuned"}


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

"""The metrics the gateway serves, by the names SRM's Service API and MM2 use, and how
each is read from a window's figures. Pure.

Rates are per second over the whole window; latency quantiles are the upper bound of
the histogram bucket holding them (never below the truth); lags are the last measured
in the window (records: summed over partitions; time: the oldest).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from srm_common.metrics.aggregate import Figures


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    read: Callable[[Figures, int], float | int | None]  # figures, window_ms -> value
    description: str


def _avg(total: int, count: int) -> float | None:
    return round(total / count, 3) if count else None


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            "replication-latency-ms",
            "ms",
            lambda f, _w: _avg(f.latency_sum_ms, f.latency.total),
            "record timestamp to acknowledged on the target, average",
        ),
        Metric("replication-latency-ms-min", "ms", lambda f, _w: f.latency_min_ms, "minimum"),
        Metric("replication-latency-ms-max", "ms", lambda f, _w: f.latency_max_ms, "maximum"),
        Metric("replication-latency-ms-p50", "ms", lambda f, _w: f.latency.quantile(0.5), "median"),
        Metric(
            "replication-latency-ms-p99",
            "ms",
            lambda f, _w: f.latency.quantile(0.99),
            "99th percentile",
        ),
        Metric(
            "record-rate",
            "records/s",
            lambda f, w: round(f.records * 1000 / w, 3),
            "records copied per second",
        ),
        Metric(
            "byte-rate",
            "bytes/s",
            lambda f, w: round(f.bytes * 1000 / w, 3),
            "bytes copied per second (throughput)",
        ),
        Metric("record-count", "records", lambda f, _w: f.records, "records copied"),
        Metric("byte-count", "bytes", lambda f, _w: f.bytes, "bytes copied"),
        Metric(
            "replication-records-lag",
            "records",
            lambda f, _w: f.lag_records,
            "records behind the source's end",
        ),
        Metric(
            "replication-lag-ms",
            "ms",
            lambda f, _w: f.lag_ms,
            "age of the oldest record not yet copied",
        ),
        Metric("lost-records", "records", lambda f, _w: f.lost, "lost to retention before copied"),
        Metric("halted-partitions", "partitions", lambda f, _w: f.halted_partitions, "halted now"),
        Metric(
            "checkpoint-latency-ms",
            "ms",
            lambda f, _w: _avg(f.checkpoint_latency_sum_ms, f.checkpoint_latency_count),
            "group commit on the source to its checkpoint on the target, average",
        ),
        Metric(
            "checkpoint-latency-ms-max", "ms", lambda f, _w: f.checkpoint_latency_max_ms, "maximum"
        ),
        Metric(
            "untranslated-partitions",
            "partitions",
            lambda f, _w: f.untranslated_partitions,
            "group partitions whose offsets could not be translated",
        ),
        Metric(
            "heartbeat-age-ms",
            "ms",
            lambda f, _w: f.heartbeat_age_ms,
            "time since the newest heartbeat a driver wrote",
        ),
    )
}

"""Aggregated replication metrics: what the aggregator publishes on
:data:`AGGREGATED_TOPIC` of each target cluster and the gateway reads. Pure; JSON.

One record per (window size, window start, level, subject), keyed by :meth:`Aggregate.key`
(the topic is compacted: the latest record of a key is its value). A record is written
while its window is open (``closed`` false, values so far) and again when it closes
(``closed`` true); a late contribution (a partition whose samples arrived after its
siblings closed) writes the same key again, so a reader keeps the latest of each key.

Levels and their subjects (``flow`` is ``source->target``)::

    partition  flow, topic, partition     one source partition
    topic      flow, topic                its partitions
    group      flow, group                one consumer group
    flow       flow                       its topics, groups and drivers
    cluster    cluster                    every flow into that (target) cluster

A record, as written (``values`` also carries the derived figures, see
:meth:`Figures.derived`; readers recompute them and ignore them)::

    {"v":1,"kind":"aggregate","level":"topic","window_ms":60000,
     "start_ms":1700000040000,"end_ms":1700000100000,"closed":true,
     "subject":{"flow":"primary->backup","topic":"orders"},
     "values":{"records":120,"bytes":122880,"latency":[1,0,2,...],...}}

How each figure goes upward (partition to topic to flow to cluster): sums add (records,
bytes, lost, samples, checkpoints, histograms), minima and maxima stay minima and maxima,
and the *last* figures (lag, status, tasks, heartbeat age, untranslated partitions: the
value of the subject's latest sample in the window) add up over subjects, except lag in
time and heartbeat age, whose maximum is kept (the oldest record not yet copied anywhere).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final

from srm_common.errors import SrmError
from srm_common.metrics import raw
from srm_common.metrics.raw import LATENCY_BOUNDS_MS, Histogram, TopicMapping

VERSION: Final = 1
AGGREGATED_TOPIC: Final = "srm-metrics-aggregated.internal"
DEAD_TOPIC: Final = "srm-metrics-dead.internal"
REASON_HEADER: Final = "srm.reason"
"""Header of a dead-letter record: why it was not folded (a :class:`RawMetricError` text,
or ``late: ...``)."""

LEVELS: Final = {
    "partition": ("flow", "topic", "partition"),
    "topic": ("flow", "topic"),
    "group": ("flow", "group"),
    "flow": ("flow",),
    "cluster": ("cluster",),
}


class AggregateError(SrmError):
    """A record on the aggregated topic that this release cannot read; says why."""


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _plus(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


@dataclass(frozen=True)
class Figures:
    """What happened to one subject in one window; ``a + b`` combines two subjects."""

    samples: int = 0
    records: int = 0
    bytes: int = 0
    lost: int = 0
    latency: Histogram = field(default_factory=Histogram)
    latency_sum_ms: int = 0
    latency_min_ms: int | None = None
    latency_max_ms: int | None = None
    # Last figures of each partition, added up (lag_ms: the largest).
    partitions: int = 0
    lag_records: int | None = None
    lag_ms: int | None = None
    halted_partitions: int = 0
    halt_reason: str | None = None  # partition level only
    # Flows: the last sample of each driver, added up (heartbeat age: the oldest).
    drivers: int = 0
    tasks: Mapping[str, int] = field(default_factory=dict)
    heartbeat_age_ms: int | None = None
    # Groups: checkpoint latency over the samples that measured one.
    groups: int = 0
    checkpoints: int = 0
    checkpoint_latency_count: int = 0
    checkpoint_latency_sum_ms: int = 0
    checkpoint_latency_min_ms: int | None = None
    checkpoint_latency_max_ms: int | None = None
    untranslated_partitions: int = 0

    def __add__(self, other: Figures) -> Figures:
        tasks = dict(self.tasks)
        for status, count in other.tasks.items():
            tasks[status] = tasks.get(status, 0) + count
        return Figures(
            samples=self.samples + other.samples,
            records=self.records + other.records,
            bytes=self.bytes + other.bytes,
            lost=self.lost + other.lost,
            latency=self.latency + other.latency,
            latency_sum_ms=self.latency_sum_ms + other.latency_sum_ms,
            latency_min_ms=_min(self.latency_min_ms, other.latency_min_ms),
            latency_max_ms=_max(self.latency_max_ms, other.latency_max_ms),
            partitions=self.partitions + other.partitions,
            lag_records=_plus(self.lag_records, other.lag_records),
            lag_ms=_max(self.lag_ms, other.lag_ms),
            halted_partitions=self.halted_partitions + other.halted_partitions,
            halt_reason=None,
            drivers=self.drivers + other.drivers,
            tasks=dict(sorted(tasks.items())),
            heartbeat_age_ms=_max(self.heartbeat_age_ms, other.heartbeat_age_ms),
            groups=self.groups + other.groups,
            checkpoints=self.checkpoints + other.checkpoints,
            checkpoint_latency_count=self.checkpoint_latency_count + other.checkpoint_latency_count,
            checkpoint_latency_sum_ms=self.checkpoint_latency_sum_ms
            + other.checkpoint_latency_sum_ms,
            checkpoint_latency_min_ms=_min(
                self.checkpoint_latency_min_ms, other.checkpoint_latency_min_ms
            ),
            checkpoint_latency_max_ms=_max(
                self.checkpoint_latency_max_ms, other.checkpoint_latency_max_ms
            ),
            untranslated_partitions=self.untranslated_partitions + other.untranslated_partitions,
        )

    @staticmethod
    def total(parts: Iterable[Figures]) -> Figures:
        result = Figures()
        for part in parts:
            result = result + part
        return result

    def derived(self, window_ms: int) -> dict[str, float | int | None]:
        """Rates (per second over the whole window), averages and quantiles (upper
        bounds of histogram buckets, :meth:`Histogram.quantile`)."""
        seconds = window_ms / 1000
        measured = self.latency.total
        return {
            "records_per_s": round(self.records / seconds, 3),
            "bytes_per_s": round(self.bytes / seconds, 3),
            "latency_avg_ms": round(self.latency_sum_ms / measured, 3) if measured else None,
            "latency_p50_ms": self.latency.quantile(0.5),
            "latency_p99_ms": self.latency.quantile(0.99),
            "checkpoint_latency_avg_ms": (
                round(self.checkpoint_latency_sum_ms / self.checkpoint_latency_count, 3)
                if self.checkpoint_latency_count
                else None
            ),
        }

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in _FIGURES}
        data["latency"] = list(self.latency.counts)
        data["tasks"] = dict(self.tasks)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Figures:
        """The figures in ``data`` (unknown keys ignored); AggregateError if malformed."""
        values = {k: v for k, v in data.items() if k in _FIGURES}
        try:
            if "latency" in values:
                counts = tuple(int(c) for c in values["latency"])
                if len(counts) != len(LATENCY_BOUNDS_MS) + 1:
                    raise AggregateError(f"latency histogram of {len(counts)} buckets")
                values["latency"] = Histogram(counts)
            if "tasks" in values:
                values["tasks"] = {str(k): int(v) for k, v in dict(values["tasks"]).items()}
            return cls(**values)
        except (TypeError, ValueError) as exc:
            raise AggregateError(f"figures: {exc}") from None


_FIGURES: Final = tuple(f.name for f in fields(Figures))


@dataclass(frozen=True)
class Aggregate:
    """One subject's figures in one window: a record of the aggregated topic."""

    level: str
    window_ms: int
    start_ms: int
    subject: Mapping[str, str | int]
    closed: bool
    figures: Figures

    def __post_init__(self) -> None:
        names = LEVELS.get(self.level)
        if names is None:
            raise AggregateError(f"unknown level {self.level!r}; known: {', '.join(LEVELS)}")
        if set(self.subject) != set(names):
            raise AggregateError(f"{self.level} subject {dict(self.subject)}: needs {names}")
        object.__setattr__(self, "subject", {name: self.subject[name] for name in names})
        if self.window_ms <= 0 or self.start_ms % self.window_ms:
            raise AggregateError(f"window {self.start_ms} of {self.window_ms} ms: not aligned")

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.window_ms

    def key(self) -> bytes:
        parts = (self.window_ms, self.start_ms, self.level, *self.subject.values())
        return "|".join(str(p) for p in parts).encode()

    def with_figures(self, figures: Figures, closed: bool) -> Aggregate:
        return replace(self, figures=figures, closed=closed)


def encode(aggregate: Aggregate) -> bytes:
    data = {
        "v": VERSION,
        "kind": "aggregate",
        "level": aggregate.level,
        "window_ms": aggregate.window_ms,
        "start_ms": aggregate.start_ms,
        "end_ms": aggregate.end_ms,
        "closed": aggregate.closed,
        "subject": dict(aggregate.subject),
        "values": {
            **aggregate.figures.to_json(),
            **aggregate.figures.derived(aggregate.window_ms),
        },
    }
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def mapping_key(mapping: TopicMapping) -> bytes:
    """The key of a topic mapping on the aggregated topic (latest wins, as for aggregates)."""
    return f"mapping|{mapping.flow}|{mapping.topic}".encode()


def read(value: bytes | None) -> Aggregate | TopicMapping:
    """A record of the aggregated topic: an aggregate, or a topic mapping the aggregator
    forwards as the driver wrote it (:func:`srm_common.metrics.raw.encode`)."""
    try:
        kind = json.loads(value or b"").get("kind")
    except (ValueError, UnicodeDecodeError, AttributeError):
        kind = None
    if kind == TopicMapping.KIND:
        try:
            sample = raw.decode(value)
        except raw.RawMetricError as exc:
            raise AggregateError(str(exc)) from None
        assert isinstance(sample, TopicMapping)
        return sample
    return decode(value)


def decode(value: bytes | None) -> Aggregate:
    """The aggregate in ``value``; :class:`AggregateError` saying why it is not one."""
    try:
        data = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError) as exc:
        raise AggregateError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != "aggregate":
        raise AggregateError("not an aggregate record")
    if data.get("v") != VERSION:
        raise AggregateError(f"version {data.get('v')!r}: this release reads version {VERSION}")
    try:
        level = str(data["level"])
        subject = dict(data["subject"])
        return Aggregate(
            level=level,
            window_ms=int(data["window_ms"]),
            start_ms=int(data["start_ms"]),
            subject=subject,
            closed=bool(data["closed"]),
            figures=Figures.from_json(data["values"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise AggregateError(f"aggregate record: missing or wrong {exc}") from None

"""Raw replication metrics: what drivers measure, as versioned records on the raw metrics
topic of each target cluster (:data:`RAW_TOPIC`), for the aggregator to fold. Pure; JSON.

Every sample covers one interval (``at_ms - interval_ms`` to ``at_ms``, the driver's wall
clock, which only places it in a window) and carries *what happened in it*, never a
running total, so folding is a sum. Its ``id`` (driver, incarnation, sequence) is unique:
a record delivered twice is recognised and counted once.

Kinds:

* :class:`PartitionSample`: one source partition of a flow: records and bytes copied,
  replication latency (record timestamp to acknowledged on the target) as a
  histogram over :data:`LATENCY_BOUNDS_MS` with its sum, min and max, lag in records
  and in time (age of the oldest record not yet copied), records lost to retention,
  status (and why it halted).
* :class:`FlowSample`: one flow on one driver: its tasks by status, halted partitions,
  the age of the newest heartbeat it wrote.
* :class:`GroupSample`: one consumer group of a flow: checkpoint latency (the group's
  commit on the source to its checkpoint on the target) and partitions whose offsets could
  not be translated.
* :class:`TopicMapping`: source topic and its remote topic on a flow (as SRM's
  ``srm-meta.internal`` has them), so a remote topic is found for any replication policy,
  the identity policy included.
* :class:`PartitionsSample` (version 2): many partitions of a flow over one interval in
  one record, each saying what a :class:`PartitionSample` says, grouped by topic (with
  its remote topic: the mapping too). Drivers write these
  (:func:`srm_common.metrics.grouping.grouped`), so 10,000
  partitions are a few records per interval, each at most :data:`GROUP_BYTES`; the other
  kinds are still written as version 1, and version 1 partition samples are still read.

A reader meets records of other versions or kinds (a newer SRM) and garbage:
:func:`decode` raises :class:`RawMetricError` naming what is wrong, so the aggregator can
send the record to its dead-letter topic with the reason.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Final

from srm_common.errors import SrmError

VERSION: Final = 1
"""The version of the four single-subject kinds, as written (unchanged since release)."""
GROUPED_VERSION: Final = 2
"""The version that added :class:`PartitionsSample`; a reader of it reads version 1 too."""
RAW_TOPIC: Final = "srm-metrics-raw.internal"

# Upper bounds (inclusive, ms) of the latency histogram's buckets; a last, open bucket
# counts everything slower. Fixed for version 1: histograms of any two samples add up.
LATENCY_BOUNDS_MS: Final = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 60000)


class RawMetricError(SrmError):
    """A record on the raw metrics topic that this release cannot read; says why."""


def bucket_of(latency_ms: int) -> int:
    """The index of the histogram bucket ``latency_ms`` falls in."""
    return bisect.bisect_left(LATENCY_BOUNDS_MS, latency_ms)


@dataclass(frozen=True)
class Histogram:
    """Counts per bucket of :data:`LATENCY_BOUNDS_MS` (one more for the open bucket)."""

    counts: tuple[int, ...] = (0,) * (len(LATENCY_BOUNDS_MS) + 1)

    @classmethod
    def of(cls, latencies_ms: Iterable[int]) -> Histogram:
        counts = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        for latency in latencies_ms:
            counts[bucket_of(latency)] += 1
        return cls(tuple(counts))

    def __add__(self, other: Histogram) -> Histogram:
        return Histogram(tuple(a + b for a, b in zip(self.counts, other.counts, strict=True)))

    @property
    def total(self) -> int:
        return sum(self.counts)

    def quantile(self, q: float) -> int | None:
        """The upper bound of the bucket holding the ``q`` quantile (None when empty; the
        last bound for the open bucket): an upper estimate, never below the truth."""
        total = self.total
        if total == 0:
            return None
        rank = max(1, int(q * total + 0.999999))
        seen = 0
        for index, count in enumerate(self.counts):
            seen += count
            if seen >= rank:
                return LATENCY_BOUNDS_MS[min(index, len(LATENCY_BOUNDS_MS) - 1)]
        return LATENCY_BOUNDS_MS[-1]


@dataclass(frozen=True)
class Sample:
    """What every sample has: a unique id, when it ends, how long it covers, its flow."""

    KIND: ClassVar[str] = ""
    id: str
    at_ms: int
    interval_ms: int
    flow: str

    @property
    def source(self) -> str:
        return self.flow.split("->", 1)[0]

    @property
    def target(self) -> str:
        return self.flow.split("->", 1)[1]

    def key(self) -> bytes:
        """The Kafka key: all samples of one subject land in one partition, in order."""
        return "|".join(str(part) for part in self.subject()).encode()

    def subject(self) -> tuple[object, ...]:
        return (self.flow,)


@dataclass(frozen=True)
class PartitionSample(Sample):
    KIND: ClassVar[str] = "partition"
    topic: str = ""
    partition: int = 0
    remote_topic: str = ""
    records: int = 0
    bytes: int = 0
    latency: Histogram = field(default_factory=Histogram)
    latency_sum_ms: int = 0
    latency_min_ms: int | None = None
    latency_max_ms: int | None = None
    lag_records: int | None = None
    lag_ms: int | None = None
    lost: int = 0
    status: str = "running"  # running | pending | halted | stopped
    halt_reason: str | None = None

    def subject(self) -> tuple[object, ...]:
        return (self.flow, self.topic, self.partition)


@dataclass(frozen=True)
class FlowSample(Sample):
    KIND: ClassVar[str] = "flow"
    driver: str = ""
    tasks: Mapping[str, int] = field(default_factory=dict)  # status -> count
    halted_partitions: int = 0
    heartbeat_age_ms: int | None = None

    def subject(self) -> tuple[object, ...]:
        return (self.flow, self.driver)


@dataclass(frozen=True)
class GroupSample(Sample):
    KIND: ClassVar[str] = "group"
    group: str = ""
    checkpoint_latency_ms: int | None = None
    checkpoints: int = 0
    untranslated_partitions: int = 0

    def subject(self) -> tuple[object, ...]:
        return (self.flow, self.group)


@dataclass(frozen=True)
class TopicMapping(Sample):
    KIND: ClassVar[str] = "topic-mapping"
    topic: str = ""
    remote_topic: str = ""

    def subject(self) -> tuple[object, ...]:
        return (self.flow, self.topic)


@dataclass(frozen=True)
class PartitionsSample(Sample):
    """Many partitions of one flow over one interval (version 2). Each member is the
    :class:`PartitionSample` of one partition, with the group's ``id``, ``at_ms``,
    ``interval_ms`` and ``flow``: a partition is at most once in a group, so the group's
    id is unique in every partition's window, and a group read twice is counted once."""

    KIND: ClassVar[str] = "partitions"
    partitions: tuple[PartitionSample, ...] = ()

    def subject(self) -> tuple[object, ...]:
        """The first member's (``grouped`` puts every member where its own key goes)."""
        return self.partitions[0].subject() if self.partitions else (self.flow,)

    def mappings(self) -> list[TopicMapping]:
        """The topic mappings the group carries (one per topic)."""
        common = {"id": self.id, "at_ms": self.at_ms, "interval_ms": 0, "flow": self.flow}
        seen = {(p.topic, p.remote_topic) for p in self.partitions}
        return [TopicMapping(**common, topic=t, remote_topic=r) for t, r in sorted(seen)]


KINDS: Final[dict[str, type[Sample]]] = {
    cls.KIND: cls
    for cls in (PartitionSample, FlowSample, GroupSample, TopicMapping, PartitionsSample)
}
VERSIONS: Final[dict[str, tuple[int, ...]]] = {
    kind: (GROUPED_VERSION,) if kind == PartitionsSample.KIND else (VERSION,) for kind in KINDS
}
"""The versions each kind exists in."""

MAX_REASON: Final = 2000
"""A halt reason longer than this is cut in a group (a member stays a few KB at most)."""

# A group member's fields besides topic, partition and remote topic, with the values a
# member leaves out (most partitions of a big flow copy nothing in an interval).
_MEMBER_DEFAULTS: Final[dict[str, Any]] = {
    "records": 0,
    "bytes": 0,
    "latency": [0] * (len(LATENCY_BOUNDS_MS) + 1),
    "latency_sum_ms": 0,
    "latency_min_ms": None,
    "latency_max_ms": None,
    "lag_records": None,
    "lag_ms": None,
    "lost": 0,
    "status": "running",
    "halt_reason": None,
}


def member_fields(sample: PartitionSample) -> dict[str, Any]:
    data: dict[str, Any] = {"partition": sample.partition}
    for name, default in _MEMBER_DEFAULTS.items():
        value = getattr(sample, name)
        if isinstance(value, Histogram):
            value = list(value.counts)
        if value != default:
            data[name] = value
    return data


def _json(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def encode(sample: Sample) -> bytes:
    if isinstance(sample, PartitionsSample):
        return _encode_group(sample)
    data: dict[str, Any] = {"v": VERSION, "kind": sample.KIND}
    for f in fields(sample):
        value = getattr(sample, f.name)
        data[f.name] = list(value.counts) if isinstance(value, Histogram) else value
    return _json(data)


def _encode_group(group: PartitionsSample) -> bytes:
    topics: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for member in group.partitions:
        topics.setdefault((member.topic, member.remote_topic), []).append(member_fields(member))
    data = {
        "v": GROUPED_VERSION,
        "kind": group.KIND,
        "id": group.id,
        "at_ms": group.at_ms,
        "interval_ms": group.interval_ms,
        "flow": group.flow,
        "topics": [
            {"topic": topic, "remote_topic": remote, "partitions": members}
            for (topic, remote), members in topics.items()
        ],
    }
    return _json(data)


def decode(value: bytes | None) -> Sample:
    """The sample in ``value``; :class:`RawMetricError` saying why it is not one."""
    try:
        data = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError) as exc:
        raise RawMetricError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RawMetricError("not a JSON object")
    version, kind = data.get("v"), data.get("kind")
    if version not in (VERSION, GROUPED_VERSION):
        raise RawMetricError(
            f"version {version!r}: this release reads versions {VERSION} and {GROUPED_VERSION}"
        )
    cls = KINDS.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise RawMetricError(f"unknown kind {kind!r}; known: {', '.join(sorted(KINDS))}")
    if version not in VERSIONS[kind]:  # type: ignore[index]
        raise RawMetricError(f"{kind} records of version {version} do not exist")
    if cls is PartitionsSample:
        return _decode_group(data)
    return _decode_single(cls, data)


def _decode_single(cls: type[Sample], data: dict[str, Any]) -> Sample:
    kind = cls.KIND
    known = {f.name for f in fields(cls)}
    values = {k: v for k, v in data.items() if k in known}
    try:
        if "latency" in values:
            counts = tuple(int(c) for c in values["latency"])
            if len(counts) != len(LATENCY_BOUNDS_MS) + 1:
                raise RawMetricError(f"latency histogram of {len(counts)} buckets")
            values["latency"] = Histogram(counts)
        sample = cls(**values)
    except (TypeError, ValueError) as exc:
        raise RawMetricError(f"{kind} sample: {exc}") from None
    for f in fields(cls):
        wrong = _wrong_type(getattr(sample, f.name), str(f.type))
        if wrong:
            raise RawMetricError(f"{kind} sample: {f.name} = {getattr(sample, f.name)!r}: {wrong}")
    if not sample.id or "->" not in sample.flow:
        raise RawMetricError(f"{kind} sample without an id or a flow 'source->target'")
    return sample


def _decode_group(data: dict[str, Any]) -> PartitionsSample:
    """The group in ``data``: every member checked as a version 1 partition sample."""
    common = {k: data.get(k) for k in ("id", "at_ms", "interval_ms", "flow")}
    topics = data.get("topics")
    if not isinstance(topics, list) or not topics:
        raise RawMetricError("partitions sample without topics")
    members: list[PartitionSample] = []
    seen: set[tuple[str, int]] = set()
    for entry in topics:
        if not isinstance(entry, dict) or not isinstance(entry.get("partitions"), list):
            raise RawMetricError("partitions sample: a topic without its partitions")
        for item in entry["partitions"]:
            if not isinstance(item, dict):
                raise RawMetricError("partitions sample: a partition that is no JSON object")
            values = {**_MEMBER_DEFAULTS, **item, **common, "kind": PartitionSample.KIND}
            values.update(topic=entry.get("topic"), remote_topic=entry.get("remote_topic"))
            member = _decode_single(PartitionSample, values)
            assert isinstance(member, PartitionSample)
            place = (member.topic, member.partition)
            if place in seen:
                raise RawMetricError(f"partitions sample: {place[0]}-{place[1]} twice")
            seen.add(place)
            members.append(member)
    group = PartitionsSample(**common, partitions=tuple(members))  # type: ignore[arg-type]
    return group


_CHECKS: Final = {"int": int, "str": str}


def _wrong_type(value: object, annotation: str) -> str | None:
    """Why ``value`` does not fit a scalar field annotated ``annotation`` (None: it does)."""
    base, _, optional = annotation.partition(" | ")
    expected = _CHECKS.get(base)
    if expected is None or (optional == "None" and value is None):
        return None
    if isinstance(value, bool) or not isinstance(value, expected):
        return f"not {'a whole number' if expected is int else 'a string'}"
    return None

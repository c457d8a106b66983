"""The aggregated metrics the gateway has read, by key, latest record winning (the
aggregated topic is compacted the same way), plus the topic mappings. Pure.

Windows older than they are kept for (:data:`KEEP_MS`) are dropped as new ones arrive,
so memory stays bounded however long the gateway runs. Partition windows are kept apart:
only each partition's newest 1-minute window, for the worst partitions by lag
(:meth:`MetricStore.partitions`); no answer needs their history, and 10,000 partitions'
six hours of windows would be millions of records in memory.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from srm_common.metrics.aggregate import Aggregate
from srm_common.metrics.raw import TopicMapping

MINUTE = 60_000
HOUR = 3_600_000
# How long windows of each size are kept (others: as long as 1-hour ones).
KEEP_MS: Mapping[int, int] = {MINUTE: 6 * HOUR, HOUR: 8 * 24 * HOUR}

Subject = tuple[tuple[str, str | int], ...]


def subject_of(values: Mapping[str, str | int]) -> Subject:
    return tuple(sorted(values.items()))


@dataclass(frozen=True)
class Stored:
    aggregate: Aggregate
    cluster: str  # the cluster whose aggregated topic it came from


class MetricStore:
    """See the module docstring; safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (level, subject, window_ms) -> start_ms -> aggregate
        self._windows: dict[tuple[str, Subject, int], dict[int, Stored]] = {}
        # flow -> (topic, partition) -> the newest 1-minute window
        self._partitions: dict[str, dict[tuple[str, int], Aggregate]] = {}
        # flow -> topic -> remote topic
        self._mappings: dict[str, dict[str, str]] = {}
        self._newest_ms = 0
        self.records = 0

    def add(self, record: Aggregate | TopicMapping, cluster: str) -> None:
        with self._lock:
            self.records += 1
            if isinstance(record, TopicMapping):
                self._mappings.setdefault(record.flow, {})[record.topic] = record.remote_topic
                return
            if record.level == "partition":
                self._add_partition(record)
                return
            key = (record.level, subject_of(record.subject), record.window_ms)
            self._windows.setdefault(key, {})[record.start_ms] = Stored(record, cluster)
            if record.start_ms > self._newest_ms:
                self._newest_ms = record.start_ms
                self._prune()

    def windows(
        self,
        level: str,
        subject: Mapping[str, str | int],
        window_ms: int,
        from_ms: int,
        to_ms: int,
    ) -> list[Aggregate]:
        """The subject's windows of that size that overlap [from_ms, to_ms), by start."""
        with self._lock:
            found = self._windows.get((level, subject_of(subject), window_ms), {})
            return [
                stored.aggregate
                for start, stored in sorted(found.items())
                if start < to_ms and start + window_ms > from_ms
            ]

    def subjects(self, level: str, window_ms: int) -> list[Mapping[str, str | int]]:
        with self._lock:
            return [
                dict(subject)
                for (lvl, subject, size) in self._windows
                if lvl == level and size == window_ms
            ]

    def latest(
        self, level: str, subject: Mapping[str, str | int], window_ms: int
    ) -> Aggregate | None:
        with self._lock:
            found = self._windows.get((level, subject_of(subject), window_ms), {})
            return found[max(found)].aggregate if found else None

    def newest(self, level: str, window_ms: int, flow: str) -> dict[str, Aggregate]:
        """The newest window of each topic of ``flow`` at ``level`` (topic), by topic."""
        with self._lock:
            found = {}
            for (lvl, subject, size), windows in self._windows.items():
                if lvl == level and size == window_ms and windows:
                    values = dict(subject)
                    if values.get("flow") == flow:
                        found[str(values.get("topic"))] = windows[max(windows)].aggregate
            return found

    def _add_partition(self, record: Aggregate) -> None:
        if record.window_ms != MINUTE:
            return
        subject = record.subject
        place = (str(subject["topic"]), int(subject["partition"]))
        held = self._partitions.setdefault(str(subject["flow"]), {})
        current = held.get(place)
        if current is None or current.start_ms <= record.start_ms:
            held[place] = record

    def partitions(self, flow: str) -> dict[tuple[str, int], Aggregate]:
        """Each partition's newest 1-minute window of ``flow`` (a copy of the index)."""
        with self._lock:
            return dict(self._partitions.get(flow, {}))

    def remote_topics(self, flow: str) -> dict[str, str]:
        with self._lock:
            return dict(self._mappings.get(flow, {}))

    def upstream(self, flows: list[str], remote_topic: str) -> tuple[str, str] | None:
        """(flow, source topic) whose remote topic is ``remote_topic``, among ``flows``."""
        with self._lock:
            for flow in flows:
                for topic, remote in self._mappings.get(flow, {}).items():
                    if remote == remote_topic:
                        return flow, topic
        return None

    def _prune(self) -> None:
        for key, windows in list(self._windows.items()):
            keep = KEEP_MS.get(key[2], KEEP_MS[HOUR])
            for start in [s for s in windows if s + keep < self._newest_ms]:
                del windows[start]
            if not windows:
                del self._windows[key]

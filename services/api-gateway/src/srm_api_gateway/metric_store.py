"""The aggregated metrics the gateway has read, by key, latest record winning (the
aggregated topic is compacted the same way), plus the topic mappings. Pure.

Windows older than they are kept for (:data:`KEEP_MS`) are dropped as new ones arrive,
so memory stays bounded however long the gateway runs.
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

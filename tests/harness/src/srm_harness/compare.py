"""Comparing a topic with its copy: content in order, keys missing or twice, caught up or not."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from srm_harness.clients import consume_all, list_topics
from srm_harness.records import Record


def content(records: Iterable[Record]) -> list[tuple[object, ...]]:
    """What must be equal between a partition and its copy: records in order."""
    return [record.content() for record in records]


def copied(source: str, topic: str, target: str, remote: str) -> bool:
    """The remote topic holds at least as many records as the source shows read_committed
    (what a copy reads); a test then compares their content."""
    records = consume_all(source, topic)
    if not list_topics(target) >= {remote}:
        return False
    copies = consume_all(target, remote, isolation_level="read_uncommitted")
    return sum(map(len, copies.values())) >= sum(map(len, records.values()))


@dataclass(frozen=True)
class CopyCount:
    """Records of a source topic and of its copy, counted by key (keys are unique)."""

    produced: int
    found: int
    missing: int
    duplicated: int

    def __str__(self) -> str:
        return (
            f"produced {self.produced}, found on target {self.found}, missing {self.missing},"
            f" duplicated {self.duplicated}"
        )


def count_copy(source: Mapping[int, list[Record]], target: Mapping[int, list[Record]]) -> CopyCount:
    """What a copy lacks and what it has twice, comparing keys over all partitions."""
    import collections

    source_keys = collections.Counter(r.key for rs in source.values() for r in rs)
    target_keys = collections.Counter(r.key for rs in target.values() for r in rs)
    return CopyCount(
        produced=sum(source_keys.values()),
        found=sum(target_keys.values()),
        missing=sum((source_keys - target_keys).values()),
        duplicated=sum((target_keys - source_keys).values()),
    )

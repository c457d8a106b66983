"""Task planning: how a flow's work is cut into tasks (MM2's rules, mm2-semantics §8).

Pure. The driver plans its own tasks from these until the coordinator does; the
coordinator will call the same functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class SourceTask:
    """Source task ``index`` of a flow and the upstream partitions it copies."""

    flow: str
    index: int
    partitions: tuple[TopicPartition, ...]

    @property
    def name(self) -> str:
        """MM2's task name: ``MirrorSourceConnector-<index>``, prefixed by the flow."""
        return f"{self.flow}|MirrorSourceConnector-{self.index}"

    def assigned_partitions(self) -> str:
        """MM2's ``task.assigned.partitions`` value: ``topic-partition`` comma list."""
        return ",".join(f"{topic}-{partition}" for topic, partition in self.partitions)


@dataclass(frozen=True, slots=True)
class CheckpointTask:
    """Checkpoint task ``index`` of a flow and the consumer groups it translates."""

    flow: str
    index: int
    groups: tuple[str, ...]


def plan_source_tasks(
    flow: str, partitions: Sequence[TopicPartition], tasks_max: int
) -> tuple[SourceTask, ...]:
    """``min(tasks_max, len(partitions))`` tasks; partitions dealt round robin in the
    order given after sorting by topic then partition (k -> task k mod n), as MM2 does."""
    if tasks_max < 1:
        raise ValueError(f"tasks.max must be at least 1, got {tasks_max}")
    ordered = sorted(set(partitions))
    count = min(tasks_max, len(ordered))
    return tuple(SourceTask(flow, index, tuple(ordered[index::count])) for index in range(count))


def plan_checkpoint_tasks(
    flow: str, groups: Sequence[str], tasks_max: int
) -> tuple[CheckpointTask, ...]:
    """``min(tasks_max, len(groups))`` tasks of contiguous groups; the first
    ``len(groups) mod n`` tasks get one more (MM2's ConnectorUtils.groupPartitions)."""
    if tasks_max < 1:
        raise ValueError(f"tasks.max must be at least 1, got {tasks_max}")
    ordered = sorted(set(groups))
    count = min(tasks_max, len(ordered))
    tasks = []
    start = 0
    for index in range(count):
        size = len(ordered) // count + (1 if index < len(ordered) % count else 0)
        tasks.append(CheckpointTask(flow, index, tuple(ordered[start : start + size])))
        start += size
    return tuple(tasks)


def parse_assigned_partitions(value: str) -> tuple[TopicPartition, ...]:
    """Inverse of :meth:`SourceTask.assigned_partitions` (split at the last ``-``)."""
    if not value.strip():
        return ()
    parsed = []
    for item in value.split(","):
        topic, _, partition = item.strip().rpartition("-")
        if not topic or not partition.isdigit():
            raise ValueError(f"{item!r} is not topic-partition")
        parsed.append((topic, int(partition)))
    return tuple(parsed)

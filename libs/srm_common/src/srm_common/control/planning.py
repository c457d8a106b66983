"""Sticky task planning: a flow's partitions and groups cut into task configs.

Why sticky: a partition that changes task may change driver, and the task that gains it
must stop before it runs again (:func:`tasks_gaining_partitions`), so every move costs a
pause. MM2 deals all partitions round robin again on each change, so a new topic can move
any partition sorted after it to another task; here, when partitions are only added,
they are placed and nothing else moves::

    a-0 a-1 a-2 b-0 on 2 tasks:   task 0: a-0 a-2        task 1: a-1 b-0
    a-3 added, MM2 deals again:   task 0: a-0 a-2 b-0    task 1: a-1 a-3    (b-0 moved)
    a-3 added, sticky:            task 0: a-0 a-2 a-3    task 1: a-1 b-0
"""

from __future__ import annotations

from collections.abc import Sequence

from srm_common.control.flow_records import FlowTasks
from srm_common.control.task_ids import source_task_id
from srm_common.domain.tasks import (
    SourceTask,
    TopicPartition,
    plan_checkpoint_tasks,
    plan_source_tasks,
)


def plan_flow_tasks(
    flow: str,
    previous: FlowTasks | None,
    partitions: Sequence[TopicPartition],
    groups: Sequence[str],
    tasks_max: int,
    *,
    heartbeat: bool,
) -> FlowTasks:
    """The flow's task configs for ``partitions`` and ``groups``.

    ``min(tasks_max, len(partitions))`` source tasks. Without ``previous`` the partitions
    are dealt exactly as MM2 does (:func:`plan_source_tasks`). With it, each surviving
    task (index below the new count) keeps its partitions that still exist, up to its
    share of a balanced plan (sizes differ by at most one); the rest (new partitions,
    those of dropped tasks, a shrunken task's excess) go in sorted order to the task with
    the fewest partitions, lowest index first. When partitions are only added, no
    partition moves. Checkpoint tasks are MM2's contiguous split of the groups.

    The generation is ``previous.generation + 1`` when anything differs, else
    ``previous`` itself is returned; a first plan is generation 1. ``ValueError`` when
    ``tasks_max`` is below 1.
    """
    if previous is None:
        source = plan_source_tasks(flow, partitions, tasks_max)
    else:
        source = _sticky_source_tasks(flow, previous.source, partitions, tasks_max)
    checkpoint = plan_checkpoint_tasks(flow, groups, tasks_max)
    if previous is None:
        return FlowTasks(flow, 1, source, checkpoint, heartbeat)
    if (previous.source, previous.checkpoint, previous.heartbeat) == (
        source,
        checkpoint,
        heartbeat,
    ):
        return previous
    return FlowTasks(flow, previous.generation + 1, source, checkpoint, heartbeat)


def _sticky_source_tasks(
    flow: str,
    previous: Sequence[SourceTask],
    partitions: Sequence[TopicPartition],
    tasks_max: int,
) -> tuple[SourceTask, ...]:
    if tasks_max < 1:
        raise ValueError(f"tasks.max must be at least 1, got {tasks_max}")
    alive = set(partitions)
    count = min(tasks_max, len(alive))
    kept: list[list[TopicPartition]] = [[] for _ in range(count)]
    placed: set[TopicPartition] = set()
    for task in previous:
        if task.index < count:
            # Planned partitions are sorted; a set read from an older log may not be.
            stay = [tp for tp in task.partitions if tp in alive]
            if any(a > b for a, b in zip(stay, stay[1:], strict=False)):
                stay.sort()
            if not placed.isdisjoint(stay):  # a partition in two tasks: the first keeps it
                stay = [tp for tp in stay if tp not in placed]
            kept[task.index] = stay
            placed.update(stay)
    # Balanced shares: len(alive) % count tasks hold one more. The tasks that kept the
    # most get the larger shares, so the fewest partitions have to move.
    base, extra = divmod(len(alive), count) if count else (0, 0)
    by_size = sorted(range(count), key=lambda i: (-len(kept[i]), i))
    shares = {index: base + (1 if rank < extra else 0) for rank, index in enumerate(by_size)}
    for index in range(count):
        if len(kept[index]) > shares[index]:
            placed.difference_update(kept[index][shares[index] :])
            kept[index] = kept[index][: shares[index]]  # the excess: last in sorted order
    gained: set[int] = set()
    for tp in sorted(alive - placed):
        target = min(range(count), key=lambda i: (len(kept[i]), i))
        kept[target].append(tp)
        gained.add(target)
    return tuple(
        SourceTask(flow, i, tuple(sorted(parts) if i in gained else parts))
        for i, parts in enumerate(kept)
    )


def tasks_gaining_partitions(previous: FlowTasks | None, new: FlowTasks) -> frozenset[str]:
    """Source task ids of ``new`` that hold a partition another task id held in
    ``previous``. They must be stopped (revoked) before they run again, or two tasks may
    copy the same partition at once; partitions new to the flow do not count."""
    if previous is None:
        return frozenset()
    owner = {tp: task.index for task in previous.source for tp in task.partitions}
    return frozenset(
        source_task_id(new.flow, task.index)
        for task in new.source
        if any(owner.get(tp, task.index) != task.index for tp in task.partitions)
    )

"""Sticky task planning: only what must move moves."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.control.flow_records import FlowTasks
from srm_common.control.planning import plan_flow_tasks, tasks_gaining_partitions
from srm_common.control.task_ids import source_task_id
from srm_common.domain.tasks import plan_checkpoint_tasks, plan_source_tasks

AB = "primary->backup"


def tp(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)


def parts(*names: str) -> list[tuple[str, int]]:
    return [tp(name) for name in names]


def layout(tasks: FlowTasks) -> list[list[str]]:
    return [[f"{t}-{p}" for t, p in task.partitions] for task in tasks.source]


def test_first_plan_is_mm2_round_robin_at_generation_one() -> None:
    partitions = parts("a-0", "a-1", "a-2", "b-0")
    first = plan_flow_tasks(AB, None, partitions, ["g1", "g2", "g3"], 2, heartbeat=True)
    assert first.generation == 1 and first.heartbeat
    assert first.source == plan_source_tasks(AB, partitions, 2)
    assert first.checkpoint == plan_checkpoint_tasks(AB, ["g1", "g2", "g3"], 2)


def test_added_partitions_are_placed_without_moving_others() -> None:
    first = plan_flow_tasks(AB, None, parts("a-0", "a-1", "a-2", "b-0"), [], 2, heartbeat=False)
    assert layout(first) == [["a-0", "a-2"], ["a-1", "b-0"]]
    second = plan_flow_tasks(
        AB, first, parts("a-0", "a-1", "a-2", "a-3", "b-0"), [], 2, heartbeat=False
    )
    assert layout(second) == [["a-0", "a-2", "a-3"], ["a-1", "b-0"]], "MM2 would move b-0"
    assert second.generation == 2
    assert tasks_gaining_partitions(first, second) == frozenset()


def test_an_unchanged_plan_keeps_the_previous_generation() -> None:
    first = plan_flow_tasks(AB, None, parts("a-0", "a-1"), ["g"], 4, heartbeat=True)
    again = plan_flow_tasks(AB, first, parts("a-1", "a-0"), ["g"], 4, heartbeat=True)
    assert again is first
    assert plan_flow_tasks(AB, first, parts("a-0", "a-1"), ["g"], 4, heartbeat=False) == (
        FlowTasks(AB, 2, first.source, first.checkpoint, False)
    )


def test_removed_partitions_are_dropped_and_shares_rebalanced_with_few_moves() -> None:
    first = plan_flow_tasks(AB, None, parts(*(f"a-{i}" for i in range(6))), [], 3, heartbeat=False)
    assert layout(first) == [["a-0", "a-3"], ["a-1", "a-4"], ["a-2", "a-5"]]
    # Task 0 loses both of its partitions; one partition must move to keep sizes within 1.
    second = plan_flow_tasks(AB, first, parts("a-1", "a-2", "a-4", "a-5"), [], 3, heartbeat=False)
    assert layout(second) == [["a-5"], ["a-1", "a-4"], ["a-2"]]
    assert tasks_gaining_partitions(first, second) == {source_task_id(AB, 0)}


def test_fewer_partitions_than_tasks_drop_the_last_tasks() -> None:
    first = plan_flow_tasks(AB, None, parts("a-0", "a-1", "a-2"), [], 3, heartbeat=False)
    second = plan_flow_tasks(AB, first, parts("a-0", "a-2"), [], 3, heartbeat=False)
    assert layout(second) == [["a-0"], ["a-2"]]
    assert tasks_gaining_partitions(first, second) == {source_task_id(AB, 1)}
    assert plan_flow_tasks(AB, second, [], [], 3, heartbeat=False).source == ()


def test_tasks_max_below_one_is_refused() -> None:
    first = plan_flow_tasks(AB, None, parts("a-0"), [], 1, heartbeat=False)
    with pytest.raises(ValueError, match="tasks.max"):
        plan_flow_tasks(AB, first, parts("a-0"), [], 0, heartbeat=False)


def test_gaining_ignores_brand_new_partitions_and_a_first_plan() -> None:
    first = plan_flow_tasks(AB, None, parts("a-0", "a-1"), [], 2, heartbeat=False)
    assert tasks_gaining_partitions(None, first) == frozenset()
    grown = plan_flow_tasks(AB, first, parts("a-0", "a-1", "b-0"), [], 2, heartbeat=False)
    assert tasks_gaining_partitions(first, grown) == frozenset()


topics = st.sampled_from(["a", "b-c", "d.e", "z"])
partition_sets = st.sets(st.tuples(topics, st.integers(0, 15)), max_size=40)


@given(partition_sets, st.integers(1, 8))
def test_a_first_plan_equals_mm2(partitions: set[tuple[str, int]], tasks_max: int) -> None:
    planned = plan_flow_tasks(AB, None, list(partitions), [], tasks_max, heartbeat=False)
    assert planned.source == plan_source_tasks(AB, list(partitions), tasks_max)


@given(st.lists(partition_sets, min_size=1, max_size=5), st.integers(1, 8))
def test_only_added_partitions_never_move_and_sizes_stay_within_one(
    growth: list[set[tuple[str, int]]], tasks_max: int
) -> None:
    seen: set[tuple[str, int]] = set()
    previous: FlowTasks | None = None
    for added in growth:
        seen |= added
        planned = plan_flow_tasks(AB, previous, sorted(seen), [], tasks_max, heartbeat=False)
        owner = {p: t.index for t in (previous.source if previous else ()) for p in t.partitions}
        for task in planned.source:
            moved = [p for p in task.partitions if owner.get(p, task.index) != task.index]
            assert not moved, (
                f"{moved} moved to task {task.index} though only partitions were added"
            )
        sizes = [len(task.partitions) for task in planned.source]
        assert not sizes or max(sizes) - min(sizes) <= 1, f"unbalanced tasks: {sizes}"
        assert tasks_gaining_partitions(previous, planned) == frozenset()
        previous = planned


@given(st.lists(partition_sets, min_size=2, max_size=6), st.integers(1, 8))
def test_any_change_keeps_every_partition_in_exactly_one_balanced_task(
    history: list[set[tuple[str, int]]], tasks_max: int
) -> None:
    previous: FlowTasks | None = None
    for partitions in history:
        planned = plan_flow_tasks(AB, previous, list(partitions), [], tasks_max, heartbeat=False)
        dealt = [p for task in planned.source for p in task.partitions]
        assert sorted(dealt) == sorted(partitions), "each partition in exactly one task"
        assert len(planned.source) == min(tasks_max, len(partitions))
        sizes = [len(task.partitions) for task in planned.source]
        assert not sizes or max(sizes) - min(sizes) <= 1, f"unbalanced tasks: {sizes}"
        owner = {p: t.index for t in (previous.source if previous else ()) for p in t.partitions}
        gaining = {
            source_task_id(AB, t.index)
            for t in planned.source
            if any(owner.get(p, t.index) != t.index for p in t.partitions)
        }
        assert tasks_gaining_partitions(previous, planned) == gaining
        previous = planned

"""Task planning as MM2 does it (mm2-semantics §8)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.domain.tasks import (
    parse_assigned_partitions,
    plan_checkpoint_tasks,
    plan_source_tasks,
)


def test_source_partitions_are_dealt_round_robin() -> None:
    partitions = [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]
    tasks = plan_source_tasks("A->B", partitions, tasks_max=2)
    assert [t.partitions for t in tasks] == [
        (("a", 0), ("a", 2), ("b", 1)),
        (("a", 1), ("b", 0)),
    ]
    assert tasks[0].assigned_partitions() == "a-0,a-2,b-1"
    assert tasks[1].name == "A->B|MirrorSourceConnector-1"


def test_no_more_tasks_than_partitions_and_none_without_partitions() -> None:
    assert len(plan_source_tasks("A->B", [("a", 0)], tasks_max=8)) == 1
    assert plan_source_tasks("A->B", [], tasks_max=8) == ()


def test_checkpoint_groups_are_contiguous_and_first_tasks_get_the_extra() -> None:
    tasks = plan_checkpoint_tasks("A->B", ["g1", "g2", "g3", "g4", "g5"], tasks_max=3)
    assert [t.groups for t in tasks] == [("g1", "g2"), ("g3", "g4"), ("g5",)]


def test_tasks_max_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="tasks.max"):
        plan_source_tasks("A->B", [("a", 0)], tasks_max=0)


def test_assigned_partitions_split_at_the_last_dash() -> None:
    assert parse_assigned_partitions("my-topic-3,x-0") == (("my-topic", 3), ("x", 0))
    assert parse_assigned_partitions("") == ()
    with pytest.raises(ValueError):
        parse_assigned_partitions("nodash")


@given(
    st.sets(st.tuples(st.sampled_from(["a", "b-c", "d.e"]), st.integers(0, 20)), max_size=40),
    st.integers(1, 10),
)
def test_every_partition_in_exactly_one_task(
    partitions: set[tuple[str, int]], tasks_max: int
) -> None:
    tasks = plan_source_tasks("A->B", list(partitions), tasks_max)
    dealt = [tp for task in tasks for tp in task.partitions]
    assert sorted(dealt) == sorted(partitions)
    assert len(tasks) == min(tasks_max, len(partitions))
    sizes = [len(task.partitions) for task in tasks]
    assert not sizes or max(sizes) - min(sizes) <= 1
    for task in tasks:
        assert parse_assigned_partitions(task.assigned_partitions()) == task.partitions

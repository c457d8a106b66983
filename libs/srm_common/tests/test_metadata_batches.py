"""Admin changes cut under KRaft's records cap: every item once, in order, each request
under the limit unless one item alone passes it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.domain.metadata_batches import (
    chunks,
    growth_steps,
    halves,
    is_too_large,
    new_topic_records,
    partitions_at_creation,
)


@given(st.lists(st.integers(min_value=0, max_value=50)), st.integers(min_value=1, max_value=120))
def test_chunks_keep_every_item_in_order_under_the_limit(costs: list[int], limit: int) -> None:
    cut = chunks(list(range(len(costs))), lambda i: costs[i], limit)

    assert [i for chunk in cut for i in chunk] == list(range(len(costs)))
    for chunk in cut:
        assert chunk, "no empty request"
        total = sum(max(1, costs[i]) for i in chunk)
        assert total <= limit or len(chunk) == 1
    for before, after in zip(cut, cut[1:], strict=False):
        # A request ends only when the next item would not have fitted.
        assert sum(max(1, costs[i]) for i in before) + max(1, costs[after[0]]) > limit


def test_the_issue_example_is_two_requests() -> None:
    cost = new_topic_records(10, 2)
    cut = chunks(list(range(1000)), lambda _i: cost, 10_000)
    assert [len(c) * cost for c in cut] == [9997, 3003]


@given(st.lists(st.integers(), min_size=2))
def test_halves_give_two_smaller_nonempty_requests(items: list[int]) -> None:
    first, second = halves(items)
    assert first + second == items and first and second


@given(st.integers(0, 30_000), st.integers(0, 30_000), st.integers(1, 12_000))
def test_growth_steps_reach_the_target_adding_at_most_the_limit(
    current: int, wanted: int, limit: int
) -> None:
    steps = growth_steps(current, wanted, limit)
    previous = current
    for count in steps:
        assert 0 < count - previous <= limit
        previous = count
    assert previous == max(current, wanted)


def test_a_topic_too_large_for_one_request_is_created_with_what_fits() -> None:
    assert partitions_at_creation(10, 3, 10_000) == 10
    assert partitions_at_creation(25_000, 3, 10_000) == 9996
    assert partitions_at_creation(5, 3, 2) == 1


def test_both_refusals_of_kafka_4_are_recognised_and_a_policy_is_not() -> None:
    assert is_too_large("Unable to perform excessively large batch operation.")
    assert is_too_large("Excessively large number of partitions per request.")
    assert not is_too_large("Topic name is not allowed by policy")


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        chunks([1], lambda _i: 1, 0)

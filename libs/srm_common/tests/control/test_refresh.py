"""Topics and groups refreshed on their own intervals, from one listing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from srm_common.config import FlowConfig, parse_properties_text
from srm_common.control.planning import plan_flow_tasks
from srm_common.control.refresh import NEVER_MS, Due, RefreshSchedule, refreshed


@pytest.fixture
def flow() -> FlowConfig:
    config = parse_properties_text(
        "clusters = primary, backup\nprimary.bootstrap.servers = p:9092\n"
        "backup.bootstrap.servers = b:9092\nprimary->backup.enabled = true\n"
        "refresh.topics.interval.seconds = 600\nrefresh.groups.interval.seconds = 10\n"
    )
    return config.flow("primary", "backup")


def test_a_new_schedule_is_due_for_both_on_any_listing() -> None:
    schedule = RefreshSchedule()
    due = schedule.due(5_000)
    assert due == Due(topics=True, groups=True) and due
    assert schedule.fresh_after_ms(due) == 0


def test_each_half_comes_due_on_its_own_interval(flow: FlowConfig) -> None:
    schedule = RefreshSchedule()
    schedule.listed(flow, schedule.due(1_000), 1_000)
    assert not schedule.due(1_000 + 9_999)
    assert schedule.due(1_000 + 10_000) == Due(topics=False, groups=True)
    schedule.listed(flow, Due(topics=False, groups=True), 11_000)
    assert not schedule.due(20_999)
    assert schedule.due(21_000) == Due(topics=False, groups=True)
    assert schedule.due(601_000) == Due(topics=True, groups=True)
    # A listing older than either due time may miss what made it due.
    assert schedule.fresh_after_ms(schedule.due(601_000)) == 601_000
    assert schedule.fresh_after_ms(Due(topics=False, groups=True)) == 21_000


def test_a_switched_off_refresh_is_never_due_unless_asked(flow: FlowConfig) -> None:
    schedule = RefreshSchedule()
    off = replace(flow, refresh_topics_enabled=False, refresh_groups_enabled=False)
    schedule.listed(off, schedule.due(0), 0)
    assert (schedule.topics_ms, schedule.groups_ms) == (NEVER_MS, NEVER_MS)
    assert not schedule.due(10**12)
    schedule.ask(7_000)
    due = schedule.due(7_000)
    assert due == Due(topics=True, groups=True) and schedule.fresh_after_ms(due) == 7_000


def test_a_failed_listing_retries_only_the_halves_that_were_due(flow: FlowConfig) -> None:
    schedule = RefreshSchedule()
    schedule.listed(flow, schedule.due(0), 0)
    due = schedule.due(10_000)
    schedule.retry(due, 15_000)
    assert (schedule.topics_ms, schedule.groups_ms) == (600_000, 15_000)


def test_only_the_due_half_of_a_listing_is_planned_from() -> None:
    previous = plan_flow_tasks("f", None, [("a", 0), ("b", 0)], ["g1"], 2, heartbeat=True)
    listed = ([("a", 0), ("b", 0), ("c", 0)], ["g1", "g2"])
    assert refreshed(previous, Due(topics=False, groups=True), *listed) == (
        [("a", 0), ("b", 0)],
        ["g1", "g2"],
    )
    assert refreshed(previous, Due(topics=True, groups=False), *listed) == (
        [("a", 0), ("b", 0), ("c", 0)],
        ["g1"],
    )
    assert refreshed(None, Due(topics=False, groups=True), *listed) == (
        [("a", 0), ("b", 0), ("c", 0)],
        ["g1", "g2"],
    ), "a first plan takes everything"


def test_a_groups_refresh_never_moves_a_partition() -> None:
    previous = plan_flow_tasks("f", None, [("a", p) for p in range(5)], ["g1"], 3, heartbeat=True)
    listed = ([("a", p) for p in range(9)], ["g1", "g2", "g3"])
    partitions, groups = refreshed(previous, Due(topics=False, groups=True), *listed)
    planned = plan_flow_tasks("f", previous, partitions, groups, 3, heartbeat=True)
    assert planned.source == previous.source
    assert planned.generation == previous.generation + 1
    assert sorted(g for task in planned.checkpoint for g in task.groups) == ["g1", "g2", "g3"]

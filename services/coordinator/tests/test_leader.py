"""The leader's decisions with a fake discovery and a fake clock (no Kafka)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from srm_common.config import load_config, parse_yaml_text
from srm_common.config.control import control_plane
from srm_common.config.model import SrmConfig
from srm_common.control.beats import Beat
from srm_common.control.events import (
    AssignmentChanged,
    ConfigApplied,
    CoordinatorElected,
    DriverJoined,
    DriverLeft,
    Envelope,
    FlowEnabled,
    LogStarted,
    TaskConfigsGenerated,
    TopicsAllowed,
)
from srm_common.control.flow_records import FlowTasks
from srm_common.control.state import ControlState, apply
from srm_common.domain.tasks import TopicPartition
from srm_common.testing import Clock, FakeDiscovery
from srm_coordinator.leader import Leader, Round
from srm_coordinator.membership import Membership

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
  dr: {bootstrap.servers: "127.0.0.1:9"}
replication:
  tasks.max: 2
  refresh.topics.interval.seconds: 30
flows:
  primary->backup:
    enabled: true
    topics: [orders, payments]
  dr->backup:
    enabled: false
"""

# The leaders of these tests lead backup's log: the two flows into backup.
FLOW = "primary->backup"
OTHER = "dr->backup"
SESSION_MS = 10_000


@pytest.fixture
def config(tmp_path: Path) -> SrmConfig:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    return load_config(path)


def make_leader(
    config: SrmConfig,
    discovery: FakeDiscovery,
    clock: Clock,
    name: str = "c1",
    target: str = "backup",
) -> Leader:
    """A leader of ``target``'s log (the flows into it)."""
    return Leader(
        config,
        coordinator=name,
        url=f"http://{name}:1",
        membership=Membership(SESSION_MS),
        discovery=discovery,  # type: ignore[arg-type]
        control=control_plane(config).log(target),
        clock=clock,
        monotonic=clock,  # one clock in tests: wall and monotonic move together
    )


def commit(state: ControlState, round_: Round) -> ControlState:
    """What the service does with a round: append (offsets in order), fold."""
    for envelope in round_.envelopes:
        state = apply(
            state,
            Envelope(
                envelope.event, envelope.at_ms, envelope.by, envelope.command_id, state.offset + 1
            ),
        )
    return state


def beats(leader: Leader, drivers: Iterable[str], at_ms: int, generation: int = 0) -> None:
    leader.membership.observe(
        [Beat(d, f"http://{d}:1", "h", at_ms, generation) for d in drivers], at_ms
    )


def events_of(round_: Round, kind: type) -> list:
    return [e.event for e in round_.envelopes if isinstance(e.event, kind)]


PARTITIONS = {FLOW: [("orders", 0), ("orders", 1), ("payments", 0)]}


def test_take_over_announces_epoch_one_then_seeds_the_log_from_the_config(
    config: SrmConfig,
) -> None:
    leader = make_leader(config, FakeDiscovery(PARTITIONS), Clock(1_000))
    round_ = leader.take_over(ControlState())
    genesis, first, *rest = round_.envelopes
    assert isinstance(genesis.event, LogStarted) and genesis.event.restored_from is None
    assert round_.state.log_id == genesis.event.log_id
    assert first.event == CoordinatorElected("c1", "http://c1:1", 1)
    assert first.by == "coordinator c1"
    assert rest, "the config file seeds the flows"
    assert all(e.by == f"config file {config.source}" for e in rest)
    assert TopicsAllowed(FLOW, ("orders", "payments")) in [e.event for e in rest]
    assert FlowEnabled(FLOW) in [e.event for e in rest]
    assert isinstance(rest[-1].event, ConfigApplied)
    assert round_.state.flow(FLOW).enabled and not round_.state.flow(OTHER).enabled
    assert all(e.at_ms == 1_000 for e in round_.envelopes)


def test_next_leader_increments_the_epoch_and_applies_an_unchanged_file_as_nothing(
    config: SrmConfig,
) -> None:
    state = commit(
        ControlState(), make_leader(config, FakeDiscovery({}), Clock(1)).take_over(ControlState())
    )
    round_ = make_leader(config, FakeDiscovery({}), Clock(2), "c2").take_over(state)
    assert [e.event for e in round_.envelopes] == [CoordinatorElected("c2", "http://c2:1", 2)]


def test_a_log_older_than_log_ids_gets_one_from_its_first_new_leader(
    config: SrmConfig,
) -> None:
    old = apply(ControlState(), Envelope(CoordinatorElected("c0", "u", 4), 1, offset=0))
    round_ = make_leader(config, FakeDiscovery({}), Clock(2)).take_over(old)
    assert isinstance(round_.envelopes[0].event, LogStarted)
    assert round_.envelopes[1].event == CoordinatorElected("c1", "http://c1:1", 5)


def test_a_restored_log_runs_no_task_until_the_lost_logs_drivers_are_waited_out(
    config: SrmConfig,
) -> None:
    restored = apply(ControlState(), Envelope(LogStarted("L2", "L1", "audit export"), 1, offset=0))
    clock = Clock(1_000)
    leader = make_leader(config, FakeDiscovery(PARTITIONS), clock)
    state = commit(restored, leader.take_over(restored))
    beats(leader, ["d1"], clock.at_ms)
    state = commit(state, leader.round(state))
    assert state.tasks and not state.assignment, "held: a driver of the lost log may write"
    clock.at_ms += control_plane(config).log("backup").wait_out_ms + 1
    beats(leader, ["d1"], clock.at_ms)
    state = commit(state, leader.round(state))
    assert set(state.assignment) == set(state.all_task_ids())


def test_take_over_keeps_srm_control_changes_when_the_file_is_unchanged(
    config: SrmConfig,
) -> None:
    state = commit(
        ControlState(), make_leader(config, FakeDiscovery({}), Clock(1)).take_over(ControlState())
    )
    state = apply(state, Envelope(TopicsAllowed(FLOW, ("refunds",)), 5, "op", offset=99))
    round_ = make_leader(config, FakeDiscovery({}), Clock(6), "c2").take_over(state)
    assert round_.state.flow(FLOW).topics == ("orders", "payments", "refunds")


def tasks_of(event: TaskConfigsGenerated) -> FlowTasks:
    tasks = FlowTasks.from_events(event)
    assert tasks is not None, "small flows fit in one event"
    return tasks


def test_first_round_generates_task_configs_for_enabled_flows_and_heartbeats_for_every_pair(
    config: SrmConfig,
) -> None:
    discovery = FakeDiscovery(PARTITIONS, {FLOW: ["g1", "g2", "g3"]})
    leader = make_leader(config, discovery, Clock(1_000))
    state = commit(ControlState(), leader.take_over(ControlState()))
    round_ = leader.round(state)
    generated = {e.flow: tasks_of(e) for e in events_of(round_, TaskConfigsGenerated)}
    assert set(generated) == {FLOW, OTHER}
    forward = generated[FLOW]
    assert forward.generation == 1
    assert sorted(tp for t in forward.source for tp in t.partitions) == sorted(PARTITIONS[FLOW])
    assert len(forward.source) == 2  # tasks.max
    assert sorted(g for task in forward.checkpoint for g in task.groups) == ["g1", "g2", "g3"]
    assert forward.heartbeat
    other = generated[OTHER]
    assert other.source == () and other.checkpoint == () and other.heartbeat
    assert OTHER not in discovery.asked, "a disabled flow is not discovered"
    assert all(e.by == "coordinator c1" for e in round_.envelopes)


def test_round_with_two_beating_drivers_assigns_every_task(config: SrmConfig) -> None:
    clock = Clock(1_000)
    leader = make_leader(config, FakeDiscovery(PARTITIONS, {FLOW: ["g1"]}), clock)
    state = commit(ControlState(), leader.take_over(ControlState()))
    beats(leader, ["d1", "d2"], 1_000)
    round_ = leader.round(state)
    assert {e.driver for e in events_of(round_, DriverJoined)} == {"d1", "d2"}
    [change] = events_of(round_, AssignmentChanged)
    state = commit(state, round_)
    every = set(state.all_task_ids())
    assert every == {
        f"{FLOW}|MirrorSourceConnector-0",
        f"{FLOW}|MirrorSourceConnector-1",
        f"{FLOW}|MirrorCheckpointConnector-0",
        f"{FLOW}|MirrorHeartbeatConnector-0",
        f"{OTHER}|MirrorHeartbeatConnector-0",
    }
    assert set(change.assigned) == every and change.generation == 1
    assert set(state.assignment.values()) == {"d1", "d2"}
    loads = sorted(len(state.tasks_of(d)) for d in ("d1", "d2"))
    assert loads == [2, 3]
    # Nothing changed: the next round decides nothing.
    clock.at_ms = 1_200
    beats(leader, ["d1", "d2"], 1_200, generation=1)
    assert leader.round(state).envelopes == []


def test_flows_are_not_rediscovered_before_their_refresh_interval_unless_asked(
    config: SrmConfig,
) -> None:
    clock = Clock(1_000)
    discovery = FakeDiscovery(PARTITIONS)
    leader = make_leader(config, discovery, clock)
    state = commit(ControlState(), leader.take_over(ControlState()))
    state = commit(state, leader.round(state))
    discovery.asked.clear()
    clock.at_ms = 2_000
    leader.round(state)
    assert discovery.asked == []
    leader.refresh([FLOW, "nowhere->else"])
    leader.round(state)
    assert discovery.asked == [FLOW]
    discovery.asked.clear()
    clock.at_ms = 2_000 + 30_000 - 1
    leader.round(state)
    assert discovery.asked == []
    clock.at_ms = 2_000 + 30_000
    leader.round(state)
    assert discovery.asked == [FLOW]


def test_discovery_failure_is_retried_later_without_deciding_task_configs(
    config: SrmConfig,
) -> None:
    clock = Clock(1_000)
    discovery = FakeDiscovery(PARTITIONS)
    discovery.failing.add(FLOW)
    leader = make_leader(config, discovery, clock)
    state = commit(ControlState(), leader.take_over(ControlState()))
    round_ = leader.round(state)
    assert {e.flow for e in events_of(round_, TaskConfigsGenerated)} == {OTHER}
    state = commit(state, round_)
    discovery.failing.clear()
    clock.at_ms = 1_000 + 5_000
    round_ = leader.round(state)
    assert [e.flow for e in events_of(round_, TaskConfigsGenerated)] == [FLOW]


def test_partitions_moving_between_tasks_revoke_the_gaining_tasks_in_the_same_round(
    config: SrmConfig,
) -> None:
    clock = Clock(1_000)
    discovery = FakeDiscovery(
        {FLOW: [("orders", 0), ("orders", 1), ("payments", 0), ("payments", 1)]}
    )
    leader = make_leader(config, discovery, clock)
    state = commit(ControlState(), leader.take_over(ControlState()))
    beats(leader, ["d1", "d2"], 1_000)
    state = commit(state, leader.round(state))
    before = state.tasks[FLOW]
    assert [t.partitions for t in before.source] == [
        (("orders", 0), ("payments", 0)),
        (("orders", 1), ("payments", 1)),
    ]
    # Task 1's partitions disappear: task 0 keeps its share, payments-0 moves to task 1.
    discovery.found[FLOW] = [("orders", 0), ("payments", 0)]
    clock.at_ms = 2_000
    beats(leader, ["d1", "d2"], 2_000, generation=state.generation)
    leader.refresh([FLOW])
    round_ = leader.round(state)
    [generated] = events_of(round_, TaskConfigsGenerated)
    assert generated.generation == before.generation + 1
    [change] = events_of(round_, AssignmentChanged)
    owner = {tp: task.index for task in before.source for tp in task.partitions}
    gaining = {
        f"{FLOW}|MirrorSourceConnector-{i}"
        for i, task in enumerate(tasks_of(generated).source)
        if any(owner.get(tp, i) != i for tp in task.partitions)
    }
    assert gaining == {f"{FLOW}|MirrorSourceConnector-1"}
    assert gaining <= set(change.revoked)
    assert not gaining & set(change.assigned)
    # Not reassigned until every driver reports the new generation.
    state = commit(state, round_)
    clock.at_ms = 2_200
    beats(leader, ["d1", "d2"], 2_200, generation=state.generation - 1)
    assert not leader.round(state).envelopes
    beats(leader, ["d1", "d2"], 2_300, generation=state.generation)
    [change] = events_of(leader.round(state), AssignmentChanged)
    assert gaining <= set(change.assigned)


def test_a_flow_whose_listing_is_pending_stays_due_and_holds_up_nobody(
    config: SrmConfig,
) -> None:
    clock = Clock(1_000)
    discovery = FakeDiscovery(PARTITIONS)
    discovery.pending.add(FLOW)
    leader = make_leader(config, discovery, clock)
    state = commit(ControlState(), leader.take_over(ControlState()))
    beats(leader, ["d1"], 1_000)
    round_ = leader.round(state)
    # The other flow's tasks are planned and assigned in the same round.
    assert {e.flow for e in events_of(round_, TaskConfigsGenerated)} == {OTHER}
    [change] = events_of(round_, AssignmentChanged)
    assert change.assigned == {f"{OTHER}|MirrorHeartbeatConnector-0": "d1"}
    state = commit(state, round_)
    # Asked again next round, with the same freshness; planned once the listing is in.
    clock.at_ms = 1_200
    discovery.asked.clear()
    leader.round(state)
    assert discovery.asked == [FLOW]
    discovery.pending.clear()
    clock.at_ms = 1_400
    round_ = leader.round(state)
    assert [e.flow for e in events_of(round_, TaskConfigsGenerated)] == [FLOW]


def test_refresh_asks_for_a_listing_taken_after_the_request(config: SrmConfig) -> None:
    clock = Clock(1_000)
    discovery = FakeDiscovery(PARTITIONS)
    leader = make_leader(config, discovery, clock)
    state = commit(ControlState(), leader.take_over(ControlState()))
    state = commit(state, leader.round(state))
    assert discovery.fresh_after == [0], "after a take-over any listing will do"
    clock.at_ms = 4_321
    leader.refresh([FLOW])
    clock.at_ms = 4_500
    leader.round(state)
    assert discovery.fresh_after[-1] == 4_321


def test_tasks_of_a_driver_that_went_silent_wait_out_its_writes_before_they_move(
    config: SrmConfig,
) -> None:
    clock = Clock(1_000)
    leader = make_leader(config, FakeDiscovery(PARTITIONS, {FLOW: ["g1"]}), clock)
    state = commit(ControlState(), leader.take_over(ControlState()))
    beats(leader, ["d1", "d2"], 1_000)
    state = commit(state, leader.round(state))
    held_by_d1 = set(state.tasks_of("d1"))
    assert held_by_d1
    # d1 goes silent (paused, cut off); d2 keeps beating past d1's session.
    for at_ms in range(2_000, 1_000 + SESSION_MS + 101, 1_000):
        beats(leader, ["d2"], at_ms, generation=1)
    clock.at_ms = 1_000 + SESSION_MS + 100
    beats(leader, ["d2"], clock.at_ms, generation=1)
    round_ = leader.round(state)
    assert [e.driver for e in events_of(round_, DriverLeft)] == ["d1"]
    assert held_by_d1 <= set(round_.freed), "every task d1 held waits"
    assert not events_of(round_, AssignmentChanged) or not (
        held_by_d1 & set(events_of(round_, AssignmentChanged)[0].assigned)
    ), "d1's tasks are not given to d2 in the round that removed d1"
    state = commit(state, round_)
    leader.committed(round_, round_.state)
    wait_ms = control_plane(config).log("backup").wait_out_ms
    assert wait_ms > SESSION_MS / 2, "the lease and the write timeout are waited out"
    clock.at_ms += wait_ms - 500
    beats(leader, ["d2"], clock.at_ms, generation=state.generation)
    early = leader.round(state)
    moved = set().union(*(e.assigned for e in events_of(early, AssignmentChanged)))
    assert not (held_by_d1 & moved), "nothing moves before d1's last write could land"
    state = commit(state, early)
    clock.at_ms += 1_000
    beats(leader, ["d2"], clock.at_ms, generation=state.generation)
    late = leader.round(state)
    moved = set().union(*(e.assigned for e in events_of(late, AssignmentChanged)))
    assert held_by_d1 <= moved and set(moved) <= set(state.all_task_ids())


def test_a_new_leader_waits_out_every_task_it_finds_without_a_driver(config: SrmConfig) -> None:
    clock = Clock(1_000)
    first = make_leader(config, FakeDiscovery(PARTITIONS, {FLOW: ["g1"]}), clock)
    state = commit(ControlState(), first.take_over(ControlState()))
    state = commit(state, first.round(state))  # task configs, no driver yet
    assert state.all_task_ids() and not state.assignment
    second = make_leader(config, FakeDiscovery(PARTITIONS, {FLOW: ["g1"]}), clock, "c2")
    take_over = second.take_over(state)
    assert set(take_over.freed) == set(state.all_task_ids())
    state = commit(state, take_over)
    second.committed(take_over, take_over.state)
    beats(second, ["d1"], clock.at_ms)
    round_ = second.round(state)
    assert not events_of(round_, AssignmentChanged), "a previous leader may have freed them"


def config_with(*lines: str) -> SrmConfig:
    """CONFIG with more top-level keys (YAML lines under ``replication:``)."""
    anchor = "  refresh.topics.interval.seconds: 30\n"
    return parse_yaml_text(CONFIG.replace(anchor, anchor + "".join(f"  {x}\n" for x in lines)))


def planned(state: ControlState) -> tuple[list[TopicPartition], list[str]]:
    tasks = state.tasks[FLOW]
    partitions = sorted(tp for task in tasks.source for tp in task.partitions)
    return partitions, sorted(g for task in tasks.checkpoint for g in task.groups)


def test_groups_are_refreshed_on_their_own_interval_and_partitions_on_theirs() -> None:
    clock = Clock(1_000)
    discovery = FakeDiscovery({FLOW: list(PARTITIONS[FLOW])}, {FLOW: ["g1"]})
    leader = make_leader(config_with("refresh.groups.interval.seconds: 5"), discovery, clock)
    state = commit(ControlState(), leader.take_over(ControlState()))
    state = commit(state, leader.round(state))
    before = state.tasks[FLOW]
    discovery.found[FLOW].append(("orders", 2))
    discovery.found_groups[FLOW].append("g2")
    discovery.asked.clear()
    clock.at_ms = 1_000 + 5_000 - 1
    leader.round(state)
    assert discovery.asked == []
    # Groups are due: the new group is planned, the new partition is not, nothing moves.
    clock.at_ms = 1_000 + 5_000
    round_ = leader.round(state)
    assert discovery.asked == [FLOW] and discovery.fresh_after[-1] == 6_000
    state = commit(state, round_)
    assert planned(state) == (sorted(PARTITIONS[FLOW]), ["g1", "g2"])
    assert state.tasks[FLOW].source == before.source
    # Topics are due on theirs.
    clock.at_ms = 1_000 + 30_000
    state = commit(state, leader.round(state))
    assert planned(state) == (sorted([*PARTITIONS[FLOW], ("orders", 2)]), ["g1", "g2"])


@pytest.mark.parametrize(
    ("switched_off", "kept"),
    [("refresh.topics.enabled: false", "partitions"), ("refresh.groups.enabled: false", "groups")],
)
def test_a_refresh_switched_off_keeps_what_the_first_plan_found(
    switched_off: str, kept: str
) -> None:
    clock = Clock(1_000)
    discovery = FakeDiscovery({FLOW: list(PARTITIONS[FLOW])}, {FLOW: ["g1"]})
    config = config_with(switched_off, "refresh.groups.interval.seconds: 5")
    leader = make_leader(config, discovery, clock)
    state = commit(ControlState(), leader.take_over(ControlState()))
    state = commit(state, leader.round(state))
    first_partitions, first_groups = planned(state)
    discovery.found[FLOW].append(("orders", 2))
    discovery.found_groups[FLOW].append("g2")
    for at_ms in range(1_000, 200_000, 1_000):
        clock.at_ms = at_ms
        state = commit(state, leader.round(state))
    partitions, groups = planned(state)
    if kept == "partitions":
        assert (partitions, groups) == (first_partitions, ["g1", "g2"])
    else:
        assert (partitions, groups) == (sorted([*first_partitions, ("orders", 2)]), first_groups)


def test_no_heartbeat_task_is_planned_where_heartbeats_are_switched_off() -> None:
    config = config_with("emit.heartbeats.enabled: false")
    leader = make_leader(config, FakeDiscovery(PARTITIONS, {FLOW: ["g1"]}), Clock(1_000))
    state = commit(ControlState(), leader.take_over(ControlState()))
    generated = {e.flow: tasks_of(e) for e in events_of(leader.round(state), TaskConfigsGenerated)}
    assert not generated[FLOW].heartbeat and generated[FLOW].source
    assert OTHER not in generated or not generated[OTHER].heartbeat


def test_a_wall_clock_step_neither_hastens_nor_stalls_refreshes(config: SrmConfig) -> None:
    """Schedules run on the monotonic clock; the wall clock only stamps events."""
    wall, tick = Clock(1_000_000), Clock(1_000)
    discovery = FakeDiscovery(PARTITIONS)
    leader = Leader(
        config,
        coordinator="c1",
        url="http://c1:1",
        membership=Membership(SESSION_MS),
        discovery=discovery,  # type: ignore[arg-type]
        control=control_plane(config).log("backup"),
        clock=wall,
        monotonic=tick,
    )
    state = commit(ControlState(), leader.take_over(ControlState()))
    state = commit(state, leader.round(state))
    discovery.asked.clear()
    wall.at_ms += 3_600_000  # an hour forward: nothing becomes due
    leader.round(state)
    assert discovery.asked == []
    wall.at_ms -= 7_200_000  # two hours back: the interval still elapses on time
    tick.at_ms += 30_000
    round_ = leader.round(state)
    assert discovery.asked == [FLOW]
    assert round_.now_ms == wall.at_ms  # events keep the wall time


def _other_file(tmp_path: Path) -> SrmConfig:
    """The same clusters with another allowlist and the other flow switched on."""
    path = tmp_path / "other" / "srm.yaml"
    path.parent.mkdir()
    path.write_text(
        CONFIG.replace("topics: [orders, payments]", "topics: [orders]").replace(
            "  dr->backup:\n    enabled: false", "  dr->backup:\n    enabled: true"
        )
    )
    return load_config(path)


def test_a_take_over_never_applies_a_different_file_by_itself(
    config: SrmConfig, tmp_path: Path
) -> None:
    state = commit(
        ControlState(), make_leader(config, FakeDiscovery({}), Clock(1)).take_over(ControlState())
    )
    other = make_leader(_other_file(tmp_path), FakeDiscovery({}), Clock(2), "c2")
    round_ = other.take_over(state)
    assert [e.event for e in round_.envelopes] == [CoordinatorElected("c2", "http://c2:1", 2)]
    assert other.config_drift is not None
    assert "differs from the log's baseline" in other.config_drift
    assert "--apply-config" in other.config_drift
    # ...and the first file's leader, taking over again, finds nothing to change either.
    back = make_leader(config, FakeDiscovery({}), Clock(3), "c1")
    assert [e.event for e in back.take_over(commit(state, round_)).envelopes] == [
        CoordinatorElected("c1", "http://c1:1", 3)
    ]
    assert back.config_drift is None


def test_a_coordinator_told_to_applies_its_file_as_the_new_baseline(
    config: SrmConfig, tmp_path: Path
) -> None:
    state = commit(
        ControlState(), make_leader(config, FakeDiscovery({}), Clock(1)).take_over(ControlState())
    )
    told = make_leader(_other_file(tmp_path), FakeDiscovery({}), Clock(2), "c2")
    told.apply_config = True
    state = commit(state, told.take_over(state))
    assert told.config_drift is None
    assert state.flow(OTHER).enabled and state.flow(FLOW).topics == ("orders",)

"""The control state as a fold over the event log."""

from __future__ import annotations

import json

import pytest
from srm_common.control.events import (
    AssignmentChanged,
    ConfigApplied,
    CoordinatorElected,
    DriverJoined,
    DriverLeft,
    Envelope,
    Event,
    FlowBaseline,
    FlowDisabled,
    FlowEnabled,
    GroupsDenied,
    TopicsAllowed,
    TopicsAllowRemoved,
    TopicsDenied,
)
from srm_common.control.flow_records import FlowState, FlowTasks
from srm_common.control.state import COMMANDS_REMEMBERED, ControlState, apply, replay
from srm_common.control.state_records import AppliedCommand
from srm_common.control.task_configs import task_configs
from srm_common.control.task_ids import (
    checkpoint_task_id,
    heartbeat_task_id,
    parse_task_id,
    source_task_id,
)
from srm_common.domain.tasks import CheckpointTask, SourceTask

AB = "primary->backup"


def log(*events: Event, start_ms: int = 1000) -> list[Envelope]:
    """Events as read from the log: offsets 0.., one second apart."""
    return [Envelope(e, start_ms + 1000 * i, offset=i) for i, e in enumerate(events)]


def fold(*events: Event) -> ControlState:
    return replay(log(*events))


TASKS = task_configs(
    AB, 1, ((("orders", 0), ("orders", 2)), (("orders", 1),)), (("billing",),), True
)


def test_task_ids_name_the_flow_and_mm2_task_and_parse_back() -> None:
    assert source_task_id(AB, 3) == "primary->backup|MirrorSourceConnector-3"
    assert checkpoint_task_id(AB, 0) == "primary->backup|MirrorCheckpointConnector-0"
    assert heartbeat_task_id(AB) == "primary->backup|MirrorHeartbeatConnector-0"
    assert parse_task_id(source_task_id(AB, 12)) == (AB, "source", 12)
    assert parse_task_id(checkpoint_task_id(AB, 1)) == (AB, "checkpoint", 1)
    assert parse_task_id(heartbeat_task_id(AB)) == (AB, "heartbeat", 0)
    for bad in ("MirrorSourceConnector-1", f"{AB}|MirrorSinkConnector-1", f"{AB}|x-y"):
        with pytest.raises(ValueError, match="is not a task id"):
            parse_task_id(bad)


def test_an_empty_log_is_the_initial_state() -> None:
    state = replay([])
    assert state == ControlState()
    assert state.flow(AB) == FlowState() and state.leader is None and state.generation == 0


def test_envelope_position_and_time_are_recorded() -> None:
    state = fold(FlowEnabled(AB), FlowDisabled(AB))
    assert (state.offset, state.at_ms) == (1, 2000)
    assert not state.flow(AB).enabled


def test_election_and_config_applied_set_leader_and_baseline() -> None:
    baseline = {AB: FlowBaseline(True, ("orders",), (), (".*",), ())}
    state = fold(
        CoordinatorElected("c1", "http://c1", 1), ConfigApplied("srm.properties", baseline)
    )
    assert state.leader is not None
    assert (state.leader.coordinator, state.leader.epoch, state.leader.since_ms) == ("c1", 1, 1000)
    assert state.baseline == baseline and state.config_path == "srm.properties"


def test_pattern_events_edit_the_right_list_in_order_without_duplicates() -> None:
    state = fold(
        TopicsAllowed(AB, ("orders.*", "payments")),
        TopicsAllowed(AB, ("payments", "audit", "audit")),
        TopicsDenied(AB, ("orders\\.tmp",)),
        GroupsDenied(AB, ("test-.*",)),
        TopicsAllowRemoved(AB, ("orders.*", "never-there")),
    )
    assert state.flow(AB) == FlowState(
        enabled=False,
        topics=("payments", "audit"),
        topics_exclude=("orders\\.tmp",),
        groups=(),
        groups_exclude=("test-.*",),
    )


def test_task_configs_are_folded_into_source_and_checkpoint_tasks() -> None:
    state = fold(TASKS)
    tasks = state.tasks[AB]
    assert tasks == FlowTasks(
        AB,
        1,
        (SourceTask(AB, 0, (("orders", 0), ("orders", 2))), SourceTask(AB, 1, (("orders", 1),))),
        (CheckpointTask(AB, 0, ("billing",)),),
        True,
    )
    assert tasks.to_events() == [TASKS]
    assert state.all_task_ids() == (
        source_task_id(AB, 0),
        source_task_id(AB, 1),
        checkpoint_task_id(AB, 0),
        heartbeat_task_id(AB),
    )
    assert state.source_task(source_task_id(AB, 1)) == SourceTask(AB, 1, (("orders", 1),))
    assert state.source_task(source_task_id(AB, 2)) is None
    assert state.source_task(checkpoint_task_id(AB, 0)) is None
    assert state.source_task("garbage") is None
    assert state.checkpoint_task(checkpoint_task_id(AB, 0)) == CheckpointTask(AB, 0, ("billing",))
    assert state.checkpoint_task(source_task_id("x->y", 0)) is None


def test_new_task_configs_drop_assignments_of_tasks_that_are_gone() -> None:
    other = source_task_id("backup->primary", 0)
    state = fold(
        TASKS,
        AssignmentChanged(1, {source_task_id(AB, 1): "d1", source_task_id(AB, 0): "d2"}, ()),
        AssignmentChanged(2, {other: "d1"}, ()),
        task_configs(AB, 2, ((("orders", 0),),), (), False),
    )
    assert state.assignment == {source_task_id(AB, 0): "d2", other: "d1"}
    assert state.generation == 2, "task configs do not change the assignment generation"


def test_drivers_join_and_leave_with_their_assignments() -> None:
    state = fold(
        DriverJoined("d1", "http://d1", "h1"),
        DriverJoined("d2", "http://d2", ""),
        AssignmentChanged(1, {"t1": "d1", "t2": "d2", "t3": "d1"}, ()),
        DriverLeft("d1", "no heartbeat"),
    )
    assert set(state.drivers) == {"d2"} and state.drivers["d2"].joined_at_ms == 2000
    assert state.assignment == {"t2": "d2"}
    assert state.tasks_of("d2") == ("t2",) and state.tasks_of("d1") == ()
    assert state.task_owner("t1") is None and state.task_owner("t2") == "d2"


def test_assignment_changes_revoke_then_assign_and_set_the_generation() -> None:
    state = fold(
        AssignmentChanged(1, {"t1": "d1", "t2": "d1"}, ()),
        AssignmentChanged(2, {}, ("t2", "unknown")),
        AssignmentChanged(3, {"t2": "d2", "t9": "ghost"}, ()),
    )
    assert state.generation == 3
    assert state.assignment == {"t1": "d1", "t2": "d2", "t9": "ghost"}, "the fold is total"
    assert state.tasks_of("d1") == ("t1",)


def test_apply_returns_a_new_state_and_leaves_the_old_one_alone() -> None:
    before = fold(DriverJoined("d1", "u", "h"))
    after = apply(before, Envelope(DriverLeft("d1", "gone"), 5, offset=9))
    assert "d1" in before.drivers and "d1" not in after.drivers
    assert after.offset == 9


def test_replay_stops_at_a_time_or_an_offset() -> None:
    envelopes = log(FlowEnabled(AB), TopicsAllowed(AB, ("a",)), TopicsAllowed(AB, ("b",)))
    assert replay(envelopes, until_ms=2000).flow(AB).topics == ("a",)
    assert replay(envelopes, until_ms=1999).flow(AB) == FlowState(enabled=True)
    assert replay(envelopes, until_offset=0).offset == 0
    assert replay(envelopes, until_ms=10**9, until_offset=1).flow(AB).topics == ("a",)


def test_to_json_is_plain_sorted_json_and_digest_ignores_position() -> None:
    events = (
        CoordinatorElected("c1", "u", 1),
        ConfigApplied("p", {AB: FlowBaseline(True, ("x",), (), (), ())}),
        FlowEnabled(AB),
        TASKS,
        DriverJoined("d1", "u", "h"),
        AssignmentChanged(1, {source_task_id(AB, 0): "d1"}, ()),
    )
    state = fold(*events)
    view = state.to_json()
    text = json.dumps(view, sort_keys=True)
    assert json.loads(text) == view, "to_json must be plain JSON values"
    assert list(view) == sorted(view)
    assert view["tasks"][AB]["source"][0] == [["orders", 0], ["orders", 2]]  # type: ignore[index]
    elsewhere = replay(Envelope(e.event, e.at_ms, offset=e.offset + 100) for e in log(*events))
    assert elsewhere.to_json() != view and elsewhere.digest() == state.digest()
    assert fold(*events[:-1]).digest() != state.digest()
    assert replay(log(*events, start_ms=50_000)).digest() != state.digest(), "join times count"


def test_command_ids_are_remembered_newest_first_forgotten_beyond_the_limit() -> None:
    state = ControlState()
    for i, event in enumerate((TopicsAllowed(AB, ("a",)), TopicsDenied(AB, ("b",)))):
        state = apply(state, Envelope(event, 1000, "alice", "c-0", offset=i))
    state = apply(state, Envelope(FlowEnabled(AB), 2000, None, None, offset=2))
    assert state.commands == {"c-0": AppliedCommand(1000, "alice", 2)}
    assert state.to_json()["commands"] == {"c-0": {"at_ms": 1000, "by": "alice", "events": 2}}
    digest = state.digest()
    for i in range(1, COMMANDS_REMEMBERED + 1):
        state = apply(state, Envelope(FlowEnabled(AB), 3000, "bob", f"c-{i}", offset=2 + i))
    assert len(state.commands) == COMMANDS_REMEMBERED
    assert "c-0" not in state.commands and f"c-{COMMANDS_REMEMBERED}" in state.commands
    assert next(iter(state.commands)) == "c-1", "the oldest goes first"
    assert state.digest() != digest

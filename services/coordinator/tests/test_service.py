"""The coordinator's loop steps with fake Kafka adapters: a failed append steps down, a
command not reached in time is withdrawn."""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import Future

import pytest
from srm_common.config.model import SrmConfig
from srm_common.control.commands import ChangePatterns
from srm_common.control.events import (
    ConfigApplied,
    CoordinatorElected,
    Envelope,
    FlowEnabled,
    LogMigrated,
    LogStarted,
    PartitionHalted,
    TopicsAllowed,
    TopicsDenied,
)
from srm_common.control.state import apply, replay
from srm_common.errors import ControlLogError, Fenced
from srm_common.tracecontext import TraceContext
from srm_coordinator.command_queue import CommandTimedOut, Queued
from srm_coordinator.leader import baseline_of
from srm_coordinator.leader_term import CommandResult
from srm_coordinator.migration import Migration
from srm_coordinator.service import Coordinator, NotLeader
from srm_coordinator.testing import Fakes


@pytest.fixture
def coordinator(leading: Coordinator) -> Coordinator:
    return leading


def queue(service: Coordinator, trace: TraceContext | None = None) -> Future[CommandResult]:
    future: Future[CommandResult] = Future()
    command = ChangePatterns("primary->backup", "topics", "add", ("payments",))
    service._commands._queue.put(Queued(command, "op", trace, future))
    return future


def test_the_events_a_command_causes_carry_its_trace_when_the_request_had_one(
    coordinator: Coordinator, fakes: Fakes
) -> None:
    parent = TraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    queue(coordinator, parent)
    coordinator._round()
    traced = {type(e.event).__name__: e.trace for e in fakes.writer.appended if e.trace}
    assert set(traced) >= {"TopicsAllowed", "TaskConfigsGenerated"}
    assert {t.trace_id for t in traced.values()} == {parent.trace_id}
    # The leader's span is the parent the driver continues from, not the caller's.
    assert traced["TopicsAllowed"].traceparent != parent.traceparent


def test_a_command_without_a_trace_starts_one_at_the_leader_when_none_was_sent(
    coordinator: Coordinator, fakes: Fakes
) -> None:
    queue(coordinator)
    coordinator._round()
    ids = {e.trace.trace_id for e in fakes.writer.appended if e.trace is not None}
    allowed = next(
        e for e in fakes.writer.appended if isinstance(e.event, TopicsAllowed) and e.by == "op"
    )
    assert allowed.trace is not None and ids == {allowed.trace.trace_id}


def test_a_round_appends_and_folds_its_events(coordinator: Coordinator) -> None:
    future = queue(coordinator)
    coordinator._round()
    assert future.result(0).changes == ("topics allowlist of primary->backup: + payments",)
    assert coordinator.state.flow("primary->backup").topics == ("orders", "payments")
    assert coordinator.state.tasks["primary->backup"].generation == 1
    assert coordinator.leading


@pytest.mark.parametrize(
    "error",
    [Fenced("another coordinator leads"), ControlLogError("commit timed out")],
    ids=["fenced", "append failed"],
)
def test_a_failed_command_append_steps_down_without_crashing_the_round(
    coordinator: Coordinator, fakes: Fakes, error: Exception
) -> None:
    fakes.writer.error = error
    before = coordinator.state
    future = queue(coordinator)
    coordinator._round()
    assert not coordinator.leading
    assert coordinator.config_drift() is None and fakes.writer.closed and fakes.beats.closed
    with pytest.raises(NotLeader):
        future.result(0)
    assert coordinator.state is before


def test_a_failed_round_append_steps_down_so_the_next_loop_takes_over_again(
    coordinator: Coordinator, fakes: Fakes
) -> None:
    fakes.writer.error = ControlLogError("commit timed out")
    coordinator._round()
    assert not coordinator.leading and fakes.writer.closed


def test_members_is_empty_when_not_leading(coordinator: Coordinator, fakes: Fakes) -> None:
    fakes.writer.error = ControlLogError("commit timed out")
    coordinator._round()  # steps down, its membership left behind
    assert coordinator.members() == {}


def test_a_command_not_reached_in_time_is_withdrawn_and_never_applied(
    coordinator: Coordinator,
) -> None:
    command = ChangePatterns("primary->backup", "topics", "add", ("late",))
    with pytest.raises(CommandTimedOut, match="withdrawn and not applied"):
        coordinator.submit(command, "op", timeout=0.05)  # no round runs meanwhile
    coordinator._round()
    assert coordinator.state.flow("primary->backup").topics == ("orders",)
    assert coordinator._commands.empty()


def test_a_command_the_loop_has_started_is_waited_for(
    coordinator: Coordinator, fakes: Fakes
) -> None:
    """Past the timeout but already being written: not withdrawn, its outcome is told."""
    entered, go = threading.Event(), threading.Event()
    fakes.writer.before_append = lambda: (entered.set(), go.wait(30))
    command = ChangePatterns("primary->backup", "topics", "add", ("payments",))
    outcome: list[object] = []
    started = time.monotonic()
    submitter = threading.Thread(
        target=lambda: outcome.append(coordinator.submit(command, "op", timeout=4.0))
    )
    submitter.start()
    while coordinator._commands.empty() and submitter.is_alive():
        time.sleep(0.01)
    rounds = threading.Thread(target=coordinator._round)
    rounds.start()
    assert entered.wait(10)
    time.sleep(max(0.0, started + 4.5 - time.monotonic()))  # the first wait is over
    go.set()
    submitter.join(10)
    rounds.join(10)
    assert outcome, "submit raised (see the thread's exception above)"
    [result] = outcome
    assert isinstance(result, CommandResult)
    assert result.changes == ("topics allowlist of primary->backup: + payments",)


def test_a_flows_trace_ends_once_its_traced_tasks_all_run_when_assigned(
    coordinator: Coordinator,
) -> None:
    parent = TraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    queue(coordinator, parent)
    coordinator._round()
    term = coordinator._term
    assert term is not None
    leader = term.leader
    # No driver yet: the assignment that hands the flow's tasks out is still to come.
    assert "primary->backup" in leader.traces
    tasks = coordinator.state.tasks["primary->backup"].task_ids()
    running = dataclasses.replace(coordinator.state, assignment={t: "d1" for t in tasks})
    leader._settle_traces(running)
    assert leader.traces == {}


def legacy_log(config: SrmConfig) -> Migration:
    """An earlier release's single log of ``config``'s file: both flows' lists changed by
    srm-control since, and a halt."""
    events = [
        LogStarted("L0", None, ""),
        CoordinatorElected("c0", "http://c0:1", 3),
        ConfigApplied(config.source, baseline_of(config)),
        FlowEnabled("primary->backup"),
        TopicsAllowed("primary->backup", ("orders", "sales.*")),
        TopicsDenied("primary->backup", ("sales\\.tmp",)),
        TopicsAllowed("backup->primary", ("billing",)),
        PartitionHalted("primary->backup", "orders", 2, "conflict", "not ours", "d9"),
    ]
    envelopes = [Envelope(e, 1000 + i, "alice", offset=2 * i) for i, e in enumerate(events)]
    return Migration(replay(envelopes), "srm-control.events.internal on primary")


def test_the_first_leader_of_a_target_moves_its_flows_from_the_single_log_once(
    standby: Coordinator, fakes: Fakes, leading_config: SrmConfig
) -> None:
    fakes.legacy.migration = legacy_log(leading_config)
    standby.replay("http://c1:1")
    standby.lead()
    assert standby.leading
    first = fakes.writer.appended[0]
    assert isinstance(first.event, LogStarted) and first.event.target == "backup"
    assert first.event.source.startswith("migrated from log L0 (srm-control.events.internal")
    assert first.by == "coordinator c1 (migration)"
    state = standby.state
    flow = state.flow("primary->backup")
    assert flow.enabled and flow.topics == ("orders", "sales.*")
    assert flow.topics_exclude == ("sales\\.tmp",), "srm-control's deny list survives"
    assert [h.partition for h in state.halts.values()] == [2], "the halt survives"
    assert "backup->primary" not in state.flows, "the flows into primary stay for its log"
    assert standby.config_drift() is None, "the file equals the moved baseline"
    assert fakes.legacy.marked == []
    standby._round()
    assert fakes.legacy.marked == [("backup", first.event.log_id)], "the old log is told"
    standby._round()
    assert len(fakes.legacy.marked) == 1, "once"


def test_a_target_the_single_log_says_moved_starts_from_the_file_alone(
    standby: Coordinator, fakes: Fakes, leading_config: SrmConfig
) -> None:
    moved = legacy_log(leading_config)
    migrated = apply(moved.state, Envelope(LogMigrated("backup", "L7"), 2000, "c2", offset=99))
    fakes.legacy.migration = Migration(migrated, moved.where)
    standby.replay("http://c1:1")
    standby.lead()
    first = fakes.writer.appended[0].event
    assert isinstance(first, LogStarted) and first.source == "" and first.target == "backup"
    assert standby.state.flow("primary->backup").topics == ("orders",), "the file's list"


def test_a_single_log_that_cannot_be_read_holds_up_the_take_over_not_the_process(
    standby: Coordinator, fakes: Fakes
) -> None:
    fakes.legacy.error = ControlLogError("cannot reach cluster 'primary'")
    standby.replay("http://c1:1")
    standby.lead()
    assert not standby.leading and fakes.writer.appended == []
    fakes.legacy.error = None
    standby._retry_lead_at = 0.0  # the retry interval passed
    standby.lead()
    assert standby.leading and fakes.writer.appended

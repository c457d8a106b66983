"""A driver's lease when the event log cannot be followed (fake topic, no Kafka): junk
changes nothing, a lost or newer log keeps the last assignment and renews the lease only
while no coordinator leads, a restore makes the driver rejoin."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

import pytest
from srm_common.control.events import (
    AssignmentChanged,
    DriverJoined,
    DriverLeft,
    Envelope,
    Event,
    LogStarted,
    PartitionResumeRequested,
)
from srm_common.control.task_configs import task_configs
from srm_common.errors import ControlLogError
from srm_common.testing import FAKE_CONTROL, InMemoryEventLog
from srm_common.tracecontext import TraceContext
from srm_driver.control import ControlLink, LinkPorts
from srm_driver.testing import NoBeats

SETTINGS = FAKE_CONTROL
FLOW = "primary->backup"
TASK = f"{FLOW}|MirrorSourceConnector-0"


def put(topic: InMemoryEventLog, *events: Event) -> None:
    topic.append(*(Envelope(event, 1, "test") for event in events))


def link_on(
    topic: InMemoryEventLog, *, flow_targets: Mapping[str, str] | None = None
) -> tuple[ControlLink, InMemoryEventLog]:
    """A link to backup's log, in memory (``topic.leading``: whether a coordinator leads)."""
    topic.leading = True
    ports = LinkPorts(topic.reader, topic.log_end(), NoBeats())
    link = ControlLink(
        SETTINGS, "d1", "http://d1:1", lambda: (0, frozenset()), ports, flow_targets=flow_targets
    )
    return link, topic


def test_the_lease_is_of_the_logs_flows_only() -> None:
    """A link holds the lease of writing into its log's cluster: its flows, not others."""
    topic = InMemoryEventLog()
    link, _end = link_on(topic, flow_targets={FLOW: "backup"})
    running_log(topic, link)
    follow(link)
    link._confirm()
    assert link.lease_ms(FLOW) > 0 and link.lease_ms() > 0
    assert link.lease_ms("backup->primary") == 0, "a flow into primary: another log's lease"


def test_the_lease_runs_out_lease_ms_after_the_last_confirmation() -> None:
    """The fence of a driver paused or cut off: it may write only ``lease_ms`` after it
    last confirmed its membership, never longer (a woken process must not write into a
    partition whose task moved meanwhile)."""
    link, topic, _end = confirmed_link()
    full = SETTINGS.lease_ms
    assert full - 1000 < link.lease_ms() <= full
    confirmed = link._confirmed_at
    assert confirmed is not None
    link._confirmed_at = confirmed - full / 1000 / 2  # half the lease has passed
    assert full / 2 - 1000 < link.lease_ms() <= full / 2
    link._confirmed_at = confirmed - full / 1000 - 0.001  # all of it
    assert link.lease_ms() == 0 and link.lease_ms(FLOW) == 0


def confirmed_link() -> tuple[ControlLink, InMemoryEventLog, InMemoryEventLog]:
    """A link that has read the running log (d1 holding one task) and confirmed it."""
    topic = InMemoryEventLog()
    link, end = link_on(topic)
    running_log(topic, link)
    follow(link)
    link._confirm()
    return link, topic, end


def follow(link: ControlLink, turns: int = 4) -> None:
    for _ in range(turns):
        try:
            link.follower.step(0)
        except ControlLogError:
            pass  # logged and polled again by the follower's thread


def running_log(topic: InMemoryEventLog, link: ControlLink) -> None:
    """Log L1 in which d1 (this incarnation) holds one source task."""
    put(
        topic,
        LogStarted("L1", None, ""),
        DriverJoined("d1", "http://d1:1", "h", link.instance),
        task_configs(FLOW, 1, ((("orders", 0),),), (), False),
        AssignmentChanged(1, {TASK: "d1"}, ()),
    )


def test_the_lease_is_held_since_the_first_confirmation_of_its_unbroken_run() -> None:
    """What the copy planner trusts to restart a partition where it was acknowledged: a
    confirmation before the last lease ran out continues the run; one after it, or a
    removal from the group, starts it again."""
    link, topic, _end = confirmed_link()
    since = link.lease_held_since(FLOW)
    assert since is not None and since == link._confirmed_at
    link._confirmed_at = since - SETTINGS.lease_ms / 1000 / 2  # renewed within the lease
    link._confirm()
    assert link.lease_held_since(FLOW) == since, "renewed in time: the run goes on"
    link._confirmed_at = since - SETTINGS.lease_ms / 1000 - 0.001  # it ran out
    assert link.lease_held_since(FLOW) is None, "no lease now"
    link._confirm()
    again = link.lease_held_since(FLOW)
    assert again is not None and again > since, "confirmed after it ran out: a new run"
    old = link.instance
    put(topic, DriverLeft("d1", "silent"))
    follow(link)
    assert link.lease_held_since(FLOW) is None and link._held_since is None, "removed"
    # A confirmation the old incarnation began before the removal was folded renews
    # nothing: the new incarnation holds no lease until it is a member and confirms.
    link._renew(again + 1, old)
    assert link.lease_ms(FLOW) == 0 and link.lease_held_since(FLOW) is None
    put(topic, DriverJoined("d1", "http://d1:1", "h", link.instance))
    follow(link)
    link._confirm()
    rejoined = link.lease_held_since(FLOW)
    assert rejoined is not None and rejoined > again, "the new incarnation's own run"


def test_junk_in_the_log_changes_nothing_and_the_lease_is_renewed() -> None:
    topic = InMemoryEventLog()
    link, _end = link_on(topic)
    running_log(topic, link)
    topic.append(b"junk\n")
    follow(link)
    link._confirm()
    assert link.lease_ms() > 0 and link.state.tasks_of("d1") == (TASK,)
    assert link.log_status()["skipped"] == 1


def test_a_lost_log_keeps_the_assignment_and_the_lease_only_while_nobody_leads() -> None:
    link, topic, end = confirmed_link()
    assert link.lease_ms() > 0
    link._confirmed_at = None  # the lease ran out meanwhile

    topic.delete()
    follow(link)
    assert link.log_status()["problem_kind"] == "lost"
    assert link.state.tasks_of("d1") == (TASK,), "the last assignment is kept"
    end.leading = True  # e.g. a coordinator without memory leading a new, empty log
    link._confirm()
    assert link.lease_ms() == 0
    end.leading = False  # every coordinator left the election: nothing moves tasks
    link._confirm()
    assert link.lease_ms() > 0


def test_an_event_of_a_newer_srm_is_treated_as_the_lease_rule_says() -> None:
    topic = InMemoryEventLog()
    link, end = link_on(topic)
    running_log(topic, link)
    newer = {"type": "assignment.changed", "version": 2, "at": 1, "data": {}}
    topic.append(json.dumps(newer).encode())
    follow(link)
    assert link.log_status()["problem_kind"] == "newer"
    end.leading = True  # the newer SRM's leader may move tasks in ways not seen here
    link._confirm()
    assert link.lease_ms() == 0 and link.state.tasks_of("d1") == (TASK,)


def test_a_restored_log_is_taken_up_and_the_driver_rejoins_without_a_lease() -> None:
    link, topic, end = confirmed_link()
    first = link.instance
    topic.recreate()
    put(topic, LogStarted("L2", "L1", "audit export"))
    follow(link, 8)
    assert link.state.log_id == "L2" and link.state.tasks_of("d1") == ()
    assert link.instance != first, "rejoins the restored log as a new incarnation"
    assert link.lease_ms() == 0


TRACE = TraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")


def test_one_line_names_the_trace_when_a_traced_change_gives_this_driver_partitions(
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = InMemoryEventLog()
    link, _end = link_on(topic)
    running_log(topic, link)
    follow(link)
    caplog.set_level(logging.INFO, logger="srm_driver.applied_trace")
    # The command's events: new task configs (the task revoked), then the task back.
    planned = task_configs(FLOW, 2, ((("orders", 0), ("added", 0)),), (), False)
    topic.append(
        Envelope(planned, 2, "coordinator c1", trace=TRACE),
        Envelope(AssignmentChanged(2, {}, (TASK,)), 2, "coordinator c1", trace=TRACE),
    )
    follow(link)
    assert not [r for r in caplog.records if "trace_id=" in r.getMessage()]  # only lost some
    topic.append(Envelope(AssignmentChanged(3, {TASK: "d1"}, ()), 3, "c1", trace=TRACE))
    follow(link)
    lines = [r.getMessage() for r in caplog.records if "trace_id=" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "primary->backup added:0" in lines[0]
    assert lines[0].startswith("driver d1 applies assignment generation 3 (log offset")
    assert lines[0].endswith(f"trace_id={TRACE.trace_id}")


def test_no_trace_line_when_the_change_came_without_a_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = InMemoryEventLog()
    link, _end = link_on(topic)
    caplog.set_level(logging.INFO, logger="srm_driver.applied_trace")
    running_log(topic, link)  # gives d1 orders:0, untraced
    follow(link)
    assert link.state.tasks_of("d1") == (TASK,)
    assert not [r for r in caplog.records if "trace_id=" in r.getMessage()]


def test_a_traced_resume_of_a_partition_copied_here_is_one_line_with_the_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = InMemoryEventLog()
    link, _end = link_on(topic)
    running_log(topic, link)
    follow(link)
    caplog.set_level(logging.INFO, logger="srm_driver.applied_trace")
    for partition in (0, 5):  # 5 is no partition of this driver: nothing to say
        resume = PartitionResumeRequested(
            FLOW, "orders", partition, "copy-end", None, f"r{partition}"
        )
        topic.append(Envelope(resume, 2, "alice", trace=TRACE))
    follow(link)
    lines = [r.getMessage() for r in caplog.records if "trace_id=" in r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"driver d1 applies the resume of {FLOW} orders:0 from copy-end")
    assert lines[0].endswith(f"asked by alice) trace_id={TRACE.trace_id}")


def test_partitions_new_to_a_flow_are_applied_from_its_traced_task_configs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = InMemoryEventLog()
    link, _end = link_on(topic)
    running_log(topic, link)
    follow(link)
    caplog.set_level(logging.INFO, logger="srm_driver.applied_trace")
    # A topic new to the flow joins the running task: no revocation, no new assignment.
    planned = task_configs(FLOW, 2, ((("orders", 0), ("added", 0)),), (), False)
    topic.append(Envelope(planned, 2, "coordinator c1", trace=TRACE))
    follow(link)
    lines = [r.getMessage() for r in caplog.records if "trace_id=" in r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"driver d1 applies task configs generation 2 of {FLOW}")
    assert f"copies 1 more partitions: {FLOW} added:0 trace_id={TRACE.trace_id}" in lines[0]

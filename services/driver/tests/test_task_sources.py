"""When the task sources look at a flow's source again: topics and groups each on their
own interval (fake discovery and clock, no Kafka)."""

from __future__ import annotations

import time

import pytest
from srm_common.config import SrmConfig, parse_yaml_text
from srm_common.config.control import control_plane
from srm_common.control.events import (
    AssignmentChanged,
    DriverJoined,
    Envelope,
    FlowEnabled,
    LogStarted,
)
from srm_common.control.planning import plan_flow_tasks
from srm_common.control.state import ControlState, apply
from srm_common.domain.resume import ResumeMode, ResumePoint
from srm_common.testing import Clock, FakeDiscovery, InMemoryEventLog
from srm_driver.control import LinkPorts
from srm_driver.coordinated_tasks import CoordinatedTaskSource
from srm_driver.static_tasks import StaticTaskSource
from srm_driver.testing import NoBeats

FLOW = "primary->backup"
PARTITIONS = [("orders", 0), ("orders", 1)]


def config_with(*lines: str) -> SrmConfig:
    keys = "".join(f"  {line}\n" for line in lines)
    return parse_yaml_text(
        "clusters:\n"
        '  primary: {bootstrap.servers: "127.0.0.1:9"}\n'
        '  backup: {bootstrap.servers: "127.0.0.1:9"}\n'
        f"replication:\n  tasks.max: 2\n{keys}"
        "flows:\n  primary->backup: {enabled: true}\n"
    )


@pytest.fixture
def discovery() -> FakeDiscovery:
    return FakeDiscovery({FLOW: list(PARTITIONS)}, {FLOW: ["g1"]})


def grow(discovery: FakeDiscovery) -> None:
    """A new partition and a new group appear on the source."""
    discovery.found[FLOW].append(("orders", 2))
    discovery.found_groups[FLOW].append("g2")


def test_standalone_plans_new_groups_on_their_interval_and_new_partitions_on_theirs(
    discovery: FakeDiscovery,
) -> None:
    clock = Clock(1_000)
    config = config_with(
        "refresh.topics.interval.seconds: 60", "refresh.groups.interval.seconds: 5"
    )
    source = StaticTaskSource(config, discovery, clock=clock)  # type: ignore[arg-type]
    first = source.assignment()
    grow(discovery)
    clock.at_ms = 1_000 + 5_000
    groups_due = source.assignment()
    assert groups_due.generation == first.generation + 1, "the new group is planned"
    assert groups_due.source[FLOW] == first.source[FLOW], "no partition moved or was added"
    clock.at_ms = 1_000 + 60_000
    topics_due = source.assignment()
    copied = sorted(tp for task in topics_due.source[FLOW] for tp in task.partitions)
    assert copied == [*PARTITIONS, ("orders", 2)]
    assert source.lease_held_since(FLOW) == 1.0, "a standalone driver's lease never lapses"


class NoLeader:
    """A leader client that no test here sends through (the resume test hands its own)."""

    def start(self) -> None:
        pass

    def post(self, path: str, body: object, on_behalf_of: str | None = None) -> object:
        raise AssertionError(f"unexpected POST {path}")

    def report(self, path: str, body: object) -> None:
        raise AssertionError(f"unexpected report {path}")

    def close(self) -> None:
        pass


def no_leader(_target: str, _leader_url: object) -> NoLeader:
    return NoLeader()


def unstarted() -> LinkPorts:
    raise AssertionError("these sources are never started")


def watching(
    config: SrmConfig, discovery: FakeDiscovery, clock: Clock
) -> tuple[CoordinatedTaskSource, ControlState, list[str]]:
    """A coordinated source whose driver holds the flow's heartbeat task, the state its
    leader planned from the discovery as it is now, and the notices it sends."""
    source = CoordinatedTaskSource(
        config,
        control_plane(config),
        "d1",
        discovery,  # type: ignore[arg-type]
        link_ports=unstarted,
        leader_client=no_leader,  # type: ignore[arg-type]
        clock=clock,
    )
    notices: list[str] = []

    def notify_leader(name: str, reason: str) -> bool:
        notices.append(reason)
        return True

    source.notify_leader = notify_leader  # type: ignore[method-assign]
    partitions, groups = discovery.discover(config.flows[("primary", "backup")], 0)
    tasks = plan_flow_tasks(FLOW, None, partitions, groups, 2, heartbeat=True)
    state = ControlState()
    for event in (FlowEnabled(FLOW), *tasks.to_events()):
        state = apply(state, Envelope(event, 0, "test", offset=state.offset + 1))
    return source, state, notices


def test_a_driver_tells_the_leader_of_new_groups_on_the_groups_interval(
    discovery: FakeDiscovery,
) -> None:
    clock = Clock(1_000)
    config = config_with(
        "refresh.topics.interval.seconds: 60", "refresh.groups.interval.seconds: 5"
    )
    source, state, notices = watching(config, discovery, clock)
    source.source_watch.check(state, FLOW)
    assert notices == [], "the source matches the task configs"
    grow(discovery)
    clock.at_ms = 1_000 + 5_000 - 1
    source.source_watch.check(state, FLOW)
    assert notices == []
    clock.at_ms = 1_000 + 5_000
    source.source_watch.check(state, FLOW)
    assert notices == ["2 groups match, 1 planned"], "partitions are not looked at yet"
    clock.at_ms = 1_000 + 60_000
    source.source_watch.check(state, FLOW)
    assert notices[-1] == "3 partitions match, 2 planned; 2 groups match, 1 planned"


def test_a_driver_never_watches_a_half_whose_refresh_is_switched_off(
    discovery: FakeDiscovery,
) -> None:
    clock = Clock(1_000)
    config = config_with("refresh.topics.enabled: false", "refresh.groups.interval.seconds: 5")
    source, state, notices = watching(config, discovery, clock)
    grow(discovery)
    for at_ms in range(1_000, 100_000, 1_000):
        clock.at_ms = at_ms
        source.source_watch.check(state, FLOW)
    assert set(notices) == {"2 groups match, 1 planned"}


def test_a_resume_asked_on_the_driver_goes_to_the_leaders_command_endpoint(
    discovery: FakeDiscovery,
) -> None:
    """The driver's REST resume forwards to the coordinator's POST /v1/commands/resume
    with the flow and the request id (a retry then applies once), on behalf of the
    principal who asked the driver (the leader records them)."""
    from srm_driver.copying.state import ResumeRequest

    config = config_with()
    source = CoordinatedTaskSource(
        config,
        control_plane(config),
        "d1",
        discovery,  # type: ignore[arg-type]
        link_ports=unstarted,
        leader_client=no_leader,  # type: ignore[arg-type]
    )
    sent: list[tuple[str, dict[str, object]]] = []
    behalf: list[str | None] = []

    class Client:
        def post(
            self, path: str, body: dict[str, object], on_behalf_of: str | None = None
        ) -> tuple[int, dict[str, object]]:
            sent.append((path, body))
            behalf.append(on_behalf_of)
            return 200, {"outcome": "applied"}

    source.clients["backup"] = Client()  # type: ignore[assignment]
    said = source.resume(
        FLOW, ("orders", 1), ResumeRequest("r-1", ResumePoint(ResumeMode.SOURCE_START), by="ops@h")
    )
    assert said == "requested (recorded in the event log)"
    ((path, body),) = sent
    assert path == "/v1/commands/resume" and behalf == ["ops@h"]
    assert body == {
        "flow": FLOW,
        "topic": "orders",
        "partition": 1,
        "mode": "source-start",
        "offset": None,
        "by": "ops@h",
        "request_id": "r-1",
    }


def test_a_driver_of_two_targets_runs_what_each_log_assigns_it_and_reports_each_its_own() -> None:
    """Each target's log assigns the tasks of the flows into it; the driver runs the
    union, and tells each log the generation of that log it applied and only the tasks
    of that log's flows."""
    config = config_with()
    logs = {"backup": InMemoryEventLog(), "primary": InMemoryEventLog()}
    for log in logs.values():
        log.leading = True
    source = CoordinatedTaskSource(
        config,
        control_plane(config),
        "d1",
        FakeDiscovery({}),  # type: ignore[arg-type]
        link_ports=lambda settings: LinkPorts(
            logs[settings.cluster].reader, logs[settings.cluster].log_end(), NoBeats()
        ),
        leader_client=no_leader,  # type: ignore[arg-type]
    )
    applied: dict[str, int | frozenset[str]] = {"number": -1, "running": frozenset()}
    source.start("http://d1:1", lambda: (applied["number"], applied["running"]))  # type: ignore[arg-type, return-value]
    try:
        into_backup = plan_flow_tasks(FLOW, None, PARTITIONS, [], 2, heartbeat=True)
        into_primary = plan_flow_tasks("backup->primary", None, [], [], 1, heartbeat=True)
        for target, tasks, generation in (("backup", into_backup, 3), ("primary", into_primary, 7)):
            link = source.links[target]
            logs[target].append(
                *[
                    Envelope(event, 1, "test")
                    for event in (
                        LogStarted(f"L-{target}", None, "", target),
                        DriverJoined("d1", "http://d1:1", "h", link.instance),
                        *tasks.to_events(),
                        AssignmentChanged(generation, dict.fromkeys(tasks.task_ids(), "d1"), ()),
                    )
                ]
            )
        deadline = time.monotonic() + 10
        while any(link.state.generation == 0 for link in source.links.values()):
            assert time.monotonic() < deadline, "the links follow their logs"
            time.sleep(0.05)
        assignment = source.assignment()
        assert assignment is not None
        assert set(assignment.heartbeats) == {FLOW, "backup->primary"}
        assert source.lease_held_since("nowhere->backup") is None, "no such flow: no lease"
        assert sorted(t.name for t in assignment.source[FLOW]) == [
            f"{FLOW}|MirrorSourceConnector-0",
            f"{FLOW}|MirrorSourceConnector-1",
        ]
        applied["number"] = assignment.generation
        applied["running"] = frozenset(
            [f"{FLOW}|MirrorHeartbeatConnector-0", "backup->primary|MirrorHeartbeatConnector-0"]
        )
        backup_report = source.links["backup"]._report()
        primary_report = source.links["primary"]._report()
        assert backup_report == (3, frozenset([f"{FLOW}|MirrorHeartbeatConnector-0"]))
        assert primary_report == (7, frozenset(["backup->primary|MirrorHeartbeatConnector-0"]))
        assert source.assignment().generation == assignment.generation, "nothing changed"  # type: ignore[union-attr]
    finally:
        source.close()
